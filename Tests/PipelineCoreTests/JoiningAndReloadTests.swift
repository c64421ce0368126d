import Foundation
import PipelineCore
import PipelineTestSupport
import Synchronization
import Testing

/// A disk-cache slot whose lookups wait until the test opens the gate; afterwards they pass.
/// It never has an entry. Keeps a cache-only request in flight for as long as a test needs.
final class GatedDataCache: DataCaching {
    private struct State {
        var open = false
        var held: [CheckedContinuation<Void, Never>] = []
        var lookups = 0
    }
    private let state = Mutex(State())

    func cachedData(for url: URL) async -> CachedData? {
        await withCheckedContinuation { continuation in
            let passes = state.withLock { state -> Bool in
                state.lookups += 1
                if state.open { return true }
                state.held.append(continuation)
                return false
            }
            if passes { continuation.resume() }
        }
        return nil
    }

    func storeData(_ data: Data, info: CacheEntryInfo, for url: URL) async {}
    func updateInfo(_ info: CacheEntryInfo, for url: URL) async {}
    func removeData(for url: URL) async {}

    var lookups: Int { state.withLock { $0.lookups } }

    func open() {
        let held = state.withLock { state -> [CheckedContinuation<Void, Never>] in
            state.open = true
            defer { state.held = [] }
            return state.held
        }
        for continuation in held { continuation.resume() }
    }
}

@Suite("Joining rules, reloads and fill limits", .timeLimit(.minutes(2)))
struct JoiningAndReloadTests {
    /// A cache-only request in flight must not answer a caller that may load with `notCached`.
    @Test func aLoadingRequestDoesNotJoinACacheOnlyRequest() async throws {
        let loader = HeldLoader.immediate()
        let disk = GatedDataCache()
        let pipeline = makePipeline(loader: loader, diskCache: disk)
        let url = testURL(16, 16, 1)
        let cacheOnly = Task { try await pipeline.image(for: ImageRequest(url: url, cachePolicy: .returnCacheDataDontLoad)) }
        try #require(await eventually { disk.lookups == 1 })
        let normal = Task { try await pipeline.image(for: ImageRequest(url: url)) }
        // Same download (fetch URL), another decode key.
        let otherSize = Task { try await pipeline.image(for: ImageRequest(url: url, width: 8, height: 8)) }
        // Both decodes have joined the (loading) download before the cache-only one answers.
        try #require(await eventually { pipeline.downloadWaiterCount(for: url) == 2 })
        disk.open()
        await #expect(throws: ImagePipelineError.loadingFailed(url, underlying: ImagePipelineError.notCached)) {
            try await cacheOnly.value
        }
        let response = try await normal.value
        #expect(response.source == .network && firstPixel(response) == colorBytes(1))
        #expect(try await otherSize.value.bitmap.size == PixelSize(width: 8, height: 8))
        #expect(loader.loadCount(url) == 1)
    }

    /// After a reload succeeds, the URL's remembered permanent failure no longer answers.
    @Test func aSuccessfulReloadForgetsTheRememberedFailure() async throws {
        let missing = Mutex(true)
        let loader = HeldLoader { request in
            missing.withLock { $0 }
                ? .failure(FakeLoadError.status(404))
                : .success(.data(HeldLoader.fakeData(for: request.url), ResponseMetadata()))
        }
        let pipeline = makePipeline(loader: loader, negativeCacheLifetime: 60)
        let url = testURL(32, 32, 2)
        await #expect(throws: ImagePipelineError.loadingFailed(url, underlying: FakeLoadError.status(404))) {
            try await pipeline.image(for: ImageRequest(url: url, width: 16, height: 16))
        }
        missing.withLock { $0 = false }  // the picture was uploaded
        var reload = ImageRequest(url: url, width: 16, height: 16)
        reload.cachePolicy = .reloadIgnoringCaches
        #expect(firstPixel(try await pipeline.image(for: reload)) == colorBytes(2))
        // Another size of the same URL: the pipeline has just loaded it, it must not say 404.
        let other = try await pipeline.image(for: ImageRequest(url: url, width: 8, height: 8))
        #expect(other.bitmap.size == PixelSize(width: 8, height: 8))
    }

    /// `.fill` with upscaling at an extreme aspect ratio: the decoder must never be asked for a
    /// bitmap larger than the source (a 1×3000 strip filled into 3000×1 asked for 3000×9,000,000).
    @Test func fillWithUpscalingNeverAsksTheDecoderForMoreThanTheSource() async throws {
        let strip = PixelSize(width: 1, height: 3000)
        let plan = ResizePlan(source: strip, target: .pixels(PixelSize(width: 3000, height: 1)), contentMode: .fill,
                              allowsUpscaling: true)
        #expect(plan.outputSize == PixelSize(width: 3000, height: 1))
        #expect(plan.scaledSize.width <= strip.width && plan.scaledSize.height <= strip.height)
        let fit = ResizePlan(source: PixelSize(width: 100, height: 50), target: .pixels(PixelSize(width: 400, height: 400)),
                             contentMode: .fit, allowsUpscaling: true)
        #expect(fit.outputSize == PixelSize(width: 400, height: 200))
        #expect(fit.scaledSize == PixelSize(width: 100, height: 50))

        let loader = HeldLoader.immediate()
        let decoder = CountingDecoder()
        let pipeline = makePipeline(loader: loader, decoders: DecoderRegistry([decoder]))
        var request = ImageRequest(url: testURL(4, 64, 3), width: 64, height: 4, contentMode: .fill)
        request.processing.allowsUpscaling = true
        let response = try await pipeline.image(for: request)
        #expect(response.bitmap.size == PixelSize(width: 64, height: 4))
        #expect(firstPixel(response) == colorBytes(3))
        let asked = try #require(decoder.targetSizes.first)
        #expect(asked == nil || (asked!.width <= 4 && asked!.height <= 64), "decoder asked for \(String(describing: asked))")
    }
}

