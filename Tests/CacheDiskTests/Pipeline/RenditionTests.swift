import CacheDisk
import CodecPNG
import Foundation
import PipelineCore
import PipelineTestSupport
import Testing

/// A pipeline that keeps renditions (PNG) beside the originals (FakeImage) in `diskCache`.
private func renditionPipeline(loader: any DataLoading, decoder: CountingDecoder, diskCache: DiskCache, clock: TestClock,
                               events: EventRecorder) -> ImagePipeline {
    var configuration = ImagePipeline.Configuration(
        decoders: DecoderRegistry([decoder, PNGDecoder()]), loaders: LoaderRegistry([loader]),
        memoryCache: MemoryCache(costLimit: 64 << 20), diskCache: diskCache, maxConcurrentDecodes: 2,
        eventHandler: events.handler)
    configuration.now = { clock.now }
    configuration.diskCachedSchemes.insert("test")
    configuration.diskCachePolicy = .originalsAndRenditions
    configuration.renditionEncoder = PNGEncoder(compressionLevel: 1)
    return ImagePipeline(configuration: configuration)
}

/// A loader that refuses every URL before loading (as a connection policy refuses a host):
/// the caches must not answer for them either.
private struct RefusingLoader: DataLoading {
    struct Refused: Error, PipelineFailure { var isPermanent: Bool { true } }
    let base: HeldLoader
    var schemes: Set<String> { base.schemes }
    func checkAllowed(_ url: URL) throws { throw Refused() }
    func load(_ request: DataLoadRequest) async throws -> DataLoadResult {
        try checkAllowed(request.url)
        return try await base.load(request)
    }
}

/// A loader that answers every URL with its fake picture, fresh for 100 s, ETag "v1".
private func versionOneLoader() -> HeldLoader {
    HeldLoader { .success(.data(HeldLoader.fakeData(for: $0.url), metadata(maxAge: 100, etag: "\"v1\""))) }
}

/// The 64×48 test picture the tests keep renditions of, and its 32×32 circle.
private let pictureURL = testURL(64, 48, 5)
private let roundRequest = ImageRequest(url: pictureURL, width: 32, height: 32, contentMode: .fill, processors: [.circle])

@Suite struct RenditionTests {
    @Test func aURLTheLoaderRefusesIsAnsweredByNeitherItsRenditionNorItsOriginal() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let clock = TestClock()
        let (loader, url, round) = (versionOneLoader(), pictureURL, roundRequest)
        let first = renditionPipeline(loader: loader, decoder: CountingDecoder(), diskCache: try makeCache(directory),
                                      clock: clock, events: EventRecorder())
        _ = try await first.image(for: round)

