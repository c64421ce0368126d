import Foundation
import PipelineCore
import PipelineTestSupport
import Testing

@Suite("Coalescing and cancellation", .timeLimit(.minutes(2)))
struct CoalescingTests {
    @Test func twoCallersShareOneDownloadAndOneDecode() async throws {
        let loader = HeldLoader()
        let decoder = CountingDecoder()
        let pipeline = makePipeline(loader: loader, decoders: DecoderRegistry([decoder]))
        let url = testURL(100, 80, 1)
        let request = ImageRequest(url: url, width: 50, height: 50)
        async let a = pipeline.image(for: request)
        async let b = pipeline.image(for: request)
        try #require(await loader.waitUntil { $0.heldURLs.count == 1 })
        // Both callers wait in the one decode: a second load or decode could not start now.
        try #require(await pipeline.waitForWaiters(2, for: request))
        #expect(loader.releaseWithFakeData(url) == 1)
        let (ra, rb) = try await (a, b)
        #expect(loader.loadCount(url) == 1)
        #expect(decoder.decodeCount == 1)
        #expect(ra.bitmap.size == PixelSize(width: 50, height: 40))
        #expect(firstPixel(ra) == colorBytes(1) && firstPixel(rb) == colorBytes(1))
    }

    @Test func requestsInOneWidthBucketShareTheDownloadButDecodeTwice() async throws {
        let loader = HeldLoader.immediate()
        let decoder = CountingDecoder()
        let pipeline = makePipeline(loader: loader, decoders: DecoderRegistry([decoder]), urlBuilder: WidthBucketURLBuilder())
        let url = URL(string: "https://cdn.example/1000x1000/3")!
        let fetchURL = URL(string: "https://cdn.example/1000x1000/3?w=160")!
        async let a = pipeline.image(for: ImageRequest(url: url, width: 150, height: 150))
        async let b = pipeline.image(for: ImageRequest(url: url, width: 160, height: 160))
        let (ra, rb) = try await (a, b)
        #expect(pipeline.fetchURL(for: ImageRequest(url: url, width: 150, height: 150)) == fetchURL)
        #expect(loader.loadOrder == [fetchURL])
        #expect(decoder.decodeCount == 2)
        #expect(ra.bitmap.size == PixelSize(width: 150, height: 150))
        #expect(rb.bitmap.size == PixelSize(width: 160, height: 160))
    }

    @Test func cancellingOneOfTwoWaitersKeepsTheDownload() async throws {
        let loader = HeldLoader()
        let pipeline = makePipeline(loader: loader)
        let url = testURL(64, 64, 2)
        let request = ImageRequest(url: url)
        let first = Task { try await pipeline.image(for: request) }
        let second = Task { try await pipeline.image(for: request) }
        try #require(await loader.waitUntil { $0.heldURLs.count == 1 })
        first.cancel()
        // The cancelled caller leaves at once, while the load is still held.
        await #expect(throws: CancellationError.self) { try await first.value }
        #expect(loader.cancelCount(url) == 0)
        loader.releaseWithFakeData(url)
        let response = try await second.value
        #expect(firstPixel(response) == colorBytes(2))
        #expect(loader.loadCount(url) == 1 && loader.cancelCount(url) == 0)
    }

