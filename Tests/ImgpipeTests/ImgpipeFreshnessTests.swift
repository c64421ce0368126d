import Foundation
import PipelineTestSupport
import Testing

/// Issue 23, across real processes: Python's `http.server` sends only `Last-Modified` (the
/// file's mtime) and `Date`. A second `imgpipe fetch` with the same `--cache-dir` makes no
/// request for files unchanged for a month (fresh for three days by the heuristic), and
/// revalidates files changed just now (fresh for a tenth of their age: nothing).
@Suite("imgpipe: a second process against a Last-Modified-only origin", .timeLimit(.minutes(2)))
struct ImgpipeFreshnessTests {
    @Test func aSecondProcessAsksNothingForFilesUnchangedForAMonth() async throws {
        try await withTemporaryDirectory(prefix: "imgpipe-tests") { (directory: URL) async throws in
            let www = directory.appendingPathComponent("www")
            try FileManager.default.createDirectory(at: www, withIntermediateDirectories: true)
            let month = Date().addingTimeInterval(-30 * 86_400)
            for (name, modified) in [("old.jpg", month), ("old.png", month), ("new.jpg", Date()), ("new.png", Date())] {
                let source = Imgpipe.samples.appendingPathComponent(name.hasSuffix("jpg") ? "mandelbrot.jpg" : "glass-alpha.png")
                let copy = www.appendingPathComponent(name)
                try FileManager.default.copyItem(at: source, to: copy)
                try FileManager.default.setAttributes([.modificationDate: modified], ofItemAtPath: copy.path)
            }
            let log = directory.appendingPathComponent("requests.log")
            let server = try StaticServer(directory: www, requestLog: log)
            defer { server.stop() }
            let cache = directory.appendingPathComponent("cache").path
            func requests() -> [String] {
                ((try? String(contentsOf: log, encoding: .utf8)) ?? "").split(separator: "\n").map(String.init)
            }
            func fetch(_ names: [String]) async throws -> [String] {
                let result = try await Imgpipe.run(["fetch"] + names.map { server.url($0) } + ["--cache-dir", cache])
                #expect(result.status == 0, "\(result.stderr)")
                return result.stdout.split(separator: "\n").map(String.init)
            }

            let first = try await fetch(["old.jpg", "old.png"])
            #expect(first.count == 2 && first.allSatisfy { $0.contains("  network  ") }, "\(first)")
            #expect(requests().count == 2)
            let second = try await fetch(["old.jpg", "old.png"])
            #expect(second.count == 2 && second.allSatisfy { $0.contains("  disk  ") }, "\(second)")
            #expect(requests().count == 2, "\(requests())")  // not one request more

            // Changed just now: stale at once, served from disk and revalidated (two 304s). Touched
            // here, not at the start: on a starved machine the fetches above once took 30 s, and
            // a file 30 s old is fresh for 3 s by the heuristic.
            for name in ["new.jpg", "new.png"] {
                try FileManager.default.setAttributes([.modificationDate: Date()], ofItemAtPath: www.appendingPathComponent(name).path)
            }
            _ = try await fetch(["new.jpg", "new.png"])
            let again = try await fetch(["new.jpg", "new.png"])
            #expect(again.allSatisfy { $0.contains("  disk  ") }, "\(again)")
            let last = requests().suffix(2)
            #expect(requests().count == 6 && last.allSatisfy { $0.contains("\" 304 ") }, "\(requests())")
        }
    }
}
