import Foundation
import LoaderHTTP
import PipelineCore
import PipelineTestSupport
import Testing

/// Issue 21, finding 5: a server's header value reached stderr raw (`Content-Encoding:
/// x\e]0;TITLE\a\e[31m` set the terminal's title and colour), and a refused redirect printed
/// its whole `Location`.
@Suite("HTTP error messages with a server's text")
struct MessageEscapingTests {
    @Test func aCodingWithEscapesIsShownEscaped() {
        let text = HTTPError.unsupportedEncoding("x\u{1B}]0;T\u{07}").description
        #expect(!hasRawControl(text), "\(text.debugDescription)")
        #expect(text.hasSuffix(": x\\u{1B}]0;T\\u{07}"), "\(text)")
    }

    @Test func serverTextInEveryMessageIsEscapedAndBounded() {
        let hostile = "\u{1B}[2J" + String(repeating: "L", count: 300_000)
        for error in [HTTPError.network(.forbiddenRedirect, message: "a redirect was refused: ftp://h/" + hostile),
                      .corruptEncoding(message: hostile), .engineFailure(message: hostile), .unsupportedEncoding(hostile)] {
            let text = error.description
            #expect(!hasRawControl(text) && text.contains("\\u{1B}[2J"), "\(text.prefix(200))")
            #expect(text.count < 600, "\(text.count) characters")
        }
    }

    /// The loopback case: the fixture server sends that `Content-Encoding`.
    @Test func aHostileContentEncodingReachesTheDescriptionEscaped() async throws {
        try await withFixtureServer { server in
            let pipeline = makePipeline(loader: HTTPDataLoader(configuration: .init(maxRetries: 0)), decoders: fixtureDecoders,
                                        negativeCacheLifetime: 0)
            let url = server.url("/encoded/e?encoding=x%1B%5D0;TITLE%07%1B%5B31m")
            do {
                _ = try await pipeline.image(for: ImageRequest(url: url))
                Issue.record("loaded a body in an unknown coding")
            } catch {
                guard case .unsupportedEncoding? = (error as? ImagePipelineError)?.underlyingError as? HTTPError else {
                    Issue.record("got \(error)")
                    return
                }
                let text = "\(error)"
                #expect(!hasRawControl(text), "\(text.debugDescription)")
                #expect(text.contains("x\\u{1B}]0;title\\u{07}\\u{1B}[31m"), "\(text)")
            }
        }
    }
}
