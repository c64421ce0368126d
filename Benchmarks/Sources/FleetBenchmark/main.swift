// One replica of the fleet benchmark (Benchmarks/fleet.sh starts four at once): a pipeline
// with its own fresh DiskCache requests every URL of an origin in its own order, `concurrency`
// at a time, then does it again (memory cache cleared, so the second pass is answered by the
// local disk). Each `pipeline.image(for:)` call is timed and put in one class:
//   origin     this process's loader went to the origin (HTTPDataLoader was called)
//   tier       the data cache answered with a local miss: Redis had it (pass 1, tier mode)
//   lease      SharedTierLoader answered from Redis without the origin: it waited on another
//              replica's lease, or found the entry when it re-checked after taking the lease
//   disk       the local DiskCache answered (pass 2)
// Prints one JSON object: latencies in microseconds per class, Redis statistics, errors.
//
// `parts` mode times the pieces of a shared-tier hit one at a time instead, for every URL
// (Redis must hold them: run it after a tier run): a local DiskCache miss, a Redis GET hit,
// a Redis EXISTS (one round trip), a DiskCache store and hit, and TieredDataCache's whole read
// (local miss, Redis hit, copy into the local level) over a second fresh DiskCache.
//
// Usage: FleetBenchmark plain|tier|parts <base-url> <count> <seed> <concurrency> <redis-port> <start-at-unix-ms>
//                       [poll-ms]
// URLs are <base-url>/<i>.png for i in 0..<count.
import CacheDisk
import CacheRedis
import CodecPNG
import Foundation
import LoaderHTTP
import PipelineCore
import Synchronization

let arguments = CommandLine.arguments
guard arguments.count >= 8, ["plain", "tier", "parts"].contains(arguments[1]), let count = Int(arguments[3]),
      let seed = UInt64(arguments[4]), let concurrency = Int(arguments[5]), let redisPort = Int(arguments[6]),
      let startAt = Double(arguments[7])
else {
    FileHandle.standardError.write(Data("usage: FleetBenchmark plain|tier|parts <base-url> <count> <seed> <concurrency> <redis-port> <start-at-unix-ms> [poll-ms]\n".utf8))
    exit(2)
}
let usesTier = arguments[1] != "plain"
let base = arguments[2]
let pollMilliseconds = arguments.count > 8 ? Int(arguments[8]) ?? 10 : 10

/// URLs a loader was asked for, by absolute string.
final class Recorder: Sendable {
    private let seen = Mutex<Set<String>>([])
    func record(_ url: URL) { _ = seen.withLock { $0.insert(url.absoluteString) } }
    func contains(_ url: URL) -> Bool { seen.withLock { $0.contains(url.absoluteString) } }
}

/// Records every URL it loads, then loads it with `base`.
struct RecordingLoader: DataLoading {
    let base: any DataLoading
    let recorder: Recorder
    var schemes: Set<String> { base.schemes }
    func load(_ request: DataLoadRequest) async throws -> DataLoadResult {
        recorder.record(request.url)
        return try await base.load(request)
    }
}

