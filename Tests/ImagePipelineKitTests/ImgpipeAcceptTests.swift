import Foundation
import ImagePipelineKit
import PipelineCore
import PipelineTestSupport
import Testing

/// imgpipe derives its `Accept` header from its decoders (`DecoderRegistry.acceptHeader()`),
/// the same registrations as the kit's: the fixture server answers `/header/…` with 200 only
/// when the header is exactly that value, and 400 otherwise.
@Suite("imgpipe Accept header", .timeLimit(.minutes(2)))
struct ImgpipeAcceptTests {
    static let binary: URL = {
        let directory = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
        return [directory, directory.deletingLastPathComponent()].map { $0.appendingPathComponent("imgpipe") }
            .first { FileManager.default.isExecutableFile(atPath: $0.path) } ?? directory.appendingPathComponent("imgpipe")
    }()

    @Test func imgpipeSendsTheAcceptHeaderOfItsDecoders() async throws {
        let accept = DecoderRegistry.standard.acceptHeader()
        let value = try #require(accept.addingPercentEncoding(withAllowedCharacters: .alphanumerics))
        try await withFixtureServer { server in
            let url = server.url("/header/imgpipe?name=Accept&value=" + value)
            let status = try await Self.run([Self.binary.path, "fetch", "--no-disk-cache", url.absoluteString])
            // The body is the fixture's test format, which imgpipe does not decode: the run fails
            // after the download. What matters is the status the server sent.
            #expect(status != 0)
            #expect(try await server.stats().statuses["/header/imgpipe"] == [200], "Accept: \(accept)")
        }
    }

    /// Runs `arguments` on a thread of its own (waiting blocks), output discarded; the exit status.
    static func run(_ arguments: [String]) async throws -> Int32 {
        try await withCheckedThrowingContinuation { continuation in
            Thread {
                continuation.resume(with: Result {
                    let process = Process()
                    process.executableURL = URL(fileURLWithPath: arguments[0])
                    process.arguments = Array(arguments.dropFirst())
                    process.standardOutput = FileHandle.nullDevice
                    process.standardError = FileHandle.nullDevice
                    try process.run()
                    process.waitUntilExit()
                    return process.terminationStatus
                })
            }.start()
        }
    }
}
