import CacheDisk
@testable import CacheRedis
import Foundation
import PipelineCore
import PipelineTestSupport
import Testing

@Suite("Authenticated values in the shared tier")
struct AuthenticatedTierTests {
    /// A 4×3 red picture in the test decoder's format (the origin's pictures are never red: their
    /// blue byte is 7).
    static let redPixel = Data("TIMG".utf8) + Data([0, 4, 0, 3, 255, 0, 0, 255]) + Data(repeating: 0, count: 20)
    static let year2100 = Date(timeIntervalSince1970: 4_102_444_800)

    /// What `plant.py` does with write access to Redis: a well-formed value with a recomputed
    /// checksum, claiming freshness until 2100. The checksummed layout ("IPR3") was served before
    /// values carried a MAC, copied to the local disk with its freshness, and outlived `FLUSHALL`;
    /// now neither it nor a value of the current layout under a guessed secret is served or copied.
    @Test func aPlantedValueIsNeverServedNorCopiedToTheLocalDisk() async throws {
        try await withServers { redis, origin in
            let replica = try Replica(redisPort: redis.port, timeout: .seconds(5))
            defer { replica.remove() }
            let raw = try RedisConnection(host: "127.0.0.1", port: redis.port, timeout: .seconds(5))
            let guessed = try RedisCache(configuration: .init(port: redis.port, authentication: .secret(Array("a guessed secret!".utf8))))
            let legacy = origin.url("/image/victim-legacy?maxage=600"), current = origin.url("/image/victim-current?maxage=600")
            let plantedLegacy = RedisEntryTests.legacyValue(magic: "IPR3", url: legacy, data: Self.redPixel,
                                                            freshUntilMilliseconds: 4_102_444_800_000)
            let plantedCurrent = try #require(guessed.value(current, data: Self.redPixel, info: CacheEntryInfo(freshUntil: Self.year2100)))
            _ = try raw.command([arg("SET"), replica.tier.entryKey(legacy), plantedLegacy])
            _ = try raw.command([arg("SET"), replica.tier.entryKey(current), plantedCurrent])
            for (url, path) in [(legacy, "/image/victim-legacy"), (current, "/image/victim-current")] {
                let response = try await replica.pipeline.image(for: ImageRequest(url: url))
                #expect(response.source == .network, "\(path)")
                #expect(Array(response.bitmap.bytes.prefix(4)) != [255, 0, 0, 255], "the planted red picture was served")
                #expect(try await origin.hits(path) == 1)
                let local = await replica.disk.cachedData(for: url)
                #expect(local != nil && local?.data != Self.redPixel, "the planted value reached the local disk")
                #expect(local?.info.freshUntil ?? Self.year2100 < Self.year2100)
            }
            // Each planted value was read (and refused) by the disk lookup and by the loader's
            // second look under the lease.
            #expect(replica.tier.statistics.unauthenticated >= 2 && replica.tier.statistics.hits == 0)
        }
    }