/// Decodes ``FakeImage`` data but, like a real codec with corrupt-but-decodable data, refuses
/// it as corrupt when asked for strict decoding.
final class StrictRefusingDecoder: ImageDecoding {
    let inner = CountingDecoder()
    var signatures: [ImageSignature] { inner.signatures }
    func withSession<R>(for data: Data, _ body: (any ImageDecodingSession) throws -> R) throws -> R {
        try inner.withSession(for: data) { try body(Session(inner: $0)) }
    }
    private struct Session: ImageDecodingSession {
        let inner: any ImageDecodingSession
        var info: ImageInfo { inner.info }
        func decode(_ options: DecodeOptions) throws -> DecodedImage {
            if options.strict { throw ImagePipelineError.corruptData(format: info.format, message: "a warning, refused when strict") }
            return try inner.decode(options)
        }
    }
}

@Suite("Negative cache per processing", .timeLimit(.minutes(2)))
struct NegativeCacheKeyTests {
    /// A decode failure that depends on the request's processing (strict decoding) must not be
    /// remembered for every request of the URL: a lenient request decodes the same bytes fine.
    @Test func aStrictDecodingFailureDoesNotFailLenientRequestsForTheURL() async throws {
        let loader = HeldLoader.immediate()
        let decoder = StrictRefusingDecoder()
        let configuration = ImagePipeline.Configuration(decoders: DecoderRegistry([decoder]), loaders: LoaderRegistry([loader]),
                                                        memoryCache: MemoryCache(costLimit: 1 << 20), negativeCacheLifetime: 60)
        let pipeline = ImagePipeline(configuration: configuration)
        let url = testURL(16, 16, 4)
        var strict = ImageRequest(url: url)
        strict.processing.strictDecoding = true
        for _ in 0..<2 {
            await #expect(throws: ImagePipelineError.self) { try await pipeline.image(for: strict) }
        }
        #expect(decoder.inner.decodeCount == 0 && loader.loadCount(url) == 1)  // the strict failure is remembered
        let lenient = try await pipeline.image(for: ImageRequest(url: url))
        #expect(firstPixel(lenient) == colorBytes(4))
        // A 404 is about the URL: remembered for every key.
        let missing = testURL(16, 16, 5)
        let failing = HeldLoader(autoReply: { _ in .failure(FakeLoadError.status(404)) })
        let other = ImagePipeline(configuration: .init(decoders: DecoderRegistry([decoder]), loaders: LoaderRegistry([failing])))
        await #expect(throws: ImagePipelineError.loadingFailed(missing, underlying: FakeLoadError.status(404))) {
            try await other.image(for: ImageRequest(url: missing))
        }
        await #expect(throws: ImagePipelineError.loadingFailed(missing, underlying: FakeLoadError.status(404))) {
            try await other.image(for: ImageRequest(url: missing, width: 8, height: 8))
        }
        #expect(failing.loadCount(missing) == 1)
    }
}