        let refusing = renditionPipeline(loader: RefusingLoader(base: loader), decoder: CountingDecoder(),
                                         diskCache: try makeCache(directory), clock: clock, events: EventRecorder())
        for request in [round, ImageRequest(url: url)] {
            do {
                let answer = try await refusing.image(for: request)
                Issue.record("answered from \(answer.source) for a refused URL")
            } catch let error as ImagePipelineError {
                #expect(error.underlyingError is RefusingLoader.Refused, "\(error)")
            }
        }
        #expect(loader.loadCount(url) == 1)
    }

    @Test func renditionsSurviveARestartAndAreInvalidatedByNewBytes() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let clock = TestClock()
        let (loader, url, round) = (versionOneLoader(), pictureURL, roundRequest)
        let blurred = ImageRequest(url: url, width: 32, height: 32, contentMode: .fill, processors: [.gaussianBlur(radius: 2)])

        let events1 = EventRecorder(), decoder1 = CountingDecoder()
        let first = renditionPipeline(loader: loader, decoder: decoder1, diskCache: try makeCache(directory),
                                      clock: clock, events: events1)
        let made = try await first.image(for: round)
        _ = try await first.image(for: blurred)
        #expect(events1.count { if case .renditionStored = $0 { true } else { false } } == 2)
        #expect(decoder1.decodeCount == 1)

        // A restart: new cache object on the directory, empty memory. The rendition answers
        // without decoding the original, and the two processor lists get their own entries.
        let events2 = EventRecorder(), decoder2 = CountingDecoder()
        let second = renditionPipeline(loader: loader, decoder: decoder2, diskCache: try makeCache(directory),
                                       clock: clock, events: events2)
        let again = try await second.image(for: round)
        #expect(again.source == .rendition && again.bitmap == made.bitmap)
        #expect(again.originalSize == made.originalSize && again.format == made.format)
        let blurredAgain = try await second.image(for: blurred)
        #expect(blurredAgain.bitmap != again.bitmap && blurredAgain.bitmap.pixel(x: 0, y: 0).a == 255)
        #expect(decoder2.decodeCount == 0 && loader.loadCount(url) == 1)
        #expect(events2.count { if case .renditionHit = $0 { true } else { false } } == 2)

        // New bytes for the URL (as a revalidation stores them): the renditions no longer answer.
        let disk3 = try makeCache(directory)
        await disk3.storeData(FakeImage.data(width: 64, height: 48, color: (0, 0, 255, 255)),
                              info: CacheEntryInfo(etag: "\"v2\"", freshUntil: clock.now.addingTimeInterval(100)), for: url)
        let events3 = EventRecorder(), decoder3 = CountingDecoder()
        let third = renditionPipeline(loader: loader, decoder: decoder3, diskCache: disk3, clock: clock, events: events3)
        let fresh = try await third.image(for: round)
        #expect(events3.count { if case .renditionHit = $0 { true } else { false } } == 0)
        #expect(decoder3.decodeCount == 1)
        #expect(fresh.bitmap.pixel(x: 16, y: 16) == (0, 0, 255, 255))
        #expect(events3.count { if case .renditionStored = $0 { true } else { false } } == 1)

        // A stale original: the rendition still answers at once (stale-while-revalidate) and the
        // original is revalidated in the background, whose new bytes stop the rendition answering.
        clock.advance(200)
        let events4 = EventRecorder(), decoder4 = CountingDecoder()
        let fourth = renditionPipeline(loader: loader, decoder: decoder4, diskCache: try makeCache(directory),
                                       clock: clock, events: events4)
        #expect(try await fourth.image(for: round).bitmap == fresh.bitmap)
        await fourth.waitForBackgroundWork()
        #expect(decoder4.decodeCount == 1 && loader.loadCount(url) == 2)  // the check of the new bytes
        fourth.memoryCache.removeAll()
        let red = try await fourth.image(for: round)
        #expect(red.bitmap.pixel(x: 16, y: 16) != (0, 0, 255, 255))
        #expect(events4.count { if case .renditionHit = $0 { true } else { false } } == 1)
    }

    @Test func theDefaultPolicyStoresNoRendition() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let loader = HeldLoader { .success(.data(HeldLoader.fakeData(for: $0.url), metadata(maxAge: 100))) }
        let events = EventRecorder()
        var configuration = ImagePipeline.Configuration(
            decoders: DecoderRegistry([CountingDecoder()]), loaders: LoaderRegistry([loader]),
            diskCache: try makeCache(directory), eventHandler: events.handler)
        configuration.diskCachedSchemes.insert("test")
        configuration.renditionEncoder = PNGEncoder()
        let pipeline = ImagePipeline(configuration: configuration)
        _ = try await pipeline.image(for: ImageRequest(url: testURL(16, 16, 1), width: 8, height: 8, processors: [.circle]))
        var optedIn = ImageRequest(url: testURL(16, 16, 2), width: 8, height: 8, processors: [.circle])
        optedIn.diskCachePolicy = .originalsAndRenditions
        _ = try await pipeline.image(for: optedIn)
        #expect(events.count { if case .renditionStored = $0 { true } else { false } } == 1)
    }
}
