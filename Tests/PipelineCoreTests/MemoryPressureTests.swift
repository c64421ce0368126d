import Foundation
import PipelineCore
import PipelineTestSupport
import Testing

// The host-agnostic half of memory pressure: what a trim sheds. The Linux watcher that calls
// `trimMemory` is tested in MemoryPressureLinuxTests.
@Suite("Memory pressure", .timeLimit(.minutes(1)))
struct MemoryPressureTests {
    @Test func trimmingToACostEvictsTheLeastRecentAndReportsTheBytesFreed() {
        let cache = MemoryCache<String, Int>(costLimit: 100, entryCostFraction: 1)
        for (key, cost) in [("a", 10), ("b", 20), ("c", 30)] { cache.insert(0, for: key, cost: cost) }
        #expect(cache.trim(toCost: 35) == 30)  // a and b go, c stays
        #expect(cache.keysByRecency == ["c"])
        #expect(cache.trim(toCost: 30) == 0)
        #expect(cache.trim(toCost: -5) == 30 && cache.count == 0)
    }

    @Test func trimmingAtEachLevelShedsTheMemoryCacheAndCancelsPrefetches() async throws {
        // URLs 0-3 load at once; 100 and 101 are held, so their prefetches stay in flight.
        let loader = HeldLoader(autoReply: { request in
            Int(request.url.lastPathComponent).map { $0 < 100 } == true
                ? .success(.data(HeldLoader.fakeData(for: request.url), ResponseMetadata())) : nil
        })
        let events = EventRecorder()
        let trims = AsyncStream<Void>.makeStream()
        let recorder = events.handler
        var configuration = ImagePipeline.Configuration(
            decoders: DecoderRegistry([CountingDecoder()]), loaders: LoaderRegistry([loader]),
            memoryCache: MemoryCache(costLimit: 64 << 20), maxConcurrentDecodes: 2)
        configuration.eventHandler = { event in
            recorder(event)
            if case .memoryTrimmed = event { trims.continuation.yield() }
        }
        let pipeline = ImagePipeline(configuration: configuration)
        for n in 0..<4 { _ = try await pipeline.image(for: ImageRequest(url: testURL(64, 64, n))) }
        let held = [testURL(64, 64, 100), testURL(64, 64, 101)]
        await pipeline.prefetch(held.map { ImageRequest(url: $0) })
        #expect(await loader.waitUntil { $0.heldURLs.count == 2 })
        let full = pipeline.memoryCache.totalCost
        // Four entries of equal cost: pixels, and what else each holds (its URL, overhead).
        #expect(full > 4 * 64 * 64 * 4 && full % 4 == 0)

        var trimmed = trims.stream.makeAsyncIterator()

        await pipeline.trimMemory(for: .warning)
        _ = await trimmed.next()
        #expect(pipeline.memoryCache.totalCost <= full / 2 && pipeline.memoryCache.count == 2)
        #expect(await pipeline.prefetchCount == 0)
        #expect(await loader.waitUntil { loader in held.allSatisfy { loader.cancelCount($0) == 1 } })

        await pipeline.trimMemory(for: .critical)
        _ = await trimmed.next()
        #expect(pipeline.memoryCache.totalCost == 0)
        let reported = events.all.compactMap { event -> (MemoryPressureLevel, Int, Int)? in
            if case .memoryTrimmed(let level, let freed, let cancelled) = event { (level, freed, cancelled) } else { nil }
        }
        #expect(reported.map(\.0) == [.warning, .critical])
        #expect(reported.map(\.1) == [full / 2, full / 2])
        #expect(reported.map(\.2) == [2, 0])
    }
}