    /// A genuine value (MACed with the fleet's secret) copied under another URL's key is refused:
    /// the code covers the URL it is read for.
    @Test func aValueMACedForAnotherURLIsRefused() async throws {
        try await withServers { redis, origin in
            let replica = try Replica(redisPort: redis.port, timeout: .seconds(5))
            defer { replica.remove() }
            let victim = origin.url("/image/replayed?maxage=600"), other = URL(string: "https://elsewhere.example/red.timg")!
            let genuine = try #require(replica.tier.value(other, data: Self.redPixel,
                                                          info: CacheEntryInfo(freshUntil: Date().addingTimeInterval(600))))
            let raw = try RedisConnection(host: "127.0.0.1", port: redis.port, timeout: .seconds(5))
            _ = try raw.command([arg("SET"), replica.tier.entryKey(other), genuine])
            #expect(await replica.tier.cachedData(for: other)?.data == Self.redPixel)  // where it belongs
            _ = try raw.command([arg("SET"), replica.tier.entryKey(victim), genuine])
            #expect(await replica.tier.cachedData(for: victim) == nil)
            #expect(replica.tier.statistics.unauthenticated == 1)
            let response = try await replica.pipeline.image(for: ImageRequest(url: victim))
            #expect(response.source == .network && Array(response.bitmap.bytes.prefix(4)) != [255, 0, 0, 255])
        }
    }

    /// A fleet member's value claiming freshness until 2100 is fresh for the ceiling only, in
    /// what the tier answers, in what another replica's local disk keeps, and in its Redis TTL.
    @Test func freshnessUntil2100IsCutToTheCeiling() async throws {
        try await withServers { redis, origin in
            let ceiling: TimeInterval = 3600
            func configuration() -> RedisCache.Configuration {
                .init(port: redis.port, timeout: .seconds(5), staleWindow: 100, breakerCooldown: .seconds(30),
                      authentication: .secret(testSecret), maxFreshness: ceiling)
            }
            let writer = try Replica(configuration: configuration()), reader = try Replica(configuration: configuration())
            defer { writer.remove(); reader.remove() }
            let url = origin.url("/image/forever?maxage=600")
            let bytes = Data("TIMG".utf8) + Data([0, 4, 0, 3, 1, 2, 3, 255]) + Data(repeating: 0, count: 20)
            let start = Date()
            await writer.tier.storeData(bytes, info: CacheEntryInfo(etag: "\"e\"", freshUntil: Self.year2100), for: url)
            let read = try #require(await reader.tier.cachedData(for: url))
            let limit = Date().addingTimeInterval(ceiling + 1)
            #expect(try #require(read.info.freshUntil) <= limit)
            let response = try await reader.pipeline.image(for: ImageRequest(url: url))
            #expect(response.source == .disk && Array(response.bitmap.bytes.prefix(4)) == [1, 2, 3, 255])
            #expect(try await origin.hits("/image/forever") == 0)
            let local = try #require(await reader.disk.cachedData(for: url), "decoded, so copied to the local disk")
            #expect(try #require(local.info.freshUntil) <= limit, "the local copy kept the claimed freshness")
            // Redis keeps it for the ceiling plus the stale window, not until 2100.
            let raw = try RedisConnection(host: "127.0.0.1", port: redis.port, timeout: .seconds(5))
            guard case .integer(let ttl) = try raw.command([arg("PTTL"), writer.tier.entryKey(url)]) else {
                Issue.record("no TTL")
                return
            }
            let elapsed = Date().timeIntervalSince(start)
            #expect(Double(ttl) / 1000 <= ceiling + 100 + 1 && Double(ttl) / 1000 >= ceiling + 100 - elapsed - 1, "\(ttl) ms")
        }
    }

    /// Without a secret the tier refuses to start, unless unauthenticated values are asked for
    /// by name; a short secret is refused. An unauthenticated fleet and an authenticated one
    /// never accept each other's values.
    @Test func aTierWithoutASecretRefusesToStartUnlessToldToRunUnauthenticated() async throws {
        #expect(throws: RedisCache.ConfigurationError.noAuthentication) { _ = try RedisCache(configuration: .init()) }
        #expect(throws: RedisCache.ConfigurationError.secretTooShort(bytes: 5)) {
            _ = try RedisCache(configuration: .init(authentication: .secret(Array("short".utf8))))
        }
        #expect("\(RedisCache.Configuration.Authentication.secret(testSecret))" == "secret(32 bytes)")
        try await withServers { redis, _ in
            let open = try RedisCache(configuration: .init(port: redis.port, timeout: .seconds(5), authentication: .unauthenticated))
            let closed = try RedisCache(configuration: .init(port: redis.port, timeout: .seconds(5), authentication: .secret(testSecret)))
            let first = URL(string: "https://cdn.example/open.timg")!, second = URL(string: "https://cdn.example/closed.timg")!
            await open.storeData(Self.redPixel, info: CacheEntryInfo(), for: first)
            await closed.storeData(Self.redPixel, info: CacheEntryInfo(), for: second)
            #expect(await open.cachedData(for: first)?.data == Self.redPixel)
            #expect(await closed.cachedData(for: second)?.data == Self.redPixel)
            #expect(await closed.cachedData(for: first) == nil)
            #expect(await open.cachedData(for: second) == nil)
            #expect(open.statistics.unauthenticated == 1 && closed.statistics.unauthenticated == 1)
        }
    }
}
