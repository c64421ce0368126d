import CacheDisk
@testable import CacheRedis
import Foundation
import LoaderHTTP
import PipelineCore
import PipelineTestSupport
import Testing

@Suite("Shared cache tier on Redis")
struct SharedTierTests {
    @Test func twoPipelinesWithTheirOwnDiskCachesMakeOneOriginRequestBetweenThem() async throws {
        try await withServers { redis, origin in
            // Generous Redis timeouts: this test is about the lease, and on a starved machine a
            // 200 ms timeout makes a replica give up on Redis and fetch itself (by design).
            let first = try Replica(redisPort: redis.port, timeout: .seconds(5))
            let second = try Replica(redisPort: redis.port, timeout: .seconds(5))
            defer { first.remove(); second.remove() }
            // At the same time: the slow origin keeps the first fetch in flight while the other waits on the lease.
            let paths = (0..<6).map { "/delay/\($0)?ms=200&maxage=600" }
            try await withThrowingTaskGroup(of: Void.self) { group in
                for path in paths {
                    for replica in [first, second] {
                        group.addTask { _ = try await replica.pipeline.image(for: ImageRequest(url: origin.url(path))) }
                    }
                }
                try await group.waitForAll()
            }
            // One after the other: the second replica's disk misses, Redis answers.
            _ = try await first.pipeline.image(for: ImageRequest(url: origin.url("/image/later?maxage=600")))
            let response = try await second.pipeline.image(for: ImageRequest(url: origin.url("/image/later?maxage=600")))
            let stats = try await origin.stats()
            for index in 0..<6 { #expect(stats.hits["/delay/\(index)"] == 1, "path \(index)") }
            #expect(stats.hits["/image/later"] == 1)
            #expect(response.source == .disk)
            #expect(second.tier.statistics.hits >= 1)
        }
    }

    @Test func aURLTheLoaderRefusesIsNeverAnsweredFromTheSharedTier() async throws {
        try await withServers { redis, origin in
            let open = try Replica(redisPort: redis.port, timeout: .seconds(5))
            let guarded = try Replica(redisPort: redis.port, timeout: .seconds(5), http: .init(connectionPolicy: .publicOnly))
            defer { open.remove(); guarded.remove() }
            let url = origin.url("/image/shared?maxage=600")
            _ = try await open.pipeline.image(for: ImageRequest(url: url))
            #expect(await guarded.tier.cachedData(for: url) != nil)  // in the shared tier
            // Neither the pipeline (whose disk lookup reads the tier) nor the loader (whose
            // lease waits for the tier) answers for a URL the HTTP loader refuses.
            do {
                _ = try await guarded.pipeline.image(for: ImageRequest(url: url))
                Issue.record("the shared tier answered for a refused URL")
            } catch let error as ImagePipelineError {
                guard case HTTPError.refused = error.underlyingError else { Issue.record("got \(error)"); return }
            }
            do {
                _ = try await guarded.loader.load(DataLoadRequest(url: url))
                Issue.record("the shared tier loader answered for a refused URL")
            } catch HTTPError.refused {
            }
            #expect(try await origin.hits("/image/shared") == 1)
        }
    }

    @Test func bytesThatDoNotDecodeNeverReachRedisAndGiveTheLeaseBack() async throws {
        try await withServers { redis, origin in
            let first = try Replica(redisPort: redis.port, timeout: .seconds(5))
            let second = try Replica(redisPort: redis.port, timeout: .seconds(5))
            defer { first.remove(); second.remove() }
            let url = origin.url("/pngjunk/page")
            await #expect(throws: ImagePipelineError.self) { _ = try await first.pipeline.image(for: ImageRequest(url: url)) }
            // Not published (the old holder wrote to Redis before decoding), and the lease is
            // free at once (the second replica does not wait for an entry that will not come).
            #expect(await first.tier.cachedData(for: url) == nil)
            #expect(await first.tier.isLeased(url) == false)
            await #expect(throws: ImagePipelineError.self) { _ = try await second.pipeline.image(for: ImageRequest(url: url)) }
            #expect(try await origin.stats().hits["/pngjunk/page"] == 2)
            // Good bytes are published once they decoded, and the lease is given back.
            let good = origin.url("/image/fine?maxage=600")
            _ = try await first.pipeline.image(for: ImageRequest(url: good))
            #expect(await first.tier.cachedData(for: good) != nil)
            #expect(await first.tier.isLeased(good) == false)
        }
    }

    @Test func killingRedisMidTestNeverFailsARequest() async throws {
        try await withServers { redis, origin in
            // A generous timeout: a killed Redis refuses at once (nothing waits for it), and on a
            // starved machine a 50 ms one counted a slow answer as a failure before the kill.
            let replica = try Replica(redisPort: redis.port, timeout: .seconds(2))
            defer { replica.remove() }
            for index in 0..<4 {
                _ = try await replica.pipeline.image(for: ImageRequest(url: origin.url("/image/before\(index)?maxage=600")))
            }
            #expect(replica.tier.statistics.failures == 0)
            await redis.stop()
            // A second replica (cold disk) and the first keep working: new URLs and old ones.
            let other = try Replica(redisPort: redis.port, timeout: .seconds(2))
            defer { other.remove() }
            for index in 0..<4 {
                _ = try await other.pipeline.image(for: ImageRequest(url: origin.url("/image/before\(index)?maxage=600")))
                _ = try await replica.pipeline.image(for: ImageRequest(url: origin.url("/image/after\(index)?maxage=600")))
            }
            #expect(other.tier.statistics.failures > 0)
            #expect(other.tier.statistics.skipped > 0, "the breaker opened")
            #expect(try await origin.hits("/image/after0") == 1)
        }
    }

    @Test func aTierOnAPortWithNoServerNeverFailsARequest() async throws {
        try await withServers { _, origin in
            let replica = try Replica(redisPort: try RedisServer.freePort(), timeout: .milliseconds(20))
            defer { replica.remove() }
            for index in 0..<3 {
                _ = try await replica.pipeline.image(for: ImageRequest(url: origin.url("/image/nowhere\(index)")))
            }
            #expect(replica.tier.statistics.hits == 0)
        }
    }

    @Test func aCorruptedValueIsAMissNeverAWrongPicture() async throws {
        try await withServers { redis, origin in
            let tier = try RedisCache(configuration: .init(port: redis.port, timeout: .milliseconds(500), authentication: .secret(testSecret)))
            let url = origin.url("/image/victim?maxage=600"), other = origin.url("/image/other?maxage=600")
            let bytes = Data("TIMG".utf8) + Data([0, 4, 0, 3, 9, 9, 9, 255]) + Data(repeating: 7, count: 100)
            let info = CacheEntryInfo(etag: "\"e\"", lastModified: nil, freshUntil: Date().addingTimeInterval(600))
            await tier.storeData(bytes, info: info, for: url)
            let stored = await tier.cachedData(for: url)
            #expect(stored?.data == bytes && stored?.info == CacheEntryInfo(etag: "\"e\"", freshUntil: stored?.info.freshUntil))

            let raw = try RedisConnection(host: "127.0.0.1", port: redis.port, timeout: .seconds(2))
            // One flipped byte inside the picture.
            _ = try raw.command([arg("SETRANGE"), tier.entryKey(url), arg("120"), arg("X")])
            #expect(await tier.cachedData(for: url) == nil)
            // A valid value under the wrong URL's key.
            await tier.storeData(bytes, info: info, for: other)
            guard case .string(let value) = try raw.command([arg("GET"), tier.entryKey(other)]) else {
                Issue.record("no value stored")
                return
            }
            _ = try raw.command([arg("SET"), tier.entryKey(url), value])
            #expect(await tier.cachedData(for: url) == nil)
            // Truncated.
            _ = try raw.command([arg("SET"), tier.entryKey(url), value.prefix(value.count / 2)])
            #expect(await tier.cachedData(for: url) == nil)
            #expect(tier.statistics.corrupt == 3)

            // Through a pipeline: the damaged entry is ignored and the origin answers.
            _ = try raw.command([arg("SET"), tier.entryKey(url), value])
            let replica = try Replica(redisPort: redis.port)
            defer { replica.remove() }
            let response = try await replica.pipeline.image(for: ImageRequest(url: url))
            #expect(response.source == .network)
            #expect(try await origin.hits("/image/victim") == 1)
        }
    }

    @Test func aSharedValueThatDoesNotDecodeNeverReachesTheLocalDisk() async throws {
        try await withServers { redis, origin in
            let replica = try Replica(redisPort: redis.port, timeout: .seconds(5))
            defer { replica.remove() }
            let url = origin.url("/image/planted?maxage=600")
            // A valid tier entry (checksum and URL right) whose body is not a picture.
            await replica.tier.storeData(Data(repeating: 0x42, count: 300),
                                         info: CacheEntryInfo(freshUntil: Date().addingTimeInterval(600)), for: url)
            await #expect(throws: ImagePipelineError.self) { _ = try await replica.pipeline.image(for: ImageRequest(url: url)) }
            #expect(await replica.disk.cachedData(for: url) == nil, "undecodable bytes were copied to the local disk")
            // Redis cleaned: the origin answers, not a local copy of the bad bytes.
            let raw = try RedisConnection(host: "127.0.0.1", port: redis.port, timeout: .seconds(2))
            _ = try raw.command([arg("FLUSHALL")])
            let response = try await replica.pipeline.image(for: ImageRequest(url: url))
            #expect(response.source == .network)
            #expect(try await origin.hits("/image/planted") == 1)
            // Decoded bytes are copied to the local disk: the next replica-local read needs no Redis.
            #expect(await replica.disk.cachedData(for: url) != nil)
        }
    }

    @Test func aStaleSharedHitRevalidatedWithA304ReachesTheLocalDiskFreshOnceItDecoded() async throws {
        try await withServers { redis, origin in
            let first = try Replica(redisPort: redis.port, timeout: .seconds(5))
            let second = try Replica(redisPort: redis.port, timeout: .seconds(5))
            defer { first.remove(); second.remove() }
            let url = origin.url("/image/aging?maxage=0&maxage304=600")
            _ = try await first.pipeline.image(for: ImageRequest(url: url))  // stale at once, in Redis
            #expect(await second.tier.cachedData(for: url) != nil)
            let response = try await second.pipeline.image(for: ImageRequest(url: url, revalidation: .revalidateBeforeAnswering))
            #expect(response.source == .revalidated)
            let local = await second.disk.cachedData(for: url)
            #expect(local?.info.isFresh(at: Date()) == true, "the 304's freshness, copied after the decode")
        }
    }

    @Test func aValueOverTheEntryLimitIsAMissReadNoFurtherThanTheLimit() async throws {
        try await withServers { redis, origin in
            let replica = try Replica(redisPort: redis.port, timeout: .seconds(5))
            defer { replica.remove() }
            let url = origin.url("/image/huge?maxage=600")
            let limit = replica.tier.configuration.maxEntryBytes
            // Planted directly (the tier would not write it): a valid 6 MB entry.
            let value = try #require(replica.tier.value(url, data: Data(repeating: 7, count: 6_000_000),
                                                             info: CacheEntryInfo(freshUntil: Date().addingTimeInterval(600))))
            let raw = try RedisConnection(host: "127.0.0.1", port: redis.port, timeout: .seconds(5))
            _ = try raw.command([arg("SET"), replica.tier.entryKey(url), value])
            let before = try #require(try Self.bytesSent(by: raw))
            #expect(await replica.tier.cachedData(for: url) == nil)
            let sent = try #require(try Self.bytesSent(by: raw)) - before
            print("CacheRedisTests: an oversized value (\(value.count) bytes) cost \(sent) bytes from Redis to read")
            #expect(sent < limit + (128 << 10), "\(sent) bytes read for a \(value.count)-byte value")
            #expect(replica.tier.statistics.oversized == 1 && replica.tier.statistics.misses == 1)
            // Through the pipeline: a miss, the origin is asked, nothing oversized is copied.
            let response = try await replica.pipeline.image(for: ImageRequest(url: url))
            #expect(response.source == .network)
            #expect(try await origin.hits("/image/huge") == 1)
            #expect((await replica.disk.cachedData(for: url)?.data.count ?? 0) < limit)
        }
    }

    /// What Redis has sent its clients so far (`INFO stats`' `total_net_output_bytes`).
    private static func bytesSent(by connection: RedisConnection) throws -> Int? {
        guard case .string(let info) = try connection.command([arg("INFO"), arg("stats")]),
              let line = String(decoding: info, as: UTF8.self).split(whereSeparator: \.isNewline)
                  .first(where: { $0.hasPrefix("total_net_output_bytes:") }),
              let count = Int(line.dropFirst("total_net_output_bytes:".count))
        else { return nil }
        return count
    }

    @Test func warmingABatchHoldsSharedEntriesFromOneMultiGetUntilTheyDecode() async throws {
        try await withServers { redis, origin in
            let first = try Replica(redisPort: redis.port, timeout: .seconds(5))
            let second = try Replica(redisPort: redis.port, timeout: .seconds(5))
            defer { first.remove(); second.remove() }
            let urls = (0..<6).map { origin.url("/image/batch\($0)?maxage=600") }
            for url in urls.prefix(5) { _ = try await first.pipeline.image(for: ImageRequest(url: url)) }
            let disk = second.disk, tiered = second.tiered
            let hitsBefore = second.tier.statistics.hits, pipelinesBefore = second.tier.statistics.pipelines
            #expect(await tiered.warm(urls + urls) == 5)  // the sixth was never stored
            #expect(second.tier.statistics.pipelines - pipelinesBefore == 1, "one round trip for the batch")
            #expect(second.tier.statistics.hits - hitsBefore == 5)
            // Held in memory, not on the local disk: not known to decode yet.
            for url in urls.prefix(5) { #expect(await disk.cachedData(for: url) == nil) }
            // A second warm asks Redis only for the missing one, and the pipeline's requests are
            // answered from what the warm holds (no Redis read, no origin request), then kept
            // on the local disk once they decoded.
            #expect(await tiered.warm(urls) == 0)
            #expect(second.tier.statistics.misses == 2 && second.tier.statistics.hits - hitsBefore == 5)
            for url in urls.prefix(5) {
                #expect(try await second.pipeline.image(for: ImageRequest(url: url)).source == .disk)
            }
            #expect(second.tier.statistics.hits - hitsBefore == 5)
            for url in urls.prefix(5) { #expect(await disk.cachedData(for: url) != nil) }
            let hits = try await origin.stats().hits
            for index in 0..<5 { #expect(hits["/image/batch\(index)"] == 1) }
        }
    }

    @Test func entriesExpireAtFreshnessPlusTheStaleWindowAndBigOnesAreNotStored() async throws {
        try await withServers { redis, _ in
            let tier = try RedisCache(configuration: .init(port: redis.port, timeout: .milliseconds(500),
                                                           maxEntryBytes: 1000, staleWindow: 100, authentication: .secret(testSecret)))
            let url = URL(string: "http://127.0.0.1:1/ttl")!
            let start = Date()
            await tier.storeData(Data(count: 10), info: CacheEntryInfo(freshUntil: start.addingTimeInterval(60)), for: url)
            let raw = try RedisConnection(host: "127.0.0.1", port: redis.port, timeout: .seconds(2))
            guard case .integer(let ttl) = try raw.command([arg("PTTL"), tier.entryKey(url)]) else {
                Issue.record("no TTL")
                return
            }
            // Fresh for 60 s from `start`, plus the 100 s window: 160 s less the time since
            // `start` (measured, not assumed: a starved machine once took 8 s to get here).
            let elapsed = Int(Date().timeIntervalSince(start) * 1000)
            #expect((160_000 - elapsed - 50...160_050).contains(Int(ttl)), "\(ttl) ms, \(elapsed) ms after the store")
            await tier.storeData(Data(count: 1001), info: CacheEntryInfo(), for: url)
            #expect(await tier.cachedData(for: url) == nil)
        }
    }

    /// A 304 relabels only the version it confirmed. Redis holding an older version (the new
    /// one's write was skipped) is not given the new validators and freshness, which would have
    /// every replica serve the old picture as the new one: it is removed.
    @Test func updateInfoRelabelsOnlyTheVersionItConfirms() async throws {
        try await withServers { redis, _ in
            let tier = try RedisCache(configuration: .init(port: redis.port, timeout: .seconds(5), authentication: .secret(testSecret)))
            let url = URL(string: "http://127.0.0.1:1/versions.png")!
            let old = CacheEntryInfo(etag: "\"E1\"", freshUntil: Date().addingTimeInterval(-60))
            await tier.storeData(Data("version 1".utf8), info: old, for: url)
            let later = Date().addingTimeInterval(600)
            await tier.updateInfo(CacheEntryInfo(etag: "\"E1\"", freshUntil: later), for: url)
            let same = await tier.cachedData(for: url)
            #expect(same?.data == Data("version 1".utf8) && same?.info.etag == "\"E1\"")
            #expect((same?.info.freshUntil ?? .distantPast) > Date(), "the confirmed version is fresh again")
            await tier.updateInfo(CacheEntryInfo(etag: "\"E2\"", freshUntil: later), for: url)
            #expect(await tier.cachedData(for: url) == nil, "version 1 was relabelled as version 2")
        }
    }
}
