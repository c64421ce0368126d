import CacheDisk
import Foundation
import LoaderHTTP
import PipelineCore
import PipelineTestSupport
import Testing

@Suite("ImagePipeline over HTTPDataLoader", .timeLimit(.minutes(2)))
struct PipelineHTTPTests {
    @Test func twentyConcurrentRequestsForOneURLDownloadOnce() async throws {
        try await withFixtureServer { server in
            let pipeline = makePipeline(loader: HTTPDataLoader(), decoders: fixtureDecoders, negativeCacheLifetime: 0)
            let url = server.url("/delay/shared?ms=150")
            try await withThrowingTaskGroup(of: PixelSize.self) { group in
                for _ in 0..<20 {
                    group.addTask { try await pipeline.image(for: ImageRequest(url: url)).bitmap.size }
                }
                for try await size in group { #expect(size == PixelSize(width: 4, height: 3)) }
            }
            #expect(try await server.hits("/delay/shared") == 1)
        }
    }

    @Test func cancellingTheLastWaiterStopsTheTransfer() async throws {
        try await withFixtureServer { server in
            let pipeline = makePipeline(loader: HTTPDataLoader(), decoders: fixtureDecoders, negativeCacheLifetime: 0)
            // 12,000 chunks 10 ms apart: two minutes of body, so on a starved machine the transfer
            // cannot end on its own before the test cancels it (with 500 chunks it once did, and
            // the server never saw a disconnect).
            let url = server.url("/slow/shared?chunks=12000&interval_ms=10&chunk=1000")
            let first = Task { try await pipeline.image(for: ImageRequest(url: url)) }
            let second = Task { try await pipeline.image(for: ImageRequest(url: url)) }
            #expect(try await eventually { (try await server.stats().sent["/slow/shared"] ?? 0) >= 5000 })
            first.cancel()
            await #expect(throws: CancellationError.self) { _ = try await first.value }
            // The body goes on for the other waiter: more of it is sent after the cancellation.
            let sentAtCancel = try await server.stats().sent["/slow/shared"] ?? 0
            #expect(try await eventually { (try await server.stats().sent["/slow/shared"] ?? 0) >= sentAtCancel + 2000 })
            #expect(try await server.stats().disconnects["/slow/shared"] == nil)  // the other waiter keeps it

            let cancelledAt = Date().timeIntervalSince1970
            second.cancel()
            await #expect(throws: CancellationError.self) { _ = try await second.value }
            #expect(try await eventually { try await server.stats().disconnects["/slow/shared"] != nil })
            let stopped = try #require(try await server.stats().disconnects["/slow/shared"]) - cancelledAt
            print("pipeline: last waiter cancelled → server saw the socket close: \(Int(stopped * 1000)) ms")
            // Run to its end, the body would take about two minutes more; promptly is well under
            // that (0–10 ms alone; 2.5 s once beside the other suites on a starved 2-core
            // machine, which must not fail the test).
            #expect(stopped < 30)
            #expect(try await server.hits("/slow/shared") == 1)
        }
    }

    /// One connection, busy: three prefetches queue, then two visible requests and a visible
    /// request that joins the third prefetch. The visible ones (and the joined prefetch) go first.
    @Test func visibleRequestsOvertakeQueuedPrefetches() async throws {
        try await withFixtureServer { server in
            let loader = HTTPDataLoader(configuration: .init(maxConnectionsPerHost: 1))
            let pipeline = makePipeline(loader: loader, decoders: fixtureDecoders, negativeCacheLifetime: 0)
            let blocker = Task { try await pipeline.image(for: ImageRequest(url: server.url("/hold/blocker"))) }
            #expect(try await eventually { try await server.hits("/hold/blocker") == 1 })
            let prefetches = (0..<3).map { ImageRequest(url: server.url("/image/p\($0)"), priority: .prefetch) }
            await pipeline.prefetch(prefetches)
            #expect(await eventually { loader.queuedCount == 3 })
            var visible = (0..<2).map { ImageRequest(url: server.url("/image/v\($0)")) }
            visible.append(ImageRequest(url: server.url("/image/p2")))
            let tasks = visible.map { request in Task { try await pipeline.image(for: request) } }
            #expect(await eventually { loader.queuedCount == 5 })
            try await server.release("blocker")
            _ = try await blocker.value
            for task in tasks { _ = try await task.value }
            await pipeline.waitForBackgroundWork()

            let log = try await server.stats().log
            #expect(log.count == 6)
            #expect(Set(log[1...3]) == ["/image/v0", "/image/v1", "/image/p2"])
            #expect(Set(log[4...5]) == ["/image/p0", "/image/p1"])
        }
    }

    @Test func notModifiedRefreshesTheDiskEntryWithoutDownloadingAgain() async throws {
        try await withFixtureServer { server in
            let cache = InMemoryDataCache()
            let pipeline = makePipeline(loader: HTTPDataLoader(), decoders: fixtureDecoders, diskCache: cache, negativeCacheLifetime: 0)
            let url = server.url("/image/r?maxage=0&maxage304=3600")
            let request = ImageRequest(url: url, revalidation: .revalidateBeforeAnswering)

            #expect(try await pipeline.image(for: request).source == .network)
            #expect(cache.info(for: url)?.isFresh(at: Date()) == false)  // max-age=0: stale at once
            pipeline.memoryCache.removeAll()
            #expect(try await pipeline.image(for: request).source == .revalidated)
            let info = try #require(cache.info(for: url))
            #expect(info.isFresh(at: Date().addingTimeInterval(3000)))
            #expect(info.etag == "\"r-2000\"")
            #expect(cache.storeCount == 1)
            #expect(cache.infoUpdateCount == 1)

            pipeline.memoryCache.removeAll()
            #expect(try await pipeline.image(for: request).source == .disk)  // fresh now: no request
            #expect(try await server.stats().statuses["/image/r"] == [200, 304])
        }
    }

    /// A stale entry whose revalidation brings a broken answer (bytes that do not decode, a 206,
    /// an empty 200) keeps answering from disk, and its stored bytes stay as they were.
    @Test("a stale entry outlives a broken revalidation", arguments: ["junk", "partial", "empty"])
    func staleEntryOutlivesABrokenRevalidation(_ answer: String) async throws {
        try await withFixtureServer { server in
            try await withDiskCache { disk, _ in
                let pipeline = makePipeline(loader: HTTPDataLoader(configuration: strictLimits), decoders: fixtureDecoders, diskCache: disk, negativeCacheLifetime: 0)
                let url = server.url("/flip/s?then=\(answer)")
                let request = ImageRequest(url: url, revalidation: .revalidateBeforeAnswering)
                let first = try await pipeline.image(for: request)
                #expect(first.source == .network)
                let stored = try #require(await disk.cachedData(for: url))

                pipeline.memoryCache.removeAll()
                let second = try await pipeline.image(for: request)
                #expect(second.source == .disk)
                #expect(second.bitmap == first.bitmap)
                #expect(await disk.cachedData(for: url)?.data == stored.data)
                #expect(try await server.hits("/flip/s") == 2)
            }
        }
    }

    /// A gzip body is stored as the picture's bytes, which a later fetch decodes from disk.
    @Test func aGzipBodyIsStoredDecoded() async throws {
        try await withFixtureServer { server in
            try await withDiskCache { disk, _ in
                let pipeline = makePipeline(loader: HTTPDataLoader(configuration: strictLimits), decoders: fixtureDecoders, diskCache: disk, negativeCacheLifetime: 0)
                let url = server.url("/encoded/g?encoding=gzip")
                #expect(try await pipeline.image(for: ImageRequest(url: url)).source == .network)
                let stored = try #require(await disk.cachedData(for: url))
                #expect(stored.data.prefix(4) == Data("TIMG".utf8) && stored.data.count == 2000)
                pipeline.memoryCache.removeAll()
                #expect(try await pipeline.image(for: ImageRequest(url: url)).source == .disk)
                #expect(try await server.hits("/encoded/g") == 1)
            }
        }
    }
}
