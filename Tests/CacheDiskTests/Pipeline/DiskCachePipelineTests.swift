import CacheDisk
import Foundation
import LoaderHTTP
import PipelineCore
import PipelineTestSupport
import Testing

@Suite("The real pipeline over a DiskCache: freshness, 304, stale-while-revalidate, offline", .timeLimit(.minutes(2)))
struct DiskCachePipelineTests {
    @Test func a304RefreshesTheInfoWithoutRewritingTheBody() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let clock = TestClock()
        let disk = try makeCache(directory)
        let loader = HeldLoader { request in
            request.validator == nil
                ? .success(.data(HeldLoader.fakeData(for: request.url), metadata(maxAge: 10, etag: "\"v1\"")))
                : .success(.notModified(metadata(maxAge: 100)))
        }
        let pipeline = makePipeline(loader: loader, diskCache: disk, clock: clock)
        let url = testURL(32, 32, 1)
        #expect(try await pipeline.image(for: ImageRequest(url: url)).source == .network)
        let identity = try #require(FileIdentity(directory.entryPath(url)))
        let bytes = try Data(contentsOf: URL(fileURLWithPath: directory.entryPath(url)))

        clock.advance(20)  // stale now
        pipeline.memoryCache.removeAll()
        let request = ImageRequest(url: url, revalidation: .revalidateBeforeAnswering)
        #expect(try await pipeline.image(for: request).source == .revalidated)
        #expect(loader.requests.last?.validator?.etag == "\"v1\"")
        #expect(FileIdentity(directory.entryPath(url)) == identity)  // same inode, size and mtime
        #expect(try Data(contentsOf: URL(fileURLWithPath: directory.entryPath(url))) == bytes)
        let info = try #require(await disk.cachedData(for: url)?.info)
        #expect(info.etag == "\"v1\"" && info.freshUntil == clock.now.addingTimeInterval(100))

        // Fresh again: served from disk with no load, also by a new cache on the directory.
        pipeline.memoryCache.removeAll()
        let reopened = makePipeline(loader: loader, diskCache: try makeCache(directory), clock: clock)
        #expect(try await reopened.image(for: ImageRequest(url: url)).source == .disk)
        #expect(loader.loadCount(url) == 2)
    }

    @Test func aStaleEntryIsServedAtOnceAndUpdatedLater() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let clock = TestClock()
        let disk = try makeCache(directory)
        let loader = HeldLoader()
        let pipeline = makePipeline(loader: loader, diskCache: disk, clock: clock)
        let url = testURL(16, 16, 2)
        await disk.storeData(HeldLoader.fakeData(for: url),
                             info: CacheEntryInfo(etag: "\"v1\"", freshUntil: clock.now.addingTimeInterval(-1)), for: url)

        // The check is held, yet the answer comes from the stale copy.
        let first = try await pipeline.image(for: ImageRequest(url: url))
        #expect(first.source == .disk)
        try #require(await loader.waitUntil { $0.heldURLs == [url] })
        #expect(loader.requests.first?.validator?.etag == "\"v1\"")
        // The origin has a new picture: it replaces the entry in the background.
        let newBytes = FakeImage.data(width: 16, height: 16, color: FakeImage.color(for: 9))
        loader.release(url, with: .success(.data(newBytes, metadata(maxAge: 60, etag: "\"v2\""))))
        await pipeline.waitForBackgroundWork()
        let updated = try #require(await disk.cachedData(for: url))
        #expect(updated.data == newBytes && updated.info.etag == "\"v2\"" && updated.info.isFresh(at: clock.now))

        // Stale again, and this time a 304: only the info changes.
        clock.advance(120)
        pipeline.memoryCache.removeAll()
        let identity = try #require(FileIdentity(directory.entryPath(url)))
        #expect(try await pipeline.image(for: ImageRequest(url: url)).source == .disk)
        try #require(await loader.waitUntil { $0.heldURLs == [url] })
        loader.release(url, with: .success(.notModified(metadata(maxAge: 60))))
        await pipeline.waitForBackgroundWork()
        #expect(await disk.cachedData(for: url)?.info.isFresh(at: clock.now) == true)
        #expect(FileIdentity(directory.entryPath(url)) == identity)
    }

    @Test func offlineAStaleEntryKeepsServing() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let clock = TestClock()
        let disk = try makeCache(directory)
        let loader = HeldLoader { _ in .failure(FakeLoadError.offline) }
        let pipeline = makePipeline(loader: loader, diskCache: disk, clock: clock)
        let url = testURL(8, 8, 3)
        await disk.storeData(HeldLoader.fakeData(for: url), info: CacheEntryInfo(lastModified: "Sun, 06 Nov 1994 08:49:37 GMT"), for: url)

        for revalidation in [RevalidationPolicy.staleWhileRevalidate, .revalidateBeforeAnswering] {
            pipeline.memoryCache.removeAll()
            let response = try await pipeline.image(for: ImageRequest(url: url, revalidation: revalidation))
            #expect(response.source == .disk)
            await pipeline.waitForBackgroundWork()
        }
        #expect(loader.loadCount(url) == 2)
        #expect(await disk.cachedData(for: url)?.data == HeldLoader.fakeData(for: url))  // kept

        // Cached data only: served with no load at all; a missing entry is `notCached`.
        pipeline.memoryCache.removeAll()
        let cachedOnly = try await pipeline.image(for: ImageRequest(url: url, cachePolicy: .returnCacheDataDontLoad))
        #expect(cachedOnly.source == .disk && loader.loadCount(url) == 2)
        await #expect(throws: ImagePipelineError.loadingFailed(testURL(8, 8, 4), underlying: ImagePipelineError.notCached)) {
            try await pipeline.image(for: ImageRequest(url: testURL(8, 8, 4), cachePolicy: .returnCacheDataDontLoad))
        }
    }

    @Test func noStoreIsNotWrittenAndNoCacheIsRevalidatedEveryTime() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let clock = TestClock()
        let disk = try makeCache(directory)
        let loader = HeldLoader { request in
            let header = request.url.path.hasSuffix("/5") ? "no-store" : "no-cache, max-age=3600"
            if request.validator != nil { return .success(.notModified(ResponseMetadata())) }
            return .success(.data(HeldLoader.fakeData(for: request.url),
                                  HTTPResponseHeaders(statusCode: 200, headers: [("Cache-Control", header), ("ETag", "\"n\"")]).metadata()))
        }
        let pipeline = makePipeline(loader: loader, diskCache: disk, clock: clock)
        let noStore = testURL(8, 8, 5), noCache = testURL(8, 8, 6)
        _ = try await pipeline.image(for: ImageRequest(url: noStore))
        _ = try await pipeline.image(for: ImageRequest(url: noCache))
        #expect(!FileManager.default.fileExists(atPath: directory.entryPath(noStore)))
        #expect(await disk.cachedData(for: noCache)?.info.freshUntil == clock.now)  // stored, never fresh
        pipeline.memoryCache.removeAll()
        let again = try await pipeline.image(for: ImageRequest(url: noCache, revalidation: .revalidateBeforeAnswering))
        #expect(again.source == .revalidated && loader.requests.last?.validator?.etag == "\"n\"")
    }

    /// A FIFO where the entry would be is a miss: the picture is loaded (no thread waits in
    /// `open` for a writer) and stored as a regular file in its place.
    @Test func aFIFOAtAnEntryPathIsAMissAndThePictureIsLoaded() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let clock = TestClock()
        let disk = try makeCache(directory)
        let loader = HeldLoader { .success(.data(HeldLoader.fakeData(for: $0.url), metadata(maxAge: 60))) }
        let pipeline = makePipeline(loader: loader, diskCache: disk, clock: clock)
        let url = testURL(16, 16, 7), path = directory.entryPath(url)
        try FileManager.default.createDirectory(atPath: (path as NSString).deletingLastPathComponent,
                                                withIntermediateDirectories: true)
        #expect(mkfifo(path, 0o644) == 0)
        defer { releaseFIFO(path) }
        let response = try await withDeadline { try await pipeline.image(for: ImageRequest(url: url)) }
        #expect(response.source == .network && loader.loadCount(url) == 1)
        await pipeline.waitForBackgroundWork()
        #expect(isRegularFile(path))
        #expect(try await withDeadline { await disk.cachedData(for: url) }?.data == HeldLoader.fakeData(for: url))
    }
}

