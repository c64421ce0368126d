import Foundation
import PipelineCore
import PipelineTestSupport
import Synchronization

/// A pipeline over the test fakes.
func makePipeline(
    loader: HeldLoader,
    decoder: CountingDecoder = CountingDecoder(),
    urlBuilder: any FetchURLBuilding = IdentityURLBuilder(),
    memoryCache: MemoryCache<ImageKey, ImageResponse> = MemoryCache(costLimit: 64 << 20),
    diskCache: (any DataCaching)? = nil,
    maxConcurrentDecodes: Int = 2,
    negativeCacheLifetime: TimeInterval = 600,
    events: EventRecorder? = nil,
    clock: TestClock? = nil
) -> ImagePipeline {
    var configuration = ImagePipeline.Configuration(
        decoders: DecoderRegistry([decoder]),
        loaders: LoaderRegistry([loader]),
        urlBuilder: urlBuilder,
        memoryCache: memoryCache,
        diskCache: diskCache,
        maxConcurrentDecodes: maxConcurrentDecodes,
        negativeCacheLifetime: negativeCacheLifetime,
        eventHandler: events?.handler)
    configuration.diskCachedSchemes.insert("test")
    if let clock { configuration.now = { clock.now } }
    return ImagePipeline(configuration: configuration)
}

/// A clock the test moves by hand.
final class TestClock: Sendable {
    private let current = Mutex(Date(timeIntervalSince1970: 1_000_000))
    var now: Date { current.withLock { $0 } }
    func advance(_ seconds: TimeInterval) { current.withLock { $0 = $0.addingTimeInterval(seconds) } }
}

/// `test:///WxH/N`.
func testURL(_ width: Int = 64, _ height: Int = 64, _ n: Int = 0, scheme: String = "test") -> URL {
    URL(string: "\(scheme)://host/\(width)x\(height)/\(n)")!
}

/// The first pixel of a response, to tell pictures apart.
func firstPixel(_ response: ImageResponse) -> [UInt8] {
    let p = response.bitmap.pixel(x: 0, y: 0)
    return [p.r, p.g, p.b, p.a]
}

func colorBytes(_ n: Int) -> [UInt8] {
    let c = FakeImage.color(for: n)
    return [c.0, c.1, c.2, c.3]
}
