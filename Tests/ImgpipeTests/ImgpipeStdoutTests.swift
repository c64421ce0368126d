import Foundation
import PipelineTestSupport
import Testing

/// `--out -` writes the picture, and nothing else, to standard output in `--format`'s format.
@Suite("imgpipe --out - (stdout)", .timeLimit(.minutes(2)))
struct ImgpipeStdoutTests {
    /// Runs imgpipe through `sh` with stdout redirected to `file`, so the bytes are kept exactly.
    static func run(_ arguments: [String], stdoutTo file: URL) async throws -> Imgpipe.Result {
        try await Imgpipe.run(["-c", "\"$0\" \"$@\" > \"$OUT\"", Imgpipe.binary.path] + arguments,
                              executable: URL(fileURLWithPath: "/bin/sh"), environment: ["OUT": file.path])
    }

    @Test(arguments: [["thumb", "-s", "64", "--verbose"], ["convert"]])
    func stdoutHoldsTheSamePictureAsAFile(_ command: [String]) async throws {
        try await withTemporaryDirectory(prefix: "imgpipe-stdout") { (directory: URL) async throws in
            let source = Imgpipe.samples.appendingPathComponent("rings.png").path
            let piped = directory.appendingPathComponent("piped.pam"), file = directory.appendingPathComponent("file.pam")
            let viaStdout = try await Self.run([command[0], source] + command.dropFirst() + ["-o", "-", "--format", "pam"],
                                               stdoutTo: piped)
            try #require(viaStdout.status == 0, "\(viaStdout.stderr)")
            let written = try await Imgpipe.run([command[0], source] + command.dropFirst() + ["-o", file.path])
            try #require(written.status == 0, "\(written.stderr)")
            let bytes = try Data(contentsOf: piped)
            #expect(bytes.starts(with: Data("P7\n".utf8)), "stdout starts with the picture: nothing printed before it")
            #expect(bytes == (try Data(contentsOf: file)), "the same bytes as the file, nothing after them")
            if command.contains("--verbose") { #expect(viaStdout.stderr.contains("wrote -"), "the note went to stderr") }
        }
    }

    @Test func stdoutNeedsAFormat() async throws {
        let result = try await Imgpipe.run(["convert", "a.png", "-o", "-"])
        #expect(result.status == 2)
        #expect(result.stderr.contains("--out - writes to stdout: give --format"), "\(result.stderr)")
    }
}
