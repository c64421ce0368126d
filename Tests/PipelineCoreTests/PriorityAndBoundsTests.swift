import Foundation
import PipelineCore
import PipelineTestSupport
import Testing

@Suite("Shared work's priority follows its current waiters", .timeLimit(.minutes(2)))
struct PriorityFallbackTests {
    /// A visible caller joins a prefetch (the loader's handle rises), then leaves: only the
    /// prefetch still waits, so the download and the decode fall back to prefetch priority
    /// (as in Nuke's task pool), and the prefetch still finishes.
    @Test func priorityFallsBackWhenTheVisibleWaiterCancels() async throws {
        let loader = HeldLoader()
        let pipeline = makePipeline(loader: loader)
        let url = testURL(32, 32, 7)
        let request = ImageRequest(url: url)
        await pipeline.prefetch([request])
        try #require(await loader.waitUntil { $0.heldURLs == [url] })
        let handle = try #require(loader.requests.first?.priority)
        #expect(handle.current == .prefetch)

        let visible = Task { try await pipeline.image(for: request) }
        try #require(await eventually { handle.current == .visible })
        #expect(pipeline.inFlightPriority(for: request) == .visible)
        visible.cancel()
        await #expect(throws: CancellationError.self) { try await visible.value }
        try #require(await eventually { handle.current == .prefetch }, "the loader still sees \(handle.current)")
        #expect(pipeline.inFlightPriority(for: request) == .prefetch)
        #expect(loader.cancelCount(url) == 0)  // the prefetch still wants it

        loader.releaseWithFakeData(url)
        await pipeline.waitForBackgroundWork()
        #expect(pipeline.cachedImage(for: request) != nil)
    }

    /// Two visible callers and a prefetch: one visible caller leaving keeps the work visible.
    @Test func priorityStaysWhileAnotherVisibleCallerWaits() async throws {
        let loader = HeldLoader()
        let pipeline = makePipeline(loader: loader)
        let url = testURL(32, 32, 8)
        let request = ImageRequest(url: url)
        await pipeline.prefetch([request])
        try #require(await loader.waitUntil { $0.heldURLs == [url] })
        let handle = try #require(loader.requests.first?.priority)
        let first = Task { try await pipeline.image(for: request) }
        let second = Task { try await pipeline.image(for: request) }
        try #require(await eventually { pipeline.waiterCount(for: request) == 3 })
        first.cancel()
        try #require(await eventually { pipeline.waiterCount(for: request) == 2 })
        #expect(handle.current == .visible)
        loader.releaseWithFakeData(url)
        #expect(firstPixel(try await second.value) == colorBytes(8))
    }
}

@Suite("The negative cache is bounded", .timeLimit(.minutes(3)))
struct NegativeCacheBoundTests {
    /// A server that sees many distinct missing URLs must not grow its negative cache forever:
    /// 100,000 distinct 404s leave at most `negativeCacheLimit` remembered, the most recent.
    @Test func oneHundredThousandDistinctFailuresStayUnderTheBound() async throws {
        let loader = HeldLoader(autoReply: { _ in .failure(FakeLoadError.status(404)) })
        var configuration = ImagePipeline.Configuration(decoders: DecoderRegistry([CountingDecoder()]),
                                                        loaders: LoaderRegistry([loader]),
                                                        memoryCache: MemoryCache(costLimit: 1 << 20), negativeCacheLifetime: 600)
        configuration.negativeCacheLimit = 1000
        let pipeline = ImagePipeline(configuration: configuration)
        let total = 100_000
        await withTaskGroup(of: Void.self) { group in
            for batch in 0..<50 {
                group.addTask {
                    for i in stride(from: batch, to: total, by: 50) {
                        _ = try? await pipeline.image(for: ImageRequest(url: URL(string: "test://host/missing/\(i)")!))
                    }
                }
            }
        }
        #expect(loader.totalLoads == total)
        let remembered = pipeline.rememberedFailureCount
        #expect(remembered <= 1000 && remembered > 0, "\(remembered) failures remembered")
        // The newest failure is still answered from the negative cache, without a load.
        let newest = URL(string: "test://host/missing/\(total - 1)")!
        await #expect(throws: ImagePipelineError.loadingFailed(newest, underlying: FakeLoadError.status(404))) {
            try await pipeline.image(for: ImageRequest(url: newest))
        }
        #expect(loader.totalLoads == total)
        // The oldest was evicted: asking again loads again.
        _ = try? await pipeline.image(for: ImageRequest(url: URL(string: "test://host/missing/0")!))
        #expect(loader.totalLoads == total + 1)
    }
}
