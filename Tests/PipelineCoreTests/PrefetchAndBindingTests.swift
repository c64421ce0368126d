import Foundation
import PipelineCore
import PipelineTestSupport
import Testing

@Suite("Prefetch, priorities and target binding", .timeLimit(.minutes(2)))
struct PrefetchAndBindingTests {
    @Test func aVisibleCallerJoiningAPrefetchRaisesItsPriority() async throws {
        let loader = HeldLoader()
        let pipeline = makePipeline(loader: loader)
        let url = testURL(16, 16, 1)
        await pipeline.prefetch([ImageRequest(url: url)])
        try #require(await loader.waitUntil { $0.heldURLs == [url] })
        let handle = try #require(loader.requests.first?.priority)
        #expect(handle.current == .prefetch)
        let visible = Task { try await pipeline.image(for: ImageRequest(url: url)) }
        try #require(await eventually { handle.current == .visible })
        loader.releaseWithFakeData(url)
        _ = try await visible.value
        #expect(loader.loadCount(url) == 1)
    }

    @Test func cancellingAPrefetchCancelsItsLoadUnlessAVisibleCallerWaits() async throws {
        let loader = HeldLoader()
        let pipeline = makePipeline(loader: loader)
        let alone = testURL(16, 16, 2), shared = testURL(16, 16, 3)
        await pipeline.prefetch([ImageRequest(url: alone), ImageRequest(url: shared)])
        try #require(await loader.waitUntil { $0.heldURLs.count == 2 })
        let visible = Task { try await pipeline.image(for: ImageRequest(url: shared)) }
        try #require(await eventually { pipeline.waiterCount(for: ImageRequest(url: shared)) == 2 })
        await pipeline.cancelPrefetch([ImageRequest(url: alone), ImageRequest(url: shared)])
        try #require(await loader.waitUntil { $0.cancelCount(alone) == 1 })
        loader.releaseWithFakeData(shared)
        #expect(firstPixel(try await visible.value) == colorBytes(3))
        #expect(loader.cancelCount(shared) == 0)
        try #require(await eventually { await pipeline.prefetchCount == 0 })
    }

    @Test func prefetchedPicturesAreInMemoryAfterwards() async throws {
        let loader = HeldLoader.immediate()
        let pipeline = makePipeline(loader: loader)
        let requests = (0..<10).map { ImageRequest(url: testURL(32, 32, $0), width: 16, height: 16) }
        await pipeline.prefetch(requests)
        await pipeline.waitForBackgroundWork()
        #expect(requests.allSatisfy { pipeline.cachedImage(for: $0) != nil })
        await pipeline.prefetch(requests)  // all cached: nothing new starts
        #expect(await pipeline.prefetchCount == 0)
        #expect(loader.totalLoads == 10)
    }

    @Test @MainActor func aMemoryHitIsDisplayedSynchronouslyInsideBind() async throws {
        let loader = HeldLoader.immediate()
        let pipeline = makePipeline(loader: loader)
        let request = ImageRequest(url: testURL(16, 16, 4))
        _ = try await pipeline.image(for: request)
        var shown: [ImageResponse?] = []
        let binding = ImageTargetBinding(pipeline: pipeline) { shown.append($0) }
        binding.bind(request)
        #expect(shown.count == 1 && shown[0]?.source == .memory)
        #expect(!binding.isLoading)
    }

    @Test @MainActor func aLateResultForAnOldRequestIsDropped() async throws {
        let loader = HeldLoader()
        let pipeline = makePipeline(loader: loader)
        let old = testURL(16, 16, 5), new = testURL(16, 16, 6)
        let binding = ImageTargetBinding(pipeline: pipeline) { _ in }
        binding.bind(ImageRequest(url: old))
        binding.bind(ImageRequest(url: new))
        try #require(await loader.waitUntil { $0.heldURLs.contains(new) })
        loader.releaseWithFakeData(old)  // if it was still held, it must not show
        loader.releaseWithFakeData(new)
        try #require(await eventually { binding.displayed != nil })
        #expect(binding.displayed.map(firstPixel) == colorBytes(6))
    }

    /// A grid of reused cells flung through many pictures: each rebind cancels the old load,
    /// replies arrive in random order and late; no cell may end showing another's picture.
    @Test @MainActor func flingingAGridOfReusedCellsNeverShowsTheWrongPicture() async throws {
        let loader = HeldLoader()
        let pipeline = makePipeline(loader: loader, memoryCache: MemoryCache(costLimit: 16 * 16 * 4 * 40), maxConcurrentDecodes: 2)
        var generator = SeededGenerator(seed: 42)
        let cellCount = 300, rebindsPerCell = 20, pictureCount = 900
        var cells: [ImageTargetBinding] = []
        var expected: [Int] = []
        var displayChanges = 0
        for _ in 0..<cellCount {
            cells.append(ImageTargetBinding(pipeline: pipeline) { _ in displayChanges += 1 })
            expected.append(-1)
        }
        for round in 0..<rebindsPerCell {
            for cell in 0..<cellCount where Int(generator.next() % 3) != 0 || round == rebindsPerCell - 1 {
                let picture = Int(generator.next() % UInt64(pictureCount))
                expected[cell] = picture
                cells[cell].bind(ImageRequest(url: testURL(16, 16, picture), width: 8, height: 8))
            }
            // Release a random part of what is held, so replies arrive late and out of order.
            for url in loader.heldURLs.shuffled(using: &generator).prefix(40) { loader.releaseWithFakeData(url) }
            await Task.yield()
        }
        // Release everything until all cells have settled.
        let settled = await eventually {
            for url in loader.heldURLs { loader.releaseWithFakeData(url) }
            return cells.allSatisfy { !$0.isLoading }
        }
        #expect(settled)
        for (index, cell) in cells.enumerated() {
            let shown = cell.displayed.map(firstPixel)
            #expect(shown == colorBytes(expected[index]), "cell \(index) shows the wrong picture")
            #expect(cell.request?.url == testURL(16, 16, expected[index]))
        }
        #expect(displayChanges > cellCount)
        #expect(loader.requests.count < cellCount * rebindsPerCell)  // coalescing and memory hits saved loads
    }
}
