import Foundation
import PipelineTestSupport
import Testing

/// `./scripts/demo`'s steps against its CDN fixture (loopback, ephemeral port): the story the
/// README's first command tells must stay true.
@Suite("imgpipe demo", .timeLimit(.minutes(3)))
struct ImgpipeDemoTests {
    /// The demo as `./scripts/demo` runs it, with this build's imgpipe: every step keeps its
    /// promise (the script exits 0), the new process and the offline one download nothing and the
    /// CDN sees no request from the new process, and the sheet is written.
    @Test func everyStepOfTheDemoDoesWhatItShows() async throws {
        try await withTemporaryDirectory(prefix: "ImgpipeDemoTests") { folder in
            let sheet = folder.appendingPathComponent("sheet.png")
            let result = try await Imgpipe.run(["--out", sheet.path], timeout: 160,
                                               executable: Imgpipe.root.appendingPathComponent("scripts/demo"),
                                               environment: ["IMGPIPE": Imgpipe.binary.path])
            #expect(result.status == 0, "\(result.stdout)\n\(result.stderr)")
            // step, process, callers, answered from…, downloads, CDN saw, time, "ms"
            var rows: [String: [String]] = [:]
            for line in result.stdout.split(separator: "\n") {
                let cells = line.split(separator: " ").map(String.init)
                if let step = cells.first, cells.count >= 7 { rows[step] = cells }
            }
            let samples = try FileManager.default.contentsOfDirectory(atPath: Imgpipe.samples.path).filter { !$0.hasPrefix(".") }.count
            func downloadsAndRequests(_ step: String) -> [String] { rows[step].map { Array($0.suffix(4).prefix(2)) } ?? [] }
            #expect(downloadsAndRequests("network") == ["\(samples)", "\(samples)"], "\(result.stdout)")
            #expect(downloadsAndRequests("memory") == ["0", "0"], "\(result.stdout)")
            #expect(downloadsAndRequests("coalesce") == ["1", "1"], "\(result.stdout)")
            #expect(rows["coalesce"]?[2] == "20", "\(result.stdout)")
            #expect(downloadsAndRequests("disk") == ["0", "0"], "\(result.stdout)")
            #expect(downloadsAndRequests("offline") == ["0", "stopped"], "\(result.stdout)")
            #expect(downloadsAndRequests("round") == ["0", "stopped"], "\(result.stdout)")
            #expect(rows["disk"]?[1] == "2" && rows["offline"]?[1] == "3", "three processes: \(result.stdout)")
            #expect(FileManager.default.fileExists(atPath: sheet.path))
        }
    }

    /// What the demo's checks rest on: a `disk` step over an empty cache has to download, and
    /// fails (exit 1) saying so, instead of printing a table that only looks right.
    @Test func aStepThatBreaksItsPromiseFailsTheDemo() async throws {
        try await withTemporaryDirectory(prefix: "ImgpipeDemoTests") { folder in
            let fixture = try CDNFixture(counts: folder.appendingPathComponent("requests.json"))
            defer { fixture.stop() }
            let result = try await Imgpipe.run(["demo", "disk", "--origin", fixture.origin, "--state", folder.path])
            let samples = try FileManager.default.contentsOfDirectory(atPath: Imgpipe.samples.path).filter { !$0.hasPrefix(".") }.count
            #expect(result.status == 1, "\(result.stdout)\n\(result.stderr)")
            #expect(result.stderr == "imgpipe: demo step 'disk': expected no download, the pipeline made \(samples)\n")
        }
    }

    @Test(arguments: [
        (["demo", "bogus", "--origin", "http://127.0.0.1:1", "--state", "s"], "unknown demo step 'bogus'"),
        (["demo", "network", "--state", "s"], "'imgpipe demo' needs --origin URL"),
        (["demo", "network", "--origin", "http://127.0.0.1:1"], "'imgpipe demo' needs --state DIR"),
        (["demo", "network", "--origin", "ftp://x", "--state", "s"], "--origin needs an http(s) URL, got 'ftp://x'"),
        (["demo", "sheet", "--state", "s"], "'imgpipe demo' needs --out FILE"),
    ] as [([String], String)])
    func demoUsageErrorsExitTwo(arguments: [String], message: String) async throws {
        let result = try await Imgpipe.run(arguments)
        #expect(result.status == 2)
        #expect(result.stderr.contains(message), "\(result.stderr)")
    }
}
