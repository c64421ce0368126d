import Foundation
import PipelineTestSupport
import Testing

/// Issue 21, finding 5: what imgpipe prints that came from outside (a server's headers, a
/// file's name, a source list) reaches the terminal escaped and bounded.
@Suite("imgpipe output with outside text", .timeLimit(.minutes(2)))
struct ImgpipeOutsideTextTests {
    /// `Content-Encoding: x\e]0;TITLE\a\e[31m` used to set the terminal's title and colour.
    @Test func aServersEscapeSequencesReachStderrEscaped() async throws {
        try await withFixtureServer { server in
            let url = server.url("/encoded/e?encoding=x%1B%5D0;TITLE%07%1B%5B31m").absoluteString
            let result = try await Imgpipe.run(["fetch", url, "--no-disk-cache"])
            #expect(result.status == 1)
            #expect(!hasRawControl(result.stderr, allowingLineBreaks: true), "\(result.stderr.debugDescription)")
            #expect(result.stderr.contains("x\\u{1B}]0;title\\u{07}\\u{1B}[31m"), "\(result.stderr)")
        }
    }

    /// A file name with a colour sequence, a C1 CSI and a right-to-left override: escaped on
    /// stderr and in `info`'s line; in `--json` the name is whole and the JSON still decodes to it.
    @Test func aHostileFileNameIsEscapedInTextAndExactInJSON() async throws {
        try await withTemporaryDirectory(prefix: "imgpipe-outside") { (directory: URL) async throws in
            let name = "a\u{1B}[31m\u{9B}2J\u{202E}gnp\u{7F}.png"
            let broken = directory.appendingPathComponent("x" + name)
            try Data("not a picture".utf8).write(to: broken)
            let failed = try await Imgpipe.run(["info", broken.path])
            #expect(failed.status == 1)
            #expect(!hasRawControl(failed.stderr, allowingLineBreaks: true), "\(failed.stderr.debugDescription)")
            #expect(failed.stderr.contains("xa\\u{1B}[31m\\u{9B}2J\\u{202E}gnp\\u{7F}.png"), "\(failed.stderr)")

            let picture = directory.appendingPathComponent(name)
            try FileManager.default.copyItem(at: Imgpipe.samples.appendingPathComponent("glass-alpha.png"), to: picture)
            let line = try await Imgpipe.run(["info", picture.path])
            #expect(line.status == 0 && !hasRawControl(line.stdout, allowingLineBreaks: true), "\(line.stdout.debugDescription)")
            let json = try await Imgpipe.run(["info", "--json", picture.path])
            #expect(json.status == 0 && !hasRawControl(json.stdout, allowingLineBreaks: true), "\(json.stdout.debugDescription)")
            let rows = try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [[String: Any]]
            #expect(rows?.first?["source"] as? String == picture.path)
        }
    }

    /// A source of 100,000 characters (one `data:` URL is 13 MB) used to make an error line as long.
    @Test func aHugeSourceGivesABoundedErrorLine() async throws {
        let source = "/no/such/" + String(repeating: "d", count: 100_000)
        let result = try await Imgpipe.run(["info", source])
        #expect(result.status == 1)
        // "imgpipe: SOURCE: cannot read SOURCE: File name too long", each SOURCE cut to its start and length.
        #expect(result.stderr.count < 2 * 200 + 100, "\(result.stderr.count) characters")
        #expect(result.stderr.hasPrefix("imgpipe: /no/such/ddd") && result.stderr.contains("ddd… (100,009 characters)"),
                "\(result.stderr.prefix(300))")
    }
}
