import Foundation
import ImagePipelineKit
@testable import ImageServer
import PipelineCore
import PipelineTestSupport
import Testing

/// The renderer against a real HTTP origin (the fixture server on 127.0.0.1, serving the test
/// format `timg`): how origin failures map to statuses, and one origin fetch per render when
/// the pipeline has a disk cache.
@Suite("Renderer origin", .timeLimit(.minutes(2)))
struct RendererOriginTests {
    static func renderer(diskCache: (any DataCaching)? = nil, totalTimeout: TimeInterval = 30) -> Renderer {
        var http = HTTPDataLoader.Configuration()
        http.totalTimeout = totalTimeout
        http.maxRetries = 0
        let decoders = RenderFixture.decoders.registering(TestImageDecoder())
        let pipeline = makePipeline(loader: HTTPDataLoader(configuration: http), decoders: decoders, diskCache: diskCache)
        return Renderer(pipeline: pipeline, encoders: .standard)
    }

    static func status(_ renderer: Renderer, _ url: URL) async -> ServerError.Kind? {
        await RenderFixture.failure { () async throws(ServerError) in
            try await renderer.render(RenderOptions(), source: url, choice: OutputChoice(explicit: .png, accepted: []))
        }?.kind
    }

    @Test func originFailuresMapToStatuses() async throws {
        try await withFixtureServer { server in
            let renderer = Self.renderer()
            #expect(await Self.status(renderer, server.url("/status/404")) == .notFound)
            #expect(await Self.status(renderer, server.url("/status/410")) == .notFound)
            #expect(await Self.status(renderer, server.url("/status/403")) == .forbidden)
            #expect(await Self.status(renderer, server.url("/status/500")) == .badGateway)
            #expect(await Self.status(renderer, server.url("/status/502")) == .badGateway)
            #expect(await Self.status(renderer, server.url("/html/page")) == .unprocessable)
            #expect(await Self.status(renderer, server.url("/image/fine")) == nil)
            let slow = Self.renderer(totalTimeout: 0.3)
            #expect(await Self.status(slow, server.url("/delay/slow?ms=3000")) == .timeout)
        }
    }

    /// With a disk cache the header read and the decode share one download, and the response
    /// carries the origin's ETag as the source's validator.
    @Test func oneOriginFetchPerRenderWithTheDiskCache() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("renderer-origin-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: folder) }
        try await withFixtureServer { server in
            let renderer = Self.renderer(diskCache: try DiskCache(directory: folder))
            let image = try await renderer.render(RenderOptions(), source: server.url("/image/once"),
                                                  choice: OutputChoice(explicit: .png, accepted: []))
            #expect(try RenderFixture.decode(image.data).bitmap.size == PixelSize(width: 4, height: 3))
            #expect(try await server.hits("/image/once") == 1)
            #expect(image.sourceValidator == "\"once-2000\"")
        }
    }
}
