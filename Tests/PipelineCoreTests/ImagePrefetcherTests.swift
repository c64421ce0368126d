import Foundation
import PipelineCore
import PipelineTestSupport
import Testing

@Suite("ImagePrefetcher: a screen's prefetching, synchronous and in order", .timeLimit(.minutes(2)))
struct ImagePrefetcherTests {
    /// Starts and stops from one thread, alternating, many times: each call takes effect before
    /// the next, so ending on a stop leaves nothing prefetching and every load that reached the
    /// loader cancelled; ending on a start leaves exactly that one.
    @Test func startsAndStopsFromOneThreadTakeEffectInOrder() async throws {
        let loader = HeldLoader()
        let pipeline = makePipeline(loader: loader)
        let prefetcher = ImagePrefetcher(pipeline: pipeline)
        let stopped = testURL(16, 16, 1), kept = testURL(16, 16, 2)
        for _ in 0..<200 {
            prefetcher.startPrefetching(with: [stopped, kept])
            prefetcher.stopPrefetching(with: [stopped, kept])
            #expect(prefetcher.prefetchCount == 0)
        }
        prefetcher.startPrefetching(with: [stopped, kept])
        prefetcher.stopPrefetching(with: [stopped])
        #expect(prefetcher.prefetchCount == 1)
        // The survivor reaches the loader; every load of the stopped URL is cancelled (a task
        // cancelled on its way may still start a load, which is then cancelled too).
        let settled = { @Sendable (loader: HeldLoader) in
            loader.loadCount(stopped) == loader.cancelCount(stopped) && loader.loadCount(kept) - loader.cancelCount(kept) == 1
        }
        try #require(await loader.waitUntil(timeout: 30) { $0.heldURLs == [kept] && settled($0) })
        #expect(await eventually(timeout: 30) { pipeline.waiterCount(for: ImageRequest(url: stopped)) == 0 })
        loader.releaseWithFakeData(kept)
        await pipeline.waitForBackgroundWork()
        #expect(prefetcher.prefetchCount == 0)
        // No start overtook its stop: nothing of the stopped URL is left to reach the loader.
        #expect(await loader.waitUntil(timeout: 30) { $0.heldURLs.isEmpty && settled($0) })
        #expect(pipeline.cachedImage(for: ImageRequest(url: kept)) != nil)
        #expect(pipeline.cachedImage(for: ImageRequest(url: stopped)) == nil)
    }

    /// A cell asking for a picture that is prefetching joins the prefetch; stopping the
    /// prefetch then cancels nothing the cell waits for.
    @Test func aVisibleRequestJoiningAPrefetchThatStopsStillGetsItsPicture() async throws {
        let loader = HeldLoader()
        let pipeline = makePipeline(loader: loader)
        let prefetcher = ImagePrefetcher(pipeline: pipeline)
        let url = testURL(16, 16, 3)
        let request = ImageRequest(url: url, width: 8, height: 8)
        prefetcher.startPrefetching(with: [request])
        try #require(await loader.waitUntil { $0.heldURLs == [url] })
        #expect(loader.requests.first?.priority.current == .prefetch)
        let visible = Task { try await pipeline.image(for: request) }
        #expect(await pipeline.waitForWaiters(2, for: request))
        prefetcher.stopPrefetching(with: [request])
        #expect(await eventually { pipeline.waiterCount(for: request) == 1 })
        loader.releaseWithFakeData(url)
        #expect(firstPixel(try await visible.value) == colorBytes(3))
        #expect(loader.cancelCount(url) == 0 && loader.loadCount(url) == 1)
    }

    /// Releasing the prefetcher stops what it started, and only that.
    @Test func releasingThePrefetcherStopsItsPrefetches() async throws {
        let loader = HeldLoader()
        let pipeline = makePipeline(loader: loader)
        let a = testURL(16, 16, 4), b = testURL(16, 16, 5), other = testURL(16, 16, 6)
        var prefetcher: ImagePrefetcher? = ImagePrefetcher(pipeline: pipeline)
        let survivor = ImagePrefetcher(pipeline: pipeline)
        prefetcher?.startPrefetching(with: [a, b])
        survivor.startPrefetching(with: [other])
        try #require(await loader.waitUntil { Set($0.heldURLs) == [a, b, other] })
        prefetcher = nil
        try #require(await loader.waitUntil { $0.cancelCount(a) == 1 && $0.cancelCount(b) == 1 })
        #expect(loader.heldURLs == [other] && survivor.prefetchCount == 1)
        survivor.stopPrefetching()
        try #require(await loader.waitUntil { $0.cancelCount(other) == 1 })
        #expect(survivor.prefetchCount == 0)
    }

    /// A URL is the request `ImageRequest(url:)`: either form starts and stops the same
    /// prefetch, under the same key; the request's own priority is replaced by `.prefetch`.
    @Test func theURLAndRequestFormsAreTheSamePrefetch() async throws {
        let loader = HeldLoader()
        let pipeline = makePipeline(loader: loader)
        let prefetcher = ImagePrefetcher(pipeline: pipeline)
        let url = testURL(16, 16, 7)
        #expect(pipeline.key(for: ImageRequest(url: url)) == pipeline.key(for: ImageRequest(url: url, priority: .prefetch)))
        prefetcher.startPrefetching(with: [url])
        prefetcher.startPrefetching(with: [ImageRequest(url: url)])  // already prefetching: skipped
        #expect(prefetcher.prefetchCount == 1)
        prefetcher.stopPrefetching(with: [ImageRequest(url: url)])
        #expect(prefetcher.prefetchCount == 0)
        prefetcher.startPrefetching(with: [ImageRequest(url: url, priority: .visible)])
        try #require(await loader.waitUntil { $0.heldURLs == [url] })
        #expect(loader.requests.last?.priority.current == .prefetch)
        prefetcher.stopPrefetching(with: [url])
        #expect(prefetcher.prefetchCount == 0)
        try #require(await loader.waitUntil { $0.cancelCount(url) == $0.loadCount(url) })
        // A picture in memory is not prefetched again.
        let answered = HeldLoader.immediate()
        let warm = makePipeline(loader: answered)
        _ = try await warm.image(for: ImageRequest(url: url))
        let warmPrefetcher = ImagePrefetcher(pipeline: warm)
        warmPrefetcher.startPrefetching(with: [url])
        #expect(warmPrefetcher.prefetchCount == 0 && answered.totalLoads == 1)
    }

    /// Memory pressure stops a screen's prefetches as it does the pipeline's own.
    @Test func memoryPressureStopsAPrefetchersPrefetches() async throws {
        let loader = HeldLoader()
        let events = EventRecorder()
        let pipeline = makePipeline(loader: loader, events: events)
        let prefetcher = ImagePrefetcher(pipeline: pipeline)
        let a = testURL(16, 16, 8), b = testURL(16, 16, 9)
        prefetcher.startPrefetching(with: [a])
        await pipeline.prefetch([ImageRequest(url: b)])
        try #require(await loader.waitUntil { $0.heldURLs.count == 2 })
        await pipeline.trimMemory(for: .critical)
        #expect(prefetcher.prefetchCount == 0)
        #expect(await pipeline.prefetchCount == 0)
        try #require(await loader.waitUntil { $0.cancelCount(a) == 1 && $0.cancelCount(b) == 1 })
        #expect(events.count { if case .memoryTrimmed(_, _, 2) = $0 { true } else { false } } == 1)
    }
}
