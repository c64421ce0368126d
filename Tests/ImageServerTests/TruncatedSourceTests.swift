import Foundation
import ImagePipelineKit
import PipelineCore
import PipelineTestSupport
import Testing

@testable import ImageServer

/// A source whose file is cut short (issue 41): the server answers 422 naming the truncation,
/// and nothing of it is kept, not the picture in memory, not its bytes in the pipeline's data
/// cache, not a result in the result store, so a repeat fetches the source again.
@Suite("ImageServer and truncated sources", .tags(.cpuBound))
struct TruncatedSourceTests {
    static let source = "http://origin.test/cut.jpg"

    /// A server whose origin serves `data` for every URL, fresh for an hour (no revalidation
    /// makes a load of its own), and the stores to look into.
    static func server(_ data: Data) -> (ImageServer, HeldLoader, MemoryCache<ImageKey, ImageContainer>, InMemoryDataCache, InMemoryDataCache) {
        let loader = HeldLoader(schemes: ["http"]) { _ in .success(.data(data, ResponseMetadata(freshFor: 3600, origin: .network))) }
        let memory = MemoryCache<ImageKey, ImageContainer>(costLimit: 64 << 20)
        let disk = InMemoryDataCache(), results = InMemoryDataCache()
        let pipeline = makePipeline(loader: loader, decoders: RenderFixture.decoders, memoryCache: memory, diskCache: disk,
                                    negativeCacheLifetime: 600)
        var configuration = ImageServer.Configuration(pipeline: pipeline, encoders: .standard)
        configuration.resultCache = results
        configuration.timeout = 300  // no deadline a starved test machine reaches
        return (ImageServer(configuration: configuration), loader, memory, disk, results)
    }

    static var path: String { "/insecure/rs:fit:32:32/\(Base64URL.encoded(Array(source.utf8))).png" }

    @Test(arguments: ["mandelbrot.jpg", "dunes-progressive.jpg", "aurora.png", "glass-alpha.webp", "orbit.gif"])
    func aTruncatedSourceFailsAndIsNeverCached(_ name: String) async throws {
        let whole = try Data(contentsOf: RenderFixture.sample(name))
        let (server, loader, memory, disk, results) = Self.server(whole.prefix(whole.count / 2))
        let response = await server.respond(to: ServerRequest(path: Self.path))
        let body = String(decoding: response.body, as: UTF8.self)
        #expect(response.status == 422, "\(name): \(response.status) \(body)")
        #expect(body.hasPrefix("source is truncated"), "\(name): \(body)")
        #expect(memory.count == 0, "\(name): the memory cache kept the picture")
        #expect(await disk.cachedData(for: URL(string: Self.source)!) == nil, "\(name): the data cache kept the bytes")
        #expect(results.storeCount == 0, "\(name): a result was stored")
        // Not remembered either: a repeat asks the origin again (the upload may be whole now).
        _ = await server.respond(to: ServerRequest(path: Self.path))
        #expect(loader.loadCount(URL(string: Self.source)!) == 2, "\(name)")
    }

    /// The same server keeps a whole source's bytes and result: the checks above can fail.
    @Test func aWholeSourceIsCached() async throws {
        let (server, loader, _, disk, results) = Self.server(try Data(contentsOf: RenderFixture.sample("mandelbrot.jpg")))
        let response = await server.respond(to: ServerRequest(path: Self.path))
        #expect(response.status == 200)
        #expect(await disk.cachedData(for: URL(string: Self.source)!) != nil)
        #expect(results.storeCount == 1)
        _ = await server.respond(to: ServerRequest(path: Self.path))
        #expect(loader.loadCount(URL(string: Self.source)!) == 1)
    }
}
