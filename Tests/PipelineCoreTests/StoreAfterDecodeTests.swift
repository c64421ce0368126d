import Foundation
import PipelineCore
import PipelineTestSupport
import Testing

/// Bytes reach the disk cache only once they decoded: one bad answer from a CDN edge must not
/// be served from disk, without asking the origin, for the rest of its max-age.
@Suite("The disk cache keeps only bytes that decoded", .timeLimit(.minutes(2)))
struct StoreAfterDecodeTests {
    static let fresh = ResponseMetadata(etag: "\"new\"", freshFor: 600)

    @Test func undecodableBytesAreNeverStoredAndTheNextRequestAsksAgain() async throws {
        let loader = HeldLoader(autoReply: { _ in .success(.data(FakeImage.data(width: 8, height: 8, corrupt: true), Self.fresh)) })
        let disk = InMemoryDataCache()
        let pipeline = makePipeline(loader: loader, diskCache: disk, negativeCacheLifetime: 0)
        let url = testURL(8, 8, 1)
        for attempt in 1...2 {
            await #expect(throws: ImagePipelineError.self) { try await pipeline.image(for: ImageRequest(url: url)) }
            #expect(loader.loadCount(url) == attempt)
        }
        #expect(disk.storeCount == 0 && disk.info(for: url) == nil)
    }

    @Test func bytesWithNoDecoderAreNeverStored() async throws {
        let html = Data("<html><body>oops</body></html>".utf8)
        let loader = HeldLoader(autoReply: { _ in .success(.data(html, Self.fresh)) })
        let disk = InMemoryDataCache()
        let pipeline = makePipeline(loader: loader, diskCache: disk)
        let url = testURL(8, 8, 2)
        do {
            _ = try await pipeline.image(for: ImageRequest(url: url))
            Issue.record("expected an error")
        } catch let error as ImagePipelineError {
            #expect(error == .decodingFailed(url, underlying: ImagePipelineError.noDecoder(format: nil, leadingBytes: html.prefix(32))))
            #expect(error.description.contains(url.absoluteString))
        }
        #expect(disk.storeCount == 0)
    }

    /// Two sizes share one download; the bytes are stored once, by the first decode done.
    @Test func sharedBytesAreStoredOnceAfterTheFirstDecode() async throws {
        let loader = HeldLoader()
        let disk = InMemoryDataCache()
        let pipeline = makePipeline(loader: loader, diskCache: disk)
        let url = testURL(64, 64, 3)
        async let small = pipeline.image(for: ImageRequest(url: url, width: 8, height: 8))
        async let large = pipeline.image(for: ImageRequest(url: url, width: 32, height: 32))
        try #require(await loader.waitUntil { $0.heldURLs == [url] })
        try #require(await eventually { pipeline.downloadWaiterCount(for: url) == 2 })
        loader.release(url, with: .success(.data(HeldLoader.fakeData(for: url), Self.fresh)))
        _ = try await (small, large)
        #expect(disk.storeCount == 1 && disk.info(for: url)?.etag == "\"new\"")
    }

    /// A stale entry whose revalidation brings a broken body keeps serving: the stored copy
    /// answers (with a warning), stays on disk, and its decoded copies are not dropped.
    @Test func aRevalidationIntoBrokenBytesKeepsServingTheStoredCopy() async throws {
        let loader = HeldLoader(autoReply: { _ in .success(.data(FakeImage.data(width: 8, height: 8, corrupt: true), Self.fresh)) })
        let disk = InMemoryDataCache()
        let clock = TestClock()
        let pipeline = makePipeline(loader: loader, diskCache: disk, clock: clock)
        let url = testURL(8, 8, 6)
        let stored = HeldLoader.fakeData(for: url)
        disk.seed(stored, info: CacheEntryInfo(etag: "\"old\"", freshUntil: clock.now.addingTimeInterval(-1)), for: url)

        let checked = try await pipeline.image(for: ImageRequest(url: url, revalidation: .revalidateBeforeAnswering))
        #expect(loader.loadCount(url) == 1)
        #expect(firstPixel(checked) == colorBytes(6))
        #expect(checked.warnings.contains { $0.contains("revalidated bytes did not decode") }, "\(checked.warnings)")
        #expect(await disk.cachedData(for: url)?.data == stored && disk.storeCount == 0)

        // Stale-while-revalidate: the background check's broken bytes replace nothing either.
        pipeline.memoryCache.removeAll()
        let quick = try await pipeline.image(for: ImageRequest(url: url))
        #expect(quick.source == .disk && firstPixel(quick) == colorBytes(6))
        await pipeline.waitForBackgroundWork()
        #expect(loader.loadCount(url) == 2)
        #expect(await disk.cachedData(for: url)?.data == stored && disk.storeCount == 0)
        #expect(pipeline.cachedImage(for: ImageRequest(url: url)) != nil)
    }

    /// New bytes that decode do replace the stored copy after a background revalidation.
    @Test func aBackgroundRevalidationStoresNewBytesThatDecode() async throws {
        let url = testURL(8, 8, 7)
        let newBytes = FakeImage.data(width: 8, height: 8, color: FakeImage.color(for: 9))
        let loader = HeldLoader(autoReply: { _ in .success(.data(newBytes, Self.fresh)) })
        let disk = InMemoryDataCache()
        let clock = TestClock()
        let pipeline = makePipeline(loader: loader, diskCache: disk, clock: clock)
        disk.seed(HeldLoader.fakeData(for: url), info: CacheEntryInfo(etag: "\"old\"", freshUntil: clock.now.addingTimeInterval(-1)),
                  for: url)
        let quick = try await pipeline.image(for: ImageRequest(url: url))
        #expect(firstPixel(quick) == colorBytes(7))
        await pipeline.waitForBackgroundWork()
        #expect(await disk.cachedData(for: url)?.data == newBytes && disk.storeCount == 1)
        #expect(pipeline.cachedImage(for: ImageRequest(url: url)) == nil)  // the old decoded copy is gone
        #expect(firstPixel(try await pipeline.image(for: ImageRequest(url: url))) == colorBytes(9))
    }
}
