import Foundation
import PipelineCore
import PipelineTestSupport
import Testing

@Suite("Cache policies, negative cache and the disk-cache slot", .timeLimit(.minutes(2)))
struct CachePolicyTests {
    @Test func reloadIgnoringCachesLoadsAgainAndReplacesTheMemoryEntry() async throws {
        let loader = HeldLoader.immediate()
        let disk = InMemoryDataCache()
        let pipeline = makePipeline(loader: loader, diskCache: disk)
        let url = testURL(32, 32, 1)
        _ = try await pipeline.image(for: ImageRequest(url: url))
        let reloaded = try await pipeline.image(for: ImageRequest(url: url, cachePolicy: .reloadIgnoringCaches))
        #expect(reloaded.source == .network)
        #expect(loader.loadCount(url) == 2)
        #expect(disk.storeCount == 2)
    }

    @Test func returnCacheDataDontLoadNeverLoads() async throws {
        let loader = HeldLoader.immediate()
        let disk = InMemoryDataCache()
        let pipeline = makePipeline(loader: loader, diskCache: disk)
        let url = testURL(32, 32, 2)
        await #expect(throws: ImagePipelineError.loadingFailed(url, underlying: ImagePipelineError.notCached)) {
            try await pipeline.image(for: ImageRequest(url: url, cachePolicy: .returnCacheDataDontLoad))
        }
        // A stale disk entry is good enough for this policy and is not revalidated.
        disk.seed(HeldLoader.fakeData(for: url), info: CacheEntryInfo(etag: "\"x\"", freshUntil: nil), for: url)
        let response = try await pipeline.image(for: ImageRequest(url: url, cachePolicy: .returnCacheDataDontLoad))
        #expect(response.source == .disk)
        await pipeline.waitForBackgroundWork()
        #expect(loader.totalLoads == 0)
    }

    @Test func aPermanentFailureIsRememberedUntilItsLifetimeEnds() async throws {
        let clock = TestClock()
        let loader = HeldLoader(autoReply: { _ in .failure(FakeLoadError.status(404)) })
        let pipeline = makePipeline(loader: loader, negativeCacheLifetime: 10, clock: clock)
        let url = testURL(32, 32, 3)
        for _ in 0..<3 {
            await #expect(throws: ImagePipelineError.loadingFailed(url, underlying: FakeLoadError.status(404))) { try await pipeline.image(for: ImageRequest(url: url)) }
        }
        #expect(loader.loadCount(url) == 1)
        clock.advance(11)
        await #expect(throws: ImagePipelineError.loadingFailed(url, underlying: FakeLoadError.status(404))) { try await pipeline.image(for: ImageRequest(url: url)) }
        #expect(loader.loadCount(url) == 2)
    }

    @Test func undecodableBytesArePermanentButTimeoutsAreNot() async throws {
        let loader = HeldLoader(autoReply: { request in
            if request.url.path.hasSuffix("/bad") {
                return .success(.data(FakeImage.data(width: 8, height: 8, corrupt: true), ResponseMetadata()))
            }
            return .failure(ImagePipelineError.timeout("connect"))
        })
        let decoder = CountingDecoder()
        let pipeline = makePipeline(loader: loader, decoders: DecoderRegistry([decoder]))
        let bad = URL(string: "test://host/bad")!, slow = URL(string: "test://host/slow")!
        for _ in 0..<2 {
            await #expect(throws: ImagePipelineError.self) { try await pipeline.image(for: ImageRequest(url: bad)) }
            await #expect(throws: ImagePipelineError.loadingFailed(slow, underlying: ImagePipelineError.timeout("connect"))) {
                try await pipeline.image(for: ImageRequest(url: slow))
            }
        }
        #expect(loader.loadCount(bad) == 1 && decoder.decodeCount == 1)
        #expect(loader.loadCount(slow) == 2)
    }

    @Test func aFreshDiskEntryIsServedWithoutLoading() async throws {
        let clock = TestClock()
        let loader = HeldLoader.immediate()
        let disk = InMemoryDataCache()
        let pipeline = makePipeline(loader: loader, diskCache: disk, clock: clock)
        let url = testURL(32, 32, 4)
        disk.seed(HeldLoader.fakeData(for: url), info: CacheEntryInfo(freshUntil: clock.now.addingTimeInterval(60)), for: url)
        let response = try await pipeline.image(for: ImageRequest(url: url))
        #expect(response.source == .disk)
        #expect(firstPixel(response) == colorBytes(4))
        await pipeline.waitForBackgroundWork()
        #expect(loader.totalLoads == 0)
    }

    @Test func aStaleEntryIsServedAtOnceAndRevalidatedInTheBackground() async throws {
        let clock = TestClock()
        let loader = HeldLoader()
        let disk = InMemoryDataCache()
        let pipeline = makePipeline(loader: loader, diskCache: disk, clock: clock)
        let url = testURL(32, 32, 5)
        disk.seed(HeldLoader.fakeData(for: url), info: CacheEntryInfo(etag: "\"v1\"", freshUntil: clock.now.addingTimeInterval(-1)), for: url)
        let response = try await pipeline.image(for: ImageRequest(url: url))  // answered while the check is held
        #expect(response.source == .disk)
        try #require(await loader.waitUntil { $0.heldURLs == [url] })
        #expect(loader.requests.first?.validator?.etag == "\"v1\"")
        var fresh = ResponseMetadata()
        fresh.freshFor = 100
        loader.release(url, with: .success(.notModified(fresh)))
        await pipeline.waitForBackgroundWork()
        #expect(disk.infoUpdateCount == 1 && disk.storeCount == 0)
        #expect(disk.info(for: url)?.isFresh(at: clock.now) == true)
        #expect(disk.info(for: url)?.etag == "\"v1\"")  // kept: the 304 carried no ETag
    }

    @Test func aRevalidationThatBringsNewBytesDropsTheOldPicturesFromMemory() async throws {
        let clock = TestClock()
        let loader = HeldLoader()
        let disk = InMemoryDataCache()
        let pipeline = makePipeline(loader: loader, diskCache: disk, clock: clock)
        let url = testURL(32, 32, 8)
        disk.seed(HeldLoader.fakeData(for: url), info: CacheEntryInfo(etag: "\"v1\"", freshUntil: clock.now.addingTimeInterval(-1)), for: url)
        let small = ImageRequest(url: url, width: 8, height: 8), large = ImageRequest(url: url, width: 16, height: 16)
        _ = try await pipeline.image(for: small)  // stale: served, revalidation held
        _ = try await pipeline.image(for: large)
        #expect(pipeline.cachedImage(for: small) != nil && pipeline.cachedImage(for: large) != nil)
        try #require(await loader.waitUntil { $0.heldURLs == [url] })
        var fresh = ResponseMetadata()
        fresh.freshFor = 100
        let newBytes = FakeImage.data(width: 32, height: 32, color: (1, 2, 3, 255))
        loader.release(url, with: .success(.data(newBytes, fresh)))
        await pipeline.waitForBackgroundWork()
        #expect(pipeline.cachedImage(for: small) == nil && pipeline.cachedImage(for: large) == nil)
        let updated = try await pipeline.image(for: small)
        #expect(updated.source == .disk && firstPixel(updated) == [1, 2, 3, 255])
    }

    @Test func cancellingAWaitForBackgroundWorkCancelsThatWork() async throws {
        let clock = TestClock()
        let loader = HeldLoader()
        let disk = InMemoryDataCache()
        let pipeline = makePipeline(loader: loader, diskCache: disk, clock: clock)
        let url = testURL(32, 32, 9)
        disk.seed(HeldLoader.fakeData(for: url), info: CacheEntryInfo(etag: "\"v1\"", freshUntil: nil), for: url)
        _ = try await pipeline.image(for: ImageRequest(url: url))  // stale: revalidation starts, held forever
        try #require(await loader.waitUntil { $0.heldURLs == [url] })
        // Cancelled before or while it waits: either way the wait ends and the held work is cancelled.
        let waiter = Task { await pipeline.waitForBackgroundWork() }
        waiter.cancel()
        await waiter.value  // would never return if the held revalidation were not cancelled
        #expect(loader.cancelCount(url) == 1)
    }

    @Test func revalidateBeforeAnsweringReportsRevalidatedOrServesStaleWhenOffline() async throws {
        let clock = TestClock()
        let loader = HeldLoader()
        let disk = InMemoryDataCache()
        let pipeline = makePipeline(loader: loader, diskCache: disk, clock: clock)
        let url = testURL(32, 32, 6)
        disk.seed(HeldLoader.fakeData(for: url), info: CacheEntryInfo(lastModified: "Sun, 06 Nov 1994 08:49:37 GMT"), for: url)
        let request = ImageRequest(url: url, revalidation: .revalidateBeforeAnswering)
        let first = Task { try await pipeline.image(for: request) }
        try #require(await loader.waitUntil { $0.heldURLs == [url] })
        #expect(loader.requests.last?.validator?.lastModified == "Sun, 06 Nov 1994 08:49:37 GMT")
        loader.release(url, with: .success(.notModified(ResponseMetadata())))
        #expect(try await first.value.source == .revalidated)

        pipeline.memoryCache.removeAll()
        let offline = Task { try await pipeline.image(for: request) }
        try #require(await loader.waitUntil { $0.heldURLs == [url] })
        loader.release(url, with: .failure(FakeLoadError.offline))
        let stale = try await offline.value
        #expect(stale.source == .disk && firstPixel(stale) == colorBytes(6))
    }

    @Test func fileURLsDoNotGoThroughTheDiskCacheByDefault() async throws {
        let loader = HeldLoader(schemes: ["file", "test"]) { .success(.data(HeldLoader.fakeData(for: $0.url), ResponseMetadata())) }
        let disk = InMemoryDataCache()
        let pipeline = makePipeline(loader: loader, diskCache: disk)
        _ = try await pipeline.image(for: ImageRequest(url: URL(fileURLWithPath: "/16x16/1")))
        #expect(disk.storeCount == 0)
        _ = try await pipeline.image(for: ImageRequest(url: testURL(16, 16, 1)))
        #expect(disk.storeCount == 1)
    }

    @Test func noStoreResponsesAreNotWrittenToDisk() async throws {
        let loader = HeldLoader { request in
            var metadata = ResponseMetadata()
            metadata.noStore = true
            return .success(.data(HeldLoader.fakeData(for: request.url), metadata))
        }
        let disk = InMemoryDataCache()
        let pipeline = makePipeline(loader: loader, diskCache: disk)
        _ = try await pipeline.image(for: ImageRequest(url: testURL(8, 8, 7)))
        #expect(disk.storeCount == 0)
    }

    @Test func anUnknownSchemeOrFormatIsATypedError() async throws {
        let gif = Data("GIF89a".utf8) + Data(count: 20)
        let loader = HeldLoader { _ in .success(.data(gif, ResponseMetadata())) }
        let pipeline = makePipeline(loader: loader)
        let ftp = URL(string: "ftp://x/y")!
        await #expect(throws: ImagePipelineError.loadingFailed(ftp, underlying: ImagePipelineError.noLoader(scheme: "ftp"))) {
            try await pipeline.image(for: ImageRequest(url: ftp))
        }
        do {
            _ = try await pipeline.image(for: ImageRequest(url: testURL()))
            Issue.record("expected an error")
        } catch let error as ImagePipelineError {
            #expect(error == .decodingFailed(testURL(), underlying: ImagePipelineError.noDecoder(format: .gif)))
            #expect(error.underlyingError as? ImagePipelineError == .noDecoder(format: .gif))
            #expect(error.description == "cannot decode \(testURL().absoluteString): GIF data, but no GIF decoder is registered: "
                    + "link CodecGIF and register `GIFDecoder()`")
            #expect(error.localizedDescription == error.description)
        }
    }

    @Test func theHeaderPixelLimitRefusesABombBeforeDecoding() async throws {
        let loader = HeldLoader { _ in .success(.data(FakeImage.data(width: 60_000, height: 60_000), ResponseMetadata())) }
        let decoder = CountingDecoder()
        var configuration = ImagePipeline.Configuration(decoders: DecoderRegistry([decoder]), loaders: LoaderRegistry([loader]))
        configuration.maxPixelCount = 1_000_000
        let pipeline = ImagePipeline(configuration: configuration)
        let limit = ImagePipelineError.tooManyPixels(PixelSize(width: 60_000, height: 60_000), limit: 1_000_000)
        await #expect(throws: ImagePipelineError.decodingFailed(testURL(), underlying: limit)) {
            try await pipeline.image(for: ImageRequest(url: testURL(), width: 10, height: 10))
        }
        #expect(decoder.decodeCount == 0)
    }
}
