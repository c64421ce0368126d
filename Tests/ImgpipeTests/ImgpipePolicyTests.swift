import Foundation
import PipelineTestSupport
import Testing

/// `--public-only` and `--allow-host` against the loopback fixture server: a refused source is
/// never requested (the server's hit count stays 0), and the message names the address or host
/// and the rule.
@Suite("imgpipe connection policy options", .timeLimit(.minutes(2)))
struct ImgpipePolicyTests {
    @Test func publicOnlyRefusesLoopbackWithoutSendingARequest() async throws {
        try await withFixtureServer { server in
            let url = "http://localhost:\(server.port)/image/public-only"
            let run = try await Imgpipe.run(["fetch", "--no-disk-cache", "--public-only", url])
            #expect(run.status == 1)
            #expect(run.stderr.contains("(loopback) for \(url): only public addresses are allowed"), "\(run.stderr)")
            let hits = try await server.hits("/image/public-only")
            #expect(hits == 0)
        }
    }

    @Test func allowHostRefusesARedirectToAnotherHostAndIsRepeatable() async throws {
        try await withFixtureServer { server in
            let target = server.url("/image/elsewhere").absoluteString  // the same server, named 127.0.0.1
            let start = "http://localhost:\(server.port)/goto/allow?url=\(target)"
            let refused = try await Imgpipe.run(["fetch", "--no-disk-cache", "--allow-host", "localhost", start])
            #expect(refused.status == 1)
            #expect(refused.stderr.contains("refused the host 127.0.0.1 for \(target): it is not among the allowed hosts"), "\(refused.stderr)")
            let elsewhere = try await server.hits("/image/elsewhere")
            #expect(elsewhere == 0)

            // Both hosts listed: the redirect is followed. (The body is the fixture's own format,
            // which imgpipe does not decode: the run fails after the download.)
            let both = try await Imgpipe.run(["fetch", "--no-disk-cache", "--allow-host", "localhost", "--allow-host", "127.0.0.1", start])
            #expect(!both.stderr.contains("refused"), "\(both.stderr)")
            let followed = try await server.hits("/image/elsewhere")
            #expect(followed == 1)
        }
    }
}
