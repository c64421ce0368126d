import CacheRedis
import Foundation
import LoaderHTTP
import PipelineCore

/// Decodes the fixture server's test format (a copy of LoaderTests' `TestImageDecoder`):
/// `TIMG`, width and height (UInt16, big-endian), one RGBA colour, padding.
struct TestImageDecoder: ImageDecoding {
    static let format = ImageFormat("timg", mimeType: "image/x-test", fileExtension: "timg")

    var signatures: [ImageSignature] {
        [ImageSignature(format: Self.format) { $0.count >= 12 && ImageSignature.bytes($0, start: Array("TIMG".utf8)) }]
    }

    func withSession<R>(for data: Data, _ body: (any ImageDecodingSession) throws -> R) throws -> R {
        guard canDecode(data) else { throw ImagePipelineError.corruptData(format: Self.format, message: "not TIMG") }
        let bytes = [UInt8](data.prefix(12))
        let width = Int(bytes[4]) << 8 | Int(bytes[5]), height = Int(bytes[6]) << 8 | Int(bytes[7])
        return try body(Session(data: data, info: ImageInfo(format: Self.format, size: PixelSize(width: width, height: height))))
    }

    private struct Session: ImageDecodingSession {
        let data: Data
        let info: ImageInfo

        func decode(_ options: DecodeOptions) throws -> DecodedImage {
            let colour = [UInt8](data[data.startIndex + 8..<data.startIndex + 12])
            let bytes = (0..<info.size.pixelCount).flatMap { _ in colour }
            guard let bitmap = Bitmap(width: info.size.width, height: info.size.height,
                                      bytesPerRow: info.size.width * 4, bytes: bytes) else {
                throw ImagePipelineError.corruptData(format: TestImageDecoder.format, message: "bad size")
            }
            return DecodedImage(bitmap: bitmap, info: info)
        }
    }
}

/// One "replica": its own disk cache in a temporary directory, its own connection to the
/// shared Redis tier, and the HTTP loader behind the fetch lease.
struct Replica {
    let directory: URL
    let tier: RedisCache
    let pipeline: ImagePipeline

    init(redisPort: Int, timeout: Duration = .milliseconds(200), leaseDuration: Duration = .seconds(60)) throws {
        directory = FileManager.default.temporaryDirectory
            .appendingPathComponent("CacheRedisTests-\(UUID().uuidString)", isDirectory: true)
        let disk = try DiskCache(directory: directory)
        tier = RedisCache(configuration: .init(port: redisPort, timeout: timeout, breakerCooldown: .seconds(30)))
        let loader = SharedTierLoader(base: HTTPDataLoader(), tier: tier, leaseDuration: leaseDuration)
        pipeline = ImagePipeline(configuration: .init(
            decoders: DecoderRegistry([TestImageDecoder()]), loaders: LoaderRegistry([loader]),
            memoryCache: MemoryCache(costLimit: 1 << 20), diskCache: TieredDataCache(local: disk, shared: tier),
            negativeCacheLifetime: 0))
    }

    func remove() { try? FileManager.default.removeItem(at: directory) }
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
