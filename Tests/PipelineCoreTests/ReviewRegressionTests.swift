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

@Suite("Review regressions", .timeLimit(.minutes(2)))
struct ReviewRegressionTests {
    /// A cache-only request in flight must not answer a caller that may load with `notCached`.
    @Test func aLoadingRequestDoesNotJoinACacheOnlyRequest() async throws {
        let loader = HeldLoader.immediate()
        let disk = GatedDataCache()
        let pipeline = makePipeline(loader: loader, diskCache: disk)
        let url = testURL(16, 16, 1)
        let cacheOnly = Task { try await pipeline.image(for: ImageRequest(url: url, cachePolicy: .returnCacheDataDontLoad)) }
        #expect(await eventually { disk.lookups == 1 })
        let normal = Task { try await pipeline.image(for: ImageRequest(url: url)) }
        // Same download (fetch URL), another decode key.
        let otherSize = Task { try await pipeline.image(for: ImageRequest(url: url, width: 8, height: 8)) }
        try await Task.sleep(nanoseconds: 20_000_000)
        disk.open()
        await #expect(throws: ImagePipelineError.notCached) { try await cacheOnly.value }
        let response = try await normal.value
        #expect(response.source == .network && firstPixel(response) == colorBytes(1))
        #expect(try await otherSize.value.bitmap.size == PixelSize(width: 8, height: 8))
        #expect(loader.loadCount(url) == 1)
    }
}
