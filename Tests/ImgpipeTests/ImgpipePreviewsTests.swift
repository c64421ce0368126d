import Foundation
import PipelineTestSupport
import Testing

/// `thumb --previews-dir` against the loopback fixture server sending a progressive JPEG slowly:
/// each preview the task delivered is a PNG in the folder, numbered in order, written before the
/// final thumbnail.
@Suite("imgpipe thumb --previews-dir", .timeLimit(.minutes(2)))
struct ImgpipePreviewsTests {
    @Test func eachPreviewIsWrittenBeforeTheFinal() async throws {
        try await withTemporaryDirectory { directory in
            try await withFixtureServer { server in
                let source = Imgpipe.samples.appendingPathComponent("dunes-progressive.jpg").path
                // 1,000 bytes every 150 ms: about 1.5 s in all, against previews at most every 0.2 s.
                let url = server.url("/slow/dunes?file=\(source)&chunk=1000&interval_ms=150").absoluteString
                let previews = directory.appendingPathComponent("previews")
                let out = directory.appendingPathComponent("dunes.png")
                let run = try await Imgpipe.run(["thumb", url, "--size", "120", "--out", out.path, "--previews-dir", previews.path,
                                                 "--no-disk-cache", "--verbose"])
                #expect(run.status == 0, "\(run.stderr)")
                let names = try FileManager.default.contentsOfDirectory(atPath: previews.path).sorted()
                print("previews written: \(names)")
                #expect(!names.isEmpty, "a progressive JPEG arriving over 1.5 s gives previews")
                #expect(names == (1...names.count).map { String(format: "preview-%02d.png", $0) })
                let finalDate = try #require(try FileManager.default.attributesOfItem(atPath: out.path)[.modificationDate] as? Date)
                for name in names {
                    let path = previews.appendingPathComponent(name).path
                    let date = try #require(try FileManager.default.attributesOfItem(atPath: path)[.modificationDate] as? Date)
                    #expect(date <= finalDate, "\(name) was written before the final")
                    let info = try await Imgpipe.run(["info", path])
                    #expect(info.status == 0 && info.stdout.contains("PNG"), "\(info.stdout) \(info.stderr)")
                }
                #expect(run.stdout.contains("preview 1:"), "\(run.stdout)")
            }
        }
    }

    @Test func previewsDirGoesWithOutOnly() async throws {
        let run = try await Imgpipe.run(["thumb", "/nonexistent.jpg", "--size", "10", "--out-dir", "/tmp/x", "--previews-dir", "/tmp/y"])
        #expect(run.status == 2)
        #expect(run.stderr.contains("--previews-dir goes with --out FILE"), "\(run.stderr)")
    }
}
