import Foundation
import PipelineCore
import PipelineTestSupport
import Testing

@Suite("Memory cache entry lifetime (ttl)")
struct MemoryCacheTTLTests {
    /// A cache of `costLimit` bytes (entries of any cost) whose `ttl` counts by a test clock.
    static func cache(costLimit: Int = 100, ttl: TimeInterval? = 60) -> (MemoryCache<String, Int>, TestClock) {
        let clock = TestClock()
        return (MemoryCache(costLimit: costLimit, entryCostFraction: 1, ttl: ttl, now: { clock.now }), clock)
    }

    @Test func anExpiredEntryIsNotReturnedAndLeavesOnLookup() {
        let (cache, clock) = Self.cache()
        cache.insert(1, for: "a", cost: 10)
        clock.advance(59)
        #expect(cache.value(for: "a") == 1 && cache.contains("a"))
        clock.advance(1)  // 60 s after the store: expired
        #expect(!cache.contains("a"))
        #expect(cache.value(for: "a") == nil)
        #expect(cache.count == 0 && cache.totalCost == 0)
    }

    @Test func insertsAndTrimsRemoveEveryExpiredEntry() {
        let (cache, clock) = Self.cache(costLimit: 1_000)
        cache.insert(1, for: "a", cost: 100)
        cache.insert(2, for: "b", cost: 100)
        clock.advance(30)
        cache.insert(3, for: "c", cost: 100)
        clock.advance(31)  // a and b expired, c has 29 s left
        cache.insert(4, for: "d", cost: 100)  // nobody looked a or b up: the insert removes them
        #expect(cache.count == 2 && cache.totalCost == 200)
        #expect(cache.keysByRecency == ["d", "c"])
        clock.advance(60)
        cache.trim(toFraction: 1)  // a trim that frees nothing by size still drops the expired
        #expect(cache.count == 0 && cache.totalCost == 0)
    }

    @Test func storingAgainRestartsTheLifetimeAndAHitDoesNot() {
        let (cache, clock) = Self.cache()
        cache.insert(1, for: "hit", cost: 10)
        cache.insert(1, for: "stored", cost: 10)
        clock.advance(50)
        #expect(cache.value(for: "hit") == 1)
        cache.insert(2, for: "stored", cost: 10)
        clock.advance(20)
        #expect(cache.value(for: "hit") == nil)
        #expect(cache.value(for: "stored") == 2)
    }

    @Test func withoutATTLNothingExpires() {
        let (cache, clock) = Self.cache(ttl: nil)
        #expect(cache.ttl == nil)
        cache.insert(1, for: "a", cost: 10)
        clock.advance(365 * 86_400)
        cache.insert(2, for: "b", cost: 10)
        #expect(cache.value(for: "a") == 1 && cache.count == 2)
    }

    @Test func thePipelineLoadsAgainOnceItsMemoryEntryExpired() async throws {
        let clock = TestClock()
        let loader = HeldLoader.immediate()
        let memory = MemoryCache<ImageKey, ImageContainer>(costLimit: 64 << 20, ttl: 60, now: { clock.now })
        let pipeline = makePipeline(loader: loader, memoryCache: memory, clock: clock)
        let request = ImageRequest(url: testURL(16, 16, 4))
        #expect(try await pipeline.image(for: request).source == .network)
        clock.advance(30)
        #expect(pipeline.cachedImage(for: request) != nil)
        #expect(try await pipeline.image(for: request).source == .memory)
        clock.advance(31)
        #expect(pipeline.cachedImage(for: request) == nil)
        #expect(try await pipeline.image(for: request).source == .network)
        #expect(loader.loadCount(request.url) == 2)
    }
}
