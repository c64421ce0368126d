import CacheDisk
import CacheRedis
import Foundation
import LoaderHTTP
import PipelineCore
import PipelineTestSupport

/// The secret the tests' fleets share (32 bytes).
let testSecret = [UInt8]("CacheRedisTests fleet secret 32B".utf8)

/// One "replica": its own disk cache in a temporary directory, its own connection to the
/// shared Redis tier, and the HTTP loader behind the fetch lease.
struct Replica {
    let directory: TemporaryDirectory
    let disk: DiskCache
    let tier: RedisCache
    let loader: SharedTierLoader
    /// The pipeline's data cache: the disk in front of the tier.
    let tiered: TieredDataCache
    let pipeline: ImagePipeline

    init(redisPort: Int, timeout: Duration = .milliseconds(200), leaseDuration: Duration = .seconds(60),
         http: HTTPDataLoader.Configuration = .init()) throws {
        try self.init(configuration: .init(port: redisPort, timeout: timeout, breakerCooldown: .seconds(30), authentication: .secret(testSecret)),
                      leaseDuration: leaseDuration, http: http)
    }

    init(configuration: RedisCache.Configuration, leaseDuration: Duration = .seconds(60), http: HTTPDataLoader.Configuration = .init()) throws {
        directory = try TemporaryDirectory(prefix: "CacheRedisTests")
        disk = try DiskCache(directory: directory.url)
        tier = try RedisCache(configuration: configuration)
        loader = SharedTierLoader(base: HTTPDataLoader(configuration: http), tier: tier, leaseDuration: leaseDuration)
        tiered = TieredDataCache(local: disk, shared: tier)
        pipeline = ImagePipeline(configuration: .init(
            decoders: DecoderRegistry([TestImageDecoder()]), loaders: LoaderRegistry([loader]),
            memoryCache: MemoryCache(costLimit: 1 << 20), diskCache: tiered,
            negativeCacheLifetime: 0))
    }

    func remove() { directory.remove() }
}

/// Runs `body` with a fresh Redis server and fixture server, stopping both on every path.
/// Returns without running `body` when `redis-server` is not installed.
func withServers(_ body: (RedisServer, FixtureServer) async throws -> Void) async throws {
    guard RedisServer.executable != nil else {
        print("CacheRedisTests: skipped, redis-server is not installed (scripts/bootstrap installs it)")
        return
    }
    let redis = try await RedisServer.start()
    let origin: FixtureServer
    do { origin = try await FixtureServer.start() } catch {
        await redis.stop()
        throw error
    }
    do {
        try await body(redis, origin)
    } catch {
        await redis.stop()
        await origin.stop()
        throw error
    }
    await redis.stop()
    await origin.stop()
}
