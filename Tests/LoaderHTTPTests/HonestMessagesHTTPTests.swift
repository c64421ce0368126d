import Foundation
import LoaderHTTP
import PipelineCore
import PipelineTestSupport
import Testing

/// What a caller reads when an HTTP picture fails, against the fixture server on loopback: the
/// URL it asked for, the status, the URL the builder fetched, and words for what came back.
@Suite("Messages over HTTP", .timeLimit(.minutes(2)))
struct HonestMessagesHTTPTests {
    @Test func aNotFoundNamesTheURLAskedForItsStatusAndTheURLFetched() async throws {
        try await withFixtureServer { server in
            let pipeline = makePipeline(loader: HTTPDataLoader(), decoders: fixtureDecoders, urlBuilder: WidthBucketURLBuilder(),
                                        negativeCacheLifetime: 0)
            let url = server.url("/status/404")
            let fetched = URL(string: url.absoluteString + "?w=320")!
            let error = try await #require(throws: ImagePipelineError.self) {
                try await pipeline.image(for: ImageRequest(url: url, width: 300, height: 300))
            }
            #expect(error.url == url)
            #expect(error.description == "\(url.absoluteString) was not found (HTTP 404; fetched as \(fetched.absoluteString))")
            #expect(error.underlyingError as? ImagePipelineError == .notFound(fetched, status: 404))
            #expect(error.isPermanent)
            // Without a builder's variant the URL is named once.
            let plain = makePipeline(loader: HTTPDataLoader(), decoders: fixtureDecoders, negativeCacheLifetime: 0)
            let direct = try await #require(throws: ImagePipelineError.self) { try await plain.image(for: ImageRequest(url: url)) }
            #expect(direct.description == "\(url.absoluteString) was not found (HTTP 404)")
        }
    }

    @Test func anHTMLPageIsNotAPicture() async throws {
        try await withFixtureServer { server in
            let pipeline = makePipeline(loader: HTTPDataLoader(), decoders: fixtureDecoders, negativeCacheLifetime: 0)
            let url = server.url("/html/h")
            let error = try await #require(throws: ImagePipelineError.self) { try await pipeline.image(for: ImageRequest(url: url)) }
            #expect(error.description == "cannot load \(url.absoluteString): the server sent text/html, not a picture")
            #expect(error.underlyingError as? HTTPError == .notAPicture(contentType: "text/html"))
        }
    }

    @Test func anHTTPAnswerIsReportedAsNetwork() async throws {
        try await withFixtureServer { server in
            let pipeline = makePipeline(loader: HTTPDataLoader(), decoders: fixtureDecoders, negativeCacheLifetime: 0)
            let response = try await pipeline.image(for: ImageRequest(url: server.url("/image/labelled")))
            #expect(response.source == .network)
        }
    }
}
