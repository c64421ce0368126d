import Foundation
import PipelineCore

/// The pipeline every test builds: `loader`, the decoders given (a ``CountingDecoder`` unless
/// told), a 64 MiB memory cache, two decodes at a time, failures remembered for ten minutes (so
/// a starved machine cannot outlast the negative cache between two requests of a test), and the
/// `test` scheme (``HeldLoader``'s) kept in the disk cache, HTTP's freshness. Arguments change
/// one thing each.
public func makePipeline(
    loader: any DataLoading,
    decoders: DecoderRegistry = DecoderRegistry([CountingDecoder()]),
    urlBuilder: any FetchURLBuilding = IdentityURLBuilder(),
    memoryCache: MemoryCache<ImageKey, ImageContainer> = MemoryCache(costLimit: 64 << 20),
    diskCache: (any DataCaching)? = nil,
    maxConcurrentDecodes: Int = 2,
    maxPixelCount: Int = 100_000_000,
    negativeCacheLifetime: TimeInterval = 600,
    events: EventRecorder? = nil,
    clock: TestClock? = nil,
    freshnessPolicy: FreshnessPolicy = .http
) -> ImagePipeline {
    var configuration = ImagePipeline.Configuration(
        decoders: decoders, loaders: LoaderRegistry([loader]), urlBuilder: urlBuilder, memoryCache: memoryCache,
        diskCache: diskCache, maxConcurrentDecodes: maxConcurrentDecodes, maxPixelCount: maxPixelCount,
        negativeCacheLifetime: negativeCacheLifetime, eventHandler: events?.handler)
    configuration.diskCachedSchemes.insert("test")
    configuration.freshnessPolicy = freshnessPolicy
    if let clock { configuration.now = { clock.now } }
    return ImagePipeline(configuration: configuration)
}

/// `test://host/WxH/N` (or another `scheme`): ``HeldLoader``'s fake picture of that size in
/// colour N (`HeldLoader.fakeData(for:)`).
public func testURL(_ width: Int = 64, _ height: Int = 64, _ n: Int = 0, scheme: String = "test") -> URL {
    guard let url = URL(string: "\(scheme)://host/\(width)x\(height)/\(n)") else {
        preconditionFailure("not a URL scheme: \(scheme)")
    }
    return url
}