@Suite("Target binding: reloads and release", .timeLimit(.minutes(2)))
struct BindingReloadTests {
    /// Binding a `reloadIgnoringCaches` request must load again, as `image(for:)` does, not show
    /// the memory cache's (old) picture and stop.
    @Test @MainActor func bindingAReloadRequestLoadsAgainInsteadOfShowingTheMemoryHit() async throws {
        let version = Mutex(1)
        let loader = HeldLoader { _ in
            let color = FakeImage.color(for: version.withLock { $0 })
            return .success(.data(FakeImage.data(width: 16, height: 16, color: color), ResponseMetadata()))
        }
        let pipeline = makePipeline(loader: loader)
        let url = testURL(16, 16, 0)
        #expect(firstPixel(try await pipeline.image(for: ImageRequest(url: url))) == colorBytes(1))
        version.withLock { $0 = 2 }  // the picture changed on the server
        var reload = ImageRequest(url: url)
        reload.cachePolicy = .reloadIgnoringCaches
        let binding = ImageTargetBinding(pipeline: pipeline) { _ in }
        binding.bind(reload)
        try #require(await eventually { binding.displayed != nil && !binding.isLoading })
        #expect(binding.displayed.map(firstPixel) == colorBytes(2))
        #expect(loader.loadCount(url) == 2)
    }

    /// A target that goes away (a cell deallocated) stops wanting its picture: its load is
    /// cancelled like on a rebind, not left running for nobody.
    @Test @MainActor func droppingABindingCancelsItsLoad() async throws {
        let loader = HeldLoader()
        let pipeline = makePipeline(loader: loader)
        let url = testURL(16, 16, 7)
        var binding: ImageTargetBinding? = ImageTargetBinding(pipeline: pipeline) { _ in }
        binding?.bind(ImageRequest(url: url))
        try #require(await loader.waitUntil { $0.heldURLs == [url] })
        binding = nil
        try #require(await loader.waitUntil { $0.cancelCount(url) == 1 })
        #expect(loader.heldURLs.isEmpty)
    }
}

@Suite("Reloads and the disk cache", .timeLimit(.minutes(2)))
struct ReloadNoStoreTests {
    /// A reload answered `no-store` must not leave the old disk entry to answer later requests:
    /// the server has said the old bytes are not the picture any more.
    @Test func aNoStoreReloadRemovesTheOldDiskEntry() async throws {
        let clock = TestClock()
        let loader = HeldLoader { request in
            var metadata = ResponseMetadata()
            metadata.noStore = true
            return .success(.data(FakeImage.data(width: 16, height: 16, color: FakeImage.color(for: 2)), metadata))
        }
        let disk = InMemoryDataCache()
        let pipeline = makePipeline(loader: loader, diskCache: disk, clock: clock)
        let url = testURL(16, 16, 1)
        disk.seed(HeldLoader.fakeData(for: url), info: CacheEntryInfo(freshUntil: clock.now.addingTimeInterval(3600)), for: url)
        var reload = ImageRequest(url: url)
        reload.cachePolicy = .reloadIgnoringCaches
        #expect(firstPixel(try await pipeline.image(for: reload)) == colorBytes(2))
        pipeline.memoryCache.removeAll()  // memory pressure
        let later = try await pipeline.image(for: ImageRequest(url: url))
        #expect(firstPixel(later) == colorBytes(2), "the old disk entry answered after a no-store reload")
    }
}