/// A small deterministic generator, so each replica's order is reproducible from its seed.
struct SplitMix: RandomNumberGenerator {
    var state: UInt64
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

let directory = FileManager.default.temporaryDirectory.appendingPathComponent("FleetBenchmark-\(UUID().uuidString)")
defer { try? FileManager.default.removeItem(at: directory) }
let disk = try DiskCache(directory: directory, sizeLimit: 1 << 30)
await disk.waitForMaintenance()  // the first scan of the (empty) directory is not part of any request

let originCalls = Recorder(), loaderCalls = Recorder()
let origin = RecordingLoader(base: HTTPDataLoader(), recorder: originCalls)
// Every replica runs this binary, so all of them share this secret (values are authenticated).
let tier = try RedisCache(configuration: .init(port: redisPort, authentication: .secret(Array("FleetBenchmark fleet secret, 32B".utf8))))
let loader: any DataLoading = usesTier
    ? RecordingLoader(base: SharedTierLoader(base: origin, tier: tier, pollInterval: .milliseconds(pollMilliseconds)),
                      recorder: loaderCalls)
    : RecordingLoader(base: origin, recorder: loaderCalls)
let memory = MemoryCache<ImageKey, ImageContainer>(costLimit: 64 << 20)
let pipeline = ImagePipeline(configuration: .init(
    decoders: DecoderRegistry([PNGDecoder()]), loaders: LoaderRegistry([loader]), memoryCache: memory,
    diskCache: usesTier ? TieredDataCache(local: disk, shared: tier) : disk, negativeCacheLifetime: 0))

var generator = SplitMix(state: seed &* 0x2545_F491_4F6C_DD1D &+ 1)
let urls = (0..<count).compactMap { URL(string: "\(base)/\($0).png") }.shuffled(using: &generator)

if arguments[1] == "parts" {
    let otherDirectory = directory.appendingPathComponent("second", isDirectory: true)
    let tiered = TieredDataCache(local: try DiskCache(directory: otherDirectory, sizeLimit: 1 << 30), shared: tier)
    var parts: [String: [Double]] = [:]
    func time<T>(_ name: String, _ body: () async -> T) async -> T {
        let clock = ContinuousClock(), start = clock.now
        let result = await body()
        let elapsed = clock.now - start
        parts[name, default: []].append(Double(elapsed.components.seconds) * 1e6 + Double(elapsed.components.attoseconds) / 1e12)
        return result
    }
    for url in urls {
        let missing = url.appendingPathComponent("missing")
        _ = await time("disk miss") { await disk.cachedData(for: missing) }
        guard let entry = await time("redis GET hit", { await tier.cachedData(for: url) }) else { continue }
        _ = await time("redis EXISTS") { await tier.isLeased(url) }
        await time("disk store") { await disk.storeData(entry.data, info: entry.info, for: url) }
        _ = await time("disk hit") { await disk.cachedData(for: url) }
        _ = await time("tiered read, Redis hit") { await tiered.cachedData(for: url) }
    }
    let json = try JSONSerialization.data(withJSONObject: ["parts": parts], options: [.sortedKeys])
    FileHandle.standardOutput.write(json + Data("\n".utf8))
    try? FileManager.default.removeItem(at: directory)
    exit(0)
}

// Start with the other replicas.
let wait = startAt / 1000 - Date().timeIntervalSince1970  // negative: this replica started late
if wait > 0 { try await Task.sleep(for: .milliseconds(Int(wait * 1000))) }

/// One timed request: its class and microseconds, or why it failed.
@Sendable func measure(_ url: URL, pass number: Int) async -> Result<(String, Double), ReportedError> {
    let clock = ContinuousClock(), start = clock.now
    do {
        let response = try await pipeline.image(for: ImageRequest(url: url))
        let elapsed = clock.now - start
        let micros = Double(elapsed.components.seconds) * 1e6 + Double(elapsed.components.attoseconds) / 1e12
        let kind: String
        if number == 1 && originCalls.contains(url) {
            kind = "origin"
        } else if number == 1 && loaderCalls.contains(url) {
            kind = "lease"
        } else if response.source == .disk {
            kind = number == 1 ? "tier" : "disk"
        } else {
            kind = "other-\(response.source.rawValue)"
        }
        return .success((kind, micros))
    } catch {
        return .failure(ReportedError(text: "\(url.lastPathComponent): \(error)"))
    }
}

/// A failed request, as text.
struct ReportedError: Error { let text: String }

/// Requests every URL, `concurrency` at a time; returns (class, microseconds) per request and the errors.
func pass(_ number: Int) async -> (samples: [(String, Double)], errors: [String]) {
    await withTaskGroup(of: Result<(String, Double), ReportedError>.self) { group in
        var samples: [(String, Double)] = [], errors: [String] = []
        var next = 0
        while next < min(concurrency, urls.count) {
            let url = urls[next]
            group.addTask { await measure(url, pass: number) }
            next += 1
        }
        for await result in group {
            switch result {
            case .success(let sample): samples.append(sample)
            case .failure(let error): errors.append(error.text)
            }
            if next < urls.count {
                let url = urls[next]
                group.addTask { await measure(url, pass: number) }
                next += 1
            }
        }
        return (samples, errors)
    }
}

let wallClock = ContinuousClock(), wallStart = wallClock.now
let first = await pass(1)
let firstSeconds = wallClock.now - wallStart
memory.removeAll()
let second = await pass(2)

var latencies: [String: [Double]] = [:]
for (kind, micros) in first.samples + second.samples { latencies[kind, default: []].append(micros) }
let stats = tier.statistics
let report: [String: Any] = [
    "mode": arguments[1], "seed": seed,
    "latencies": latencies,
    "errors": first.errors + second.errors,
    "pass1_seconds": Double(firstSeconds.components.seconds) + Double(firstSeconds.components.attoseconds) / 1e18,
    "start_late_ms": startAt > 0 ? max(0, -wait * 1000) : 0,
    "origin_calls": urls.filter { originCalls.contains($0) }.count,
    "redis": ["hits": stats.hits, "misses": stats.misses, "corrupt": stats.corrupt,
              "failures": stats.failures, "skipped": stats.skipped],
]
let json = try JSONSerialization.data(withJSONObject: report, options: [.sortedKeys])
FileHandle.standardOutput.write(json + Data("\n".utf8))
