import Foundation
import PipelineCore
import PipelineTestSupport
import Testing

@Suite("Freshness policies: the origin's lifetime, a minimum or a fixed one", .timeLimit(.minutes(2)))
struct FreshnessPolicyTests {
    /// A loader that answers `test:///WxH/N` at once with the metadata `reply` gives for N.
    static func loader(_ reply: @escaping @Sendable (Int) -> ResponseMetadata) -> HeldLoader {
        HeldLoader { request in
            let n = Int(request.url.lastPathComponent) ?? 0
            return .success(.data(HeldLoader.fakeData(for: request.url), reply(n)))
        }
    }

    /// Lifetimes by picture: none, 10 s, 2 h, `no-cache` (0).
    static let lifetimes: [Int: TimeInterval?] = [1: nil, 2: 10, 3: 7_200, 4: 0]

    /// Loads pictures 1…4 (``lifetimes``) with `policy` and returns each entry's lifetime from now.
    static func storedLifetimes(_ policy: FreshnessPolicy, request: (URL) -> ImageRequest = { ImageRequest(url: $0) })
        async throws -> [TimeInterval?] {
        let clock = TestClock()
        let disk = InMemoryDataCache()
        let pipeline = makePipeline(loader: loader { ResponseMetadata(freshFor: lifetimes[$0] ?? nil, origin: .network) }, diskCache: disk,
                                    clock: clock, freshnessPolicy: policy)
        var result: [TimeInterval?] = []
        for n in 1...4 {
            let url = testURL(16, 16, n)
            _ = try await pipeline.image(for: request(url))
            result.append(disk.info(for: url)?.freshUntil.map { $0.timeIntervalSince(clock.now) })
        }
        return result
    }

    @Test func httpKeepsTheOriginsLifetimes() async throws {
        #expect(try await Self.storedLifetimes(.http) == [nil, 10, 7_200, 0])
    }

    @Test func aMinimumRaisesShortOrMissingLifetimesAndKeepsLongerOnes() async throws {
        #expect(try await Self.storedLifetimes(.minimum(3_600)) == [3_600, 3_600, 7_200, 3_600])
    }

    @Test func aFixedLifetimeReplacesWhateverTheOriginSaid() async throws {
        #expect(try await Self.storedLifetimes(.fixed(86_400)) == [86_400, 86_400, 86_400, 86_400])
    }

    @Test func aRequestOverridesTheConfigurationsPolicy() async throws {
        let fixed = try await Self.storedLifetimes(.minimum(3_600)) { ImageRequest(url: $0, freshnessPolicy: .fixed(60)) }
        #expect(fixed == [60, 60, 60, 60])
        let http = try await Self.storedLifetimes(.fixed(86_400)) { ImageRequest(url: $0, freshnessPolicy: .http) }
        #expect(http == [nil, 10, 7_200, 0])
    }

    @Test func noStoreIsNeverStoredWhateverThePolicy() async throws {
        for policy in [FreshnessPolicy.fixed(86_400), .minimum(86_400)] {
            let disk = InMemoryDataCache()
            let pipeline = makePipeline(loader: Self.loader { _ in ResponseMetadata(freshFor: 600, noStore: true, origin: .network) },
                                        diskCache: disk, freshnessPolicy: policy)
            let url = testURL(16, 16, 5)
            #expect(try await pipeline.image(for: ImageRequest(url: url)).source == .network)
            await pipeline.waitForBackgroundWork()
            #expect(disk.storeCount == 0 && disk.info(for: url) == nil)
        }
    }

    @Test func aFixedLifetimeServesFromDiskUntilItEndsAndA304RenewsIt() async throws {
        let clock = TestClock()
        let disk = InMemoryDataCache()
        // The origin says "revalidate every time" (no-cache) and answers a 304 the same way.
        let loader = HeldLoader { request in
            request.validator == nil
                ? .success(.data(HeldLoader.fakeData(for: request.url), ResponseMetadata(etag: "\"v1\"", freshFor: 0, origin: .network)))
                : .success(.notModified(ResponseMetadata(freshFor: 0)))
        }
        let pipeline = makePipeline(loader: loader, diskCache: disk, clock: clock, freshnessPolicy: .fixed(600))
        let url = testURL(16, 16, 6)
        let request = ImageRequest(url: url, revalidation: .revalidateBeforeAnswering)
        #expect(try await pipeline.image(for: request).source == .network)
        clock.advance(599)
        pipeline.memoryCache.removeAll()
        #expect(try await pipeline.image(for: request).source == .disk)
        #expect(loader.loadCount(url) == 1)
        clock.advance(2)  // the ten minutes are over: asked again, and the 304 gives ten more
        pipeline.memoryCache.removeAll()
        #expect(try await pipeline.image(for: request).source == .revalidated)
        #expect(disk.info(for: url)?.freshUntil == clock.now.addingTimeInterval(600))
        #expect(loader.loadCount(url) == 2)
    }
}
