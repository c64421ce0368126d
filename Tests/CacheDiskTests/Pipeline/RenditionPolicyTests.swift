import CacheDisk
import CodecPNG
import Foundation
import LoaderHTTP
import PipelineCore
import PipelineTestSupport
import Testing

/// The rendition-only policies over real HTTP (the fixture server on 127.0.0.1): a rendition
/// without its original on disk carries the original's validators and is revalidated on its own.
@Suite("Rendition disk policies over HTTP", .timeLimit(.minutes(2)))
struct RenditionPolicyTests {
    /// A pipeline over `directory` (a new cache object each time: a restart), TIMG and PNG decoders,
    /// PNG renditions, the test clock for freshness.
    static func pipeline(_ directory: TemporaryDirectory, policy: DiskCachePolicy, clock: TestClock,
                         events: EventRecorder = EventRecorder()) throws -> (ImagePipeline, DiskCache) {
        let disk = try makeCache(directory)
        var configuration = ImagePipeline.Configuration(
            decoders: DecoderRegistry([TestImageDecoder(), PNGDecoder()]), loaders: LoaderRegistry([HTTPDataLoader()]),
            memoryCache: MemoryCache(costLimit: 64 << 20), diskCache: disk, maxConcurrentDecodes: 2,
            eventHandler: events.handler)
        configuration.now = { clock.now }
        configuration.diskCachePolicy = policy
        configuration.renditionEncoder = PNGEncoder(compressionLevel: 1)
        return (ImagePipeline(configuration: configuration), disk)
    }

    @Test func aRenditionWithoutItsOriginalSurvivesARestartAndIsRevalidatedOnItsOwn() async throws {
        try await withFixtureServer { server in
            let directory = try TemporaryDirectory()
            defer { directory.remove() }
            let clock = TestClock()
            let url = server.url("/version/a?maxage=100")
            let request = ImageRequest(url: url, width: 4, height: 4, contentMode: .fill, processors: [.circle])

            // First launch: the rendition is stored, the original is not.
            let events1 = EventRecorder()
            let (first, disk1) = try Self.pipeline(directory, policy: .renditions, clock: clock, events: events1)
            let made = try await first.image(for: request)
            #expect(made.source == .network)
            #expect(events1.count { if case .renditionStored = $0 { true } else { false } } == 1)
            #expect(await disk1.cachedData(for: url) == nil, "renditions only: no original on disk")

            // A restart: the rendition answers alone, nothing is asked.
            let events2 = EventRecorder()
            let (second, _) = try Self.pipeline(directory, policy: .renditions, clock: clock, events: events2)
            let again = try await second.image(for: request)
            #expect(again.source == .rendition && again.bitmap == made.bitmap)
            #expect(again.originalSize == made.originalSize && again.format == made.format)
            #expect(try await server.stats().statuses["/version/a"] == [200])

            // Stale: a conditional request with the original's validators; the 304 refreshes it.
            clock.advance(200)
            let (third, _) = try Self.pipeline(directory, policy: .renditions, clock: clock)
            let revalidated = try await third.image(for: request)
            #expect(revalidated.source == .rendition && revalidated.bitmap == made.bitmap)
            #expect(try await server.stats().statuses["/version/a"] == [200, 304])
            let (fourth, _) = try Self.pipeline(directory, policy: .renditions, clock: clock)
            #expect(try await fourth.image(for: request).source == .rendition)
            #expect(try await server.stats().statuses["/version/a"] == [200, 304], "fresh again: not asked")

            // New bytes at the origin: once stale, the revalidation brings them and they replace it.
            try await server.bump("a")
            clock.advance(200)
            let (fifth, disk5) = try Self.pipeline(directory, policy: .renditions, clock: clock)
            let renewed = try await fifth.image(for: request)
            #expect(renewed.source == .network && renewed.bitmap != made.bitmap)
            #expect(try await server.stats().statuses["/version/a"] == [200, 304, 200])
            #expect(await disk5.cachedData(for: url) == nil)
            let (sixth, _) = try Self.pipeline(directory, policy: .renditions, clock: clock)
            let renewedAgain = try await sixth.image(for: request)
            #expect(renewedAgain.source == .rendition && renewedAgain.bitmap == renewed.bitmap)
            #expect(try await server.hits("/version/a") == 3)

            // New bytes that do not decode never replace it: the stored rendition answers.
            let stored = Set(LossyRenditionTests.renditionBytes(directory).filter { $0.count > 20 })
            try await server.bump("a", junk: true)
            clock.advance(200)
            let (seventh, _) = try Self.pipeline(directory, policy: .renditions, clock: clock)
            let kept = try await seventh.image(for: request)
            #expect(kept.source == .rendition && kept.bitmap == renewed.bitmap)
            #expect(kept.warnings.contains { $0.contains("did not decode") })
            #expect(try await server.stats().statuses["/version/a"] == [200, 304, 200, 200])
            #expect(Set(LossyRenditionTests.renditionBytes(directory).filter { $0.count > 20 }) == stored)
        }
    }

    /// `automatic`: a processed request keeps only its rendition, a plain one the original; one
    /// download shared by both still stores the original.
    @Test func aDownloadSharedWithAPlainRequestStillStoresTheOriginal() async throws {
        try await withFixtureServer { server in
            let directory = try TemporaryDirectory()
            defer { directory.remove() }
            let clock = TestClock()
            let events = EventRecorder()
            let (pipeline, disk) = try Self.pipeline(directory, policy: .automatic, clock: clock, events: events)

            let alone = server.url("/image/alone")
            _ = try await pipeline.image(for: ImageRequest(url: alone, width: 2, height: 2, processors: [.grayscale]))
            #expect(await disk.cachedData(for: alone) == nil, "automatic, processed: rendition only")
            #expect(events.count { if case .renditionStored = $0 { true } else { false } } == 1)

            let url = server.url("/hold/shared")
            let processed = Task { try await pipeline.image(for: ImageRequest(url: url, width: 2, height: 2, processors: [.circle])) }
            try #require(await eventually { pipeline.downloadWaiterCount(for: url) == 1 })
            let plain = Task { try await pipeline.image(for: ImageRequest(url: url)) }
            try #require(await eventually { pipeline.downloadWaiterCount(for: url) == 2 })
            try await server.release("shared")
            _ = try await processed.value
            _ = try await plain.value
            #expect(try await server.hits("/hold/shared") == 1)
            #expect(await disk.cachedData(for: url) != nil, "the plain request keeps the original")
            #expect(events.count { if case .renditionStored = $0 { true } else { false } } == 2)
        }
    }
}