@Suite("HTTP freshness headers, stored and read back")
struct DiskCacheFreshnessTests {
    let received = Date(timeIntervalSince1970: 784_111_777)  // Sun, 06 Nov 1994 08:49:37 GMT

    /// The fresh-until a response with `headers` gets after a round trip through a new cache.
    func storedFreshUntil(_ headers: [(String, String)]) async throws -> Date? {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let metadata = HTTPResponseHeaders(statusCode: 200, headers: headers.map { (name: $0.0, value: $0.1) })
            .metadata(receivedAt: received)
        let url = URL(string: "test://host/headers")!
        await (try makeCache(directory)).storeData(Data("x".utf8), info: CacheEntryInfo(metadata, receivedAt: received), for: url)
        return try #require(await (try makeCache(directory)).cachedData(for: url)).info.freshUntil
    }

    @Test func maxAgeCountsFromReceiptAndSMaxAgeIsIgnored() async throws {
        #expect(try await storedFreshUntil([("Cache-Control", "public, max-age=600")]) == received.addingTimeInterval(600))
        #expect(try await storedFreshUntil([("Cache-Control", "s-maxage=600")]) == nil)
        #expect(try await storedFreshUntil([("cache-control", "s-maxage=5, max-age=60")]) == received.addingTimeInterval(60))
        #expect(try await storedFreshUntil([("Cache-Control", "max-age=0")]) == received)
    }

    @Test func expiresCountsFromDateAndAgeIsSubtracted() async throws {
        #expect(try await storedFreshUntil([("Expires", "Sun, 06 Nov 1994 09:49:37 GMT"),
                                            ("Date", "Sun, 06 Nov 1994 08:49:37 GMT")]) == received.addingTimeInterval(3600))
        #expect(try await storedFreshUntil([("Cache-Control", "max-age=600"), ("Age", "100")]) == received.addingTimeInterval(500))
        // Sent 50 s before it arrived (by the server's Date) and 20 s old on the way: 50 counts.
        #expect(try await storedFreshUntil([("Cache-Control", "max-age=600"), ("Age", "20"),
                                            ("Date", "Sun, 06 Nov 1994 08:48:47 GMT")]) == received.addingTimeInterval(550))
        #expect(try await storedFreshUntil([("Expires", "garbage")])! < received)
        #expect(try await storedFreshUntil([("Cache-Control", "max-age=60"), ("Expires", "garbage")]) == received.addingTimeInterval(60))
    }

    @Test func noCacheIsNeverFreshAndNoStoreIsFlagged() async throws {
        let noCache = try await storedFreshUntil([("Cache-Control", "no-cache"), ("Cache-Control", "max-age=3600")])
        #expect(noCache == received)
        #expect(!CacheEntryInfo(freshUntil: noCache).isFresh(at: received))
        #expect(HTTPResponseHeaders(statusCode: 200, headers: [("Cache-Control", "private, NO-STORE")]).metadata().noStore)
        #expect(try await storedFreshUntil([]) == nil)
    }
}
