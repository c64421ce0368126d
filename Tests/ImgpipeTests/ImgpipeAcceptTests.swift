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
    @Test func imgpipeSendsTheAcceptHeaderOfItsDecoders() async throws {
        let accept = DecoderRegistry.standard.acceptHeader()
        let value = try #require(accept.addingPercentEncoding(withAllowedCharacters: .alphanumerics))
        try await withFixtureServer { server in
            let url = server.url("/header/imgpipe?name=Accept&value=" + value)
            let run = try await Imgpipe.run(["fetch", "--no-disk-cache", url.absoluteString])
            // The body is the fixture's test format, which imgpipe does not decode: the run fails
            // after the download. What matters is the status the server sent.
            #expect(run.status != 0)
            #expect(try await server.stats().statuses["/header/imgpipe"] == [200], "Accept: \(accept)")
        }
    }
}