    @Test func cancellingTheLastWaiterCancelsTheDownload() async throws {
        let loader = HeldLoader()
        let pipeline = makePipeline(loader: loader)
        let url = testURL(64, 64, 3)
        let tasks = (0..<2).map { _ in Task { try await pipeline.image(for: ImageRequest(url: url)) } }
        try #require(await loader.waitUntil { $0.heldURLs.count == 1 })
        for task in tasks { task.cancel() }
        for task in tasks { await #expect(throws: CancellationError.self) { try await task.value } }
        try #require(await loader.waitUntil { $0.cancelCount(url) == 1 })
        #expect(loader.heldURLs.isEmpty)
    }

    @Test func aFailureReachesEveryWaiter() async throws {
        let loader = HeldLoader()
        let pipeline = makePipeline(loader: loader)
        let url = testURL(64, 64, 4)
        let tasks = (0..<5).map { _ in Task { try await pipeline.image(for: ImageRequest(url: url)) } }
        try #require(await loader.waitUntil { $0.heldURLs.count == 1 })
        try #require(await pipeline.waitForWaiters(5, for: ImageRequest(url: url)))
        loader.release(url, with: .failure(FakeLoadError.status(500)))
        for task in tasks {
            await #expect(throws: ImagePipelineError.loadingFailed(url, underlying: FakeLoadError.status(500))) { try await task.value }
        }
        #expect(loader.loadCount(url) == 1)
    }

    @Test func aNewRequestAfterAFailureStartsFresh() async throws {
        let loader = HeldLoader()
        let pipeline = makePipeline(loader: loader)
        let url = testURL(64, 64, 5)
        let failing = Task { try await pipeline.image(for: ImageRequest(url: url)) }
        try #require(await loader.waitUntil { $0.heldURLs.count == 1 })
        loader.release(url, with: .failure(ImagePipelineError.timeout("idle")))
        await #expect(throws: ImagePipelineError.loadingFailed(url, underlying: ImagePipelineError.timeout("idle"))) {
            try await failing.value
        }
        let retry = Task { try await pipeline.image(for: ImageRequest(url: url)) }
        try #require(await loader.waitUntil { $0.heldURLs.count == 1 })
        loader.releaseWithFakeData(url)
        #expect(firstPixel(try await retry.value) == colorBytes(5))
        #expect(loader.loadCount(url) == 2)
    }

    @Test func aThousandConcurrentRequestsForFiftyURLsLoadAndDecodeFiftyTimes() async throws {
        let loader = HeldLoader.immediate()
        let decoder = CountingDecoder(delay: 0.002)
        let pipeline = makePipeline(loader: loader, decoders: DecoderRegistry([decoder]))
        let results = try await withThrowingTaskGroup(of: (Int, [UInt8]).self) { group in
            for i in 0..<1000 {
                let n = i % 50
                group.addTask {
                    let response = try await pipeline.image(for: ImageRequest(url: testURL(40, 40, n), width: 20, height: 20))
                    return (n, firstPixel(response))
                }
            }
            return try await group.reduce(into: [(Int, [UInt8])]()) { $0.append($1) }
        }
        #expect(results.count == 1000)
        #expect(results.allSatisfy { colorBytes($0.0) == $0.1 })
        #expect(loader.totalLoads == 50)
        #expect(decoder.decodeCount == 50)
        #expect(decoder.peakConcurrentDecodes <= 2)
    }

    @Test func aMemoryHitDoesNotLoadOrDecodeAgain() async throws {
        let loader = HeldLoader.immediate()
        let decoder = CountingDecoder()
        let events = EventRecorder()
        let pipeline = makePipeline(loader: loader, decoders: DecoderRegistry([decoder]), events: events)
        let request = ImageRequest(url: testURL(64, 64, 6), width: 32, height: 32)
        let first = try await pipeline.image(for: request)
        let second = try await pipeline.image(for: request)
        #expect(first.source == .network && second.source == .memory)
        #expect(pipeline.cachedImage(for: request)?.bitmap == first.bitmap)
        #expect(loader.totalLoads == 1 && decoder.decodeCount == 1)
        #expect(events.count { if case .memoryHit = $0 { true } else { false } } == 1)
        #expect(events.count { if case .loaded(_, let bytes) = $0 { bytes == 12 } else { false } } == 1)
        #expect(events.count { if case .decoded = $0 { true } else { false } } == 1)
        #expect(events.count { if case .completed = $0 { true } else { false } } == 2)
    }

    @Test func decodesRunOnTheBoundedPoolAtMostTheConfiguredNumberAtOnce() async throws {
        let loader = HeldLoader.immediate()
        let decoder = CountingDecoder(delay: 0.01)
        let pipeline = makePipeline(loader: loader, decoders: DecoderRegistry([decoder]), maxConcurrentDecodes: 1)
        try await withThrowingTaskGroup(of: Void.self) { group in
            for n in 0..<8 {
                group.addTask { _ = try await pipeline.image(for: ImageRequest(url: testURL(16, 16, n))) }
            }
            try await group.waitForAll()
        }
        #expect(decoder.decodeCount == 8)
        #expect(decoder.peakConcurrentDecodes == 1)
    }
}
