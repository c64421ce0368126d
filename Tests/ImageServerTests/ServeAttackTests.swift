import Foundation
import ImagePipelineKit
import PipelineCore
import PipelineTestSupport
import Synchronization
import Testing

@testable import ImageServer

/// A loader for `http`/`https` that records every URL it is asked for and has none of them.
private final class RecordingLoader: DataLoading {
    let asked = Mutex<[URL]>([])
    var schemes: Set<String> { ["http", "https"] }

    func load(_ request: DataLoadRequest) async throws -> DataLoadResult {
        asked.withLock { $0.append(request.url) }
        throw ImagePipelineError.notFound(request.url)
    }
}

/// What a hostile client tried against the handler, each kept as a regression test.
@Suite("ImageServer under attack")
struct ServeAttackTests {
    private static func server(allowedSources: [String] = [], log: (@Sendable (String) -> Void)? = nil) -> (ImageServer, RecordingLoader) {
        let loader = RecordingLoader()
        var configuration = ImageServer.Configuration(pipeline: makePipeline(loader: loader, decoders: RenderFixture.decoders),
                                                      encoders: .standard)
        configuration.allowedSources = allowedSources
        configuration.accessLog = log
        configuration.timeout = 300  // no deadline a starved test machine reaches
        return (ImageServer(configuration: configuration), loader)
    }

    @Test(arguments: [
        // A user name that is the allowed host, then another host.
        "http://allowed.test@evil.test/a.png", "http://allowed.test:80@evil.test/a.png", "http://allowed.test\\@evil.test/a.png",
        "http://allowed.test @evil.test/a.png", "http://allowed.test\t@evil.test/a.png",
        // The allowed host as the start of another host or with another port.
        "http://allowed.test.evil.test/a.png", "http://allowed.test:8080/a.png", "http://allowed.testevil/a.png",
        // Dot segments that curl (or the origin) resolves out of the allowed folder.
        "http://allowed.test/public/../private/a.png", "http://allowed.test/public/%2e%2e/private/a.png",
        "http://allowed.test/public/%2E./private/a.png", "http://allowed.test/public/..%2Fprivate/a.png",
        "http://allowed.test/public/x/..%5c..%5cprivate/a.png", "http://allowed.test/public\\..\\private/a.png",
    ])
    func aSourceThatOnlyLooksAllowedIsRefusedBeforeAnythingIsFetched(_ source: String) async throws {
        let (server, loader) = Self.server(allowedSources: ["http://allowed.test", "http://allowed.test/public/"])
        let encoded = Base64URL.encoded(Array(source.utf8))
        let response = await server.respond(to: ServerRequest(path: "/insecure/rs:fit:10:10/\(encoded).png"))
        #expect(response.status == 403)
        #expect(String(decoding: response.body, as: UTF8.self).contains("not under the allowed sources"))
        #expect(loader.asked.withLock { $0 }.isEmpty, "fetched \(loader.asked.withLock { $0 })")
    }

    @Test func sourcesUnderAnAllowedPrefixStillReachTheLoader() async throws {
        let (server, loader) = Self.server(allowedSources: ["http://allowed.test", "HTTPS://Other.test/public/"])
        for source in ["http://allowed.test/a.png", "http://allowed.test", "HTTP://ALLOWED.test/x/y.png?v=1", "https://other.test/public/a.png"] {
            let response = await server.respond(to: ServerRequest(path: "/insecure/\(Base64URL.encoded(Array(source.utf8)))"))
            #expect(response.status == 404, "\(source): \(String(decoding: response.body, as: UTF8.self))")
        }
        #expect(loader.asked.withLock { $0.count } == 4)
    }

    @Test func aRawSpaceInThePathAddsNoFieldToTheAccessLog() async throws {
        let lines = Mutex<[String]>([])
        let (server, _) = Self.server(log: { line in lines.withLock { $0.append(line) } })
        _ = await server.respond(to: ServerRequest(path: "/x 200 1B 0.1ms\u{3000}y"))
        let line = try #require(lines.withLock { $0.first })
        // Six fields, then the client's Accept, last (it may hold spaces of its own).
        let fields = line.split(separator: " ", maxSplits: 6)
        #expect(fields.count == 7 && fields[6] == "accept=-", "\(line)")
        #expect(fields[2] == "/x%20200%201B%200.1ms%E3%80%80y")
        #expect(fields[3] == "400")
    }

    private static func options(_ text: String) throws -> RenderOptions {
        try ImgproxyURL.parse("/insecure/\(text)/plain/local:///a.png", signing: URLSigning(), presets: Presets()).options
    }

    @Test(arguments: [("rs:force:16384:1/el:1", PixelSize(width: 480, height: 320)),
                      ("c:100:100/rs:fit:2000:2000/el:1", PixelSize(width: 480, height: 320)),
                      ("rs:force:100:20", PixelSize(width: 100, height: 67))])
    func anEnlargementIsDecodedNoLargerThanItsSource(_ text: String, _ decoded: PixelSize) throws {
        let options = try Self.options(text)
        let plan = RenderPlan(source: PixelSize(width: 480, height: 320), options: options)
        var request = ImageRequest(url: try #require(URL(string: "local:///a.png")), decoding: .strict)
        Renderer.configureGeometry(&request, plan: plan, options: options)
        #expect(request.targetSize == .pixels(decoded))
    }

    @Test func aForcedStripAndACroppedEnlargementComeOutAtTheirSize() async throws {
        for (text, size) in [("rs:force:4000:1/el:1", PixelSize(width: 4000, height: 1)),
                             ("c:100:100/rs:fit:1000:1000/el:1", PixelSize(width: 1000, height: 1000))] {
            let rendered = try await RenderFixture.render(try Self.options(text), RenderFixture.sample("aurora.png"))
            #expect(try RenderFixture.decode(rendered.data).bitmap.size == size, "\(text)")
        }
    }

    /// Enlarged and cropped animations, whose geometry now runs on the encode pool (frames decoded
    /// at their own size), keep every frame at the planned size.
    @Test func anEnlargedOrCroppedAnimationKeepsItsFramesAtThePlannedSize() async throws {
        for (text, size) in [("rs:fit:300:300/el:1", PixelSize(width: 300, height: 300)),
                             ("c:48:48/rs:fill:120:80/el:1", PixelSize(width: 120, height: 80)),
                             ("rs:fit:40:40/pd:5", PixelSize(width: 50, height: 50))] {
            let rendered = try await RenderFixture.render(try Self.options(text), RenderFixture.sample("orbit.gif"), format: .gif)
            #expect(try RendererOutputTests.frameCount(rendered.data) == 16, "\(text)")
            #expect(try RenderFixture.decode(rendered.data).bitmap.size == size, "\(text)")
        }
    }
}
