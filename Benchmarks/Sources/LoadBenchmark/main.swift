// The load benchmark (Benchmarks/load.sh runs it): one pipeline under many requests at once, against
// loopback origins and Redis tiers that are slow or hostile. Each mode prints `key: value` lines:
// the process's resident memory before and at its peak (VmHWM, reset when the load starts) beside
// the budgets the pipeline is configured with, the latency of a healthy host's requests while the
// load runs, and every typed error seen, by case.
//
//   origin HEALTHY SLOW1,SLOW2,... N COUNT TIMEOUT
//       N requests to the slow hosts at once (distinct URLs, spread over the hosts), then, while
//       they hold the loader, COUNT requests to the healthy host (4 at a time); then waits for
//       the slow requests until TIMEOUT + 15 s and counts those still unanswered.
//   baseline N
//       The harness's own memory: N suspended tasks, each holding an ImageRequest (what the
//       `origin` mode's callers cost whatever the pipeline does).
//   bombs BASE N
//       N requests at once for gzip bombs (a PNG signature and zeros, 50+ MB inflated each).
//   tier HEALTHY REDIS_PORT COUNT DIR
//       COUNT healthy requests (4 at a time) through SharedTierLoader and TieredDataCache over
//       the Redis at REDIS_PORT (a trickling one, in load.sh) and a DiskCache in DIR.
//   plant HEALTHY REDIS_PORT COUNT
//       An attacker with write access to Redis (but not the fleet's secret) stores a red 16×16
//       PNG, fresh until 2100, for each of the COUNT healthy URLs.
//   victim HEALTHY REDIS_PORT COUNT DIR
//       A replica asks for the COUNT URLs through the tier (local DiskCache in DIR): how many
//       answers are the planted red picture rather than the origin's (whose blue is 7).
//
// Healthy URLs are HEALTHY/<i>.png, a 16×16 picture of colour (i & 255, i >> 8 & 255, 7).
import CacheDisk
import CacheRedis
import CodecPNG
import Foundation
import LoaderHTTP
import PipelineCore
import Synchronization

let arguments = Array(CommandLine.arguments.dropFirst())
func fail(_ message: String) -> Never {
    FileHandle.standardError.write(Data("LoadBenchmark: \(message)\n".utf8))
    exit(2)
}
guard let mode = arguments.first else { fail("usage: LoadBenchmark origin|bombs|tier|plant|victim ...") }
func argument(_ index: Int) -> String {
    guard index < arguments.count else { fail("\(mode): missing argument \(index)") }
    return arguments[index]
}
func integer(_ index: Int) -> Int {
    guard let value = Int(argument(index)) else { fail("\(mode): argument \(index) is not a number") }
    return value
}

// MARK: Measuring

/// A line of /proc/self/status, in bytes (`VmRSS`, `VmHWM`).
func status(_ field: String) -> Int {
    guard let text = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8) else { return 0 }
    for line in text.split(separator: "\n") where line.hasPrefix(field + ":") {
        return (Int(line.split(separator: " ").dropFirst().first ?? "") ?? 0) * 1024
    }
    return 0
}

/// Resets VmHWM to the current RSS, so the peak read later is this load's.
func resetPeak() {
    try? "5".write(toFile: "/proc/self/clear_refs", atomically: false, encoding: .utf8)
}

func megabytes(_ bytes: Int) -> String { String(format: "%.1f MB", Double(bytes) / 1e6) }

/// An error's case path: `loadingFailed/tooSlow`, `overloaded`, ... (the enum cases, outermost
/// first, through `underlying` errors), from its mirror, so that any typed error is counted by case.
func casePath(_ error: any Error) -> String {
    let mirror = Mirror(reflecting: error)
    guard mirror.displayStyle == .enum else { return String(describing: type(of: error)) }
    guard let child = mirror.children.first, let label = child.label else {
        return "\(type(of: error)).\(error)".split(separator: " ").first.map(String.init) ?? "\(type(of: error))"
    }
    let payload = [child.value] + Mirror(reflecting: child.value).children.map(\.value)
    for value in payload {
        if let inner = value as? any Error { return label + "/" + casePath(inner) }
    }
    for value in payload where Mirror(reflecting: value).displayStyle == .enum {
        if let innerLabel = Mirror(reflecting: value).children.first?.label { return label + "/" + innerLabel }
        return label + "/" + String(describing: value)
    }
    return label
}

/// Errors by case path, and latencies in seconds, from many tasks.
final class Tally: Sendable {
    private let state = Mutex<(errors: [String: Int], latencies: [Double], answered: Int)>(([:], [], 0))
    func record(_ error: any Error) { state.withLock { $0.errors[casePath(error), default: 0] += 1 } }
    func answered(after seconds: Double) {
        state.withLock {
            $0.latencies.append(seconds)
            $0.answered += 1
        }
    }
    var errors: [String: Int] { state.withLock { $0.errors } }
    var latencies: [Double] { state.withLock { $0.latencies } }
    var finished: Int { state.withLock { $0.answered + $0.errors.values.reduce(0, +) } }
}

func percentile(_ values: [Double], _ p: Double) -> Double {
    guard !values.isEmpty else { return .nan }
    let sorted = values.sorted()
    return sorted[min(sorted.count - 1, max(0, Int((p / 100 * Double(sorted.count)).rounded(.up)) - 1))]
}

func seconds(since start: ContinuousClock.Instant) -> Double {
    let elapsed = ContinuousClock.now - start
    return Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
}

func report(_ key: String, _ value: String) { print("\(key): \(value)") }

func reportErrors(_ label: String, _ tally: Tally) {
    let errors = tally.errors.sorted { $0.value > $1.value }
    report(label, errors.isEmpty ? "none" : errors.map { "\($0.value) \($0.key)" }.joined(separator: ", "))
}

/// The memory budgets of `configuration` and `http`, printed, and their sum.
func reportBudgets(_ configuration: ImagePipeline.Configuration, http: HTTPDataLoader.Configuration) -> Int {
    let memory = configuration.memoryCache.costLimit
    let negative = 2 * configuration.negativeCacheByteLimit  // one budget per kind (failures, not-found)
    let decode = configuration.decodeMemoryBudget ?? 0
    let requests = configuration.requestMemoryBudget ?? 0
    let downloads = Int(http.maxDownloadMemory)
    report("budgets", "memory cache \(megabytes(memory)), negative cache \(megabytes(negative)), "
        + "decode \(megabytes(decode)), requests in flight \(megabytes(requests)), downloads \(megabytes(downloads)), "
        + "queue \(http.maxQueuedRequests) requests or \(megabytes(http.maxQueuedBytes))")
    return memory + negative + decode + requests + downloads + http.maxQueuedBytes
}

@discardableResult
func reportMemory(baseline: Int, budgets: Int) -> Int {
    let peak = status("VmHWM")
    report("rss", "before \(megabytes(baseline)), peak \(megabytes(peak)), growth \(megabytes(peak - baseline)) "
        + String(format: "(%.0f%% of the budgets' %@)", 100 * Double(peak - baseline) / Double(max(1, budgets)), megabytes(budgets)))
    return peak - baseline
}

/// One request, timed into `tally`.
func timed(_ index: Int, _ request: ImageRequest, on pipeline: ImagePipeline, into tally: Tally,
           check: (@Sendable (Int, ImageResponse) -> Void)?) async {
    let start = ContinuousClock.now
    do {
        let response = try await pipeline.image(for: request)
        tally.answered(after: seconds(since: start))
        check?(index, response)
    } catch {
        tally.record(error)
    }
}

/// `count` requests `concurrency` at a time, each timed into `tally`.
func run(_ requests: [ImageRequest], concurrency: Int, on pipeline: ImagePipeline, into tally: Tally,
         check: (@Sendable (Int, ImageResponse) -> Void)? = nil) async {
    if concurrency >= requests.count {
        // All at once as unstructured tasks: a task group's bookkeeping costs O(children) per
        // child that ends (`TaskGroup::removeChildTask` was a tenth of the CPU at 10,000), a
        // cost of the harness, not of the pipeline. No handle is kept, as a server keeps none
        // of a request's task once it answered: a task kept by its handle keeps its frames'
        // memory after it ends (13 KB each for 100,000 refused at once).
        final class Countdown: Sendable {
            let left: Mutex<Int>
            init(_ count: Int) { left = Mutex(count) }
            func done() -> Bool { left.withLock { $0 -= 1; return $0 == 0 } }
        }
        let countdown = Countdown(requests.count)
        await withCheckedContinuation { (finished: CheckedContinuation<Void, Never>) in
            for (index, request) in requests.enumerated() {
                Task {
                    await timed(index, request, on: pipeline, into: tally, check: check)
                    if countdown.done() { finished.resume() }
                }
            }
        }
        return
    }
    await withTaskGroup(of: Void.self) { group in
        var next = 0
        func add() {
            let index = next, request = requests[index]
            next += 1
            group.addTask { await timed(index, request, on: pipeline, into: tally, check: check) }
        }
        while next < min(concurrency, requests.count) { add() }
        while await group.next() != nil {
            if next < requests.count { add() }
        }
    }
}

func healthyURLs(_ base: String, _ count: Int) -> [URL] { (0..<count).compactMap { URL(string: "\(base)/\($0).png") } }

func reportLatency(_ label: String, _ tally: Tally) {
    let latencies = tally.latencies
    report(label, String(format: "%d answered, p50 %.1f ms, p99 %.1f ms, max %.1f ms", latencies.count,
                         percentile(latencies, 50) * 1000, percentile(latencies, 99) * 1000, (latencies.max() ?? .nan) * 1000))
}

let decoders = DecoderRegistry([PNGDecoder()])

/// The Redis tier at `port`, authenticated with `secret`: the fleet's, or the attacker's guess.
func makeTier(port: Int, secret: String = "LoadBenchmark fleet secret, 32 B") throws -> RedisCache {
    try RedisCache(configuration: .init(port: port, authentication: .secret(Array(secret.utf8))))
}

/// The pipeline of the `origin` and `bombs` modes: a 64 MiB memory cache and a 128 MiB decode
/// budget (set, rather than derived from this machine's memory, so the budgets are the same
/// everywhere).
func loadConfiguration(_ http: HTTPDataLoader.Configuration) -> ImagePipeline.Configuration {
    var configuration = ImagePipeline.Configuration(decoders: decoders, loaders: LoaderRegistry([HTTPDataLoader(configuration: http)]),
                                                    memoryCache: MemoryCache(costLimit: 64 << 20))
    configuration.decodeMemoryBudget = 128 << 20
    return configuration
}

// MARK: Modes

switch mode {
case "origin":
    let healthy = argument(1), slow = argument(2).split(separator: ",").map(String.init)
    let count = integer(3), healthyCount = integer(4), timeout = integer(5)
    let http = HTTPDataLoader.Configuration(totalTimeout: TimeInterval(timeout))
    let pipeline = ImagePipeline(configuration: loadConfiguration(http))
    let budgets = reportBudgets(pipeline.configuration, http: http)
    let requests = (0..<count).compactMap { URL(string: "\(slow[$0 % slow.count])/slow/\($0).png") }.map { ImageRequest(url: $0) }
    let baseline = status("VmRSS")
    resetPeak()
    let slowTally = Tally(), healthyTally = Tally()
    let started = ContinuousClock.now
    let load = Task { await run(requests, concurrency: count, on: pipeline, into: slowTally) }
    // Every slow request is queued or running by then (a benchmark may wait on the clock).
    try await Task.sleep(for: .seconds(2))
    report("slow requests", "\(count) over \(slow.count) hosts, \(slowTally.finished) finished within 2 s")
    await run(healthyURLs(healthy, healthyCount).map { ImageRequest(url: $0) }, concurrency: 4, on: pipeline, into: healthyTally)
    reportLatency("healthy host", healthyTally)
    reportErrors("healthy errors", healthyTally)
    let deadline = ContinuousClock.now + .seconds(timeout + 15)
    while slowTally.finished < count && ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(100)) }
    report("slow outcome", String(format: "%d of %d finished after %.1f s", slowTally.finished, count, seconds(since: started)))
    reportErrors("slow errors", slowTally)
    let growth = reportMemory(baseline: baseline, budgets: budgets)
    report("per slow request", "\(growth / count) bytes of the growth")
    load.cancel()
    exit(0)

case "baseline":
    // The harness alone: N tasks, each holding an ImageRequest, suspended until all started.
    let count = integer(1)
    let baseline = status("VmRSS")
    resetPeak()
    final class Parked: Sendable {
        let continuations = Mutex<[CheckedContinuation<Void, Never>]>([])
    }
    let parked = Parked()
    await withTaskGroup(of: Void.self) { group in
        for index in 0..<count {
            group.addTask {
                let request = ImageRequest(url: URL(string: "http://127.0.0.1:1/slow/\(index).png")!)
                await withCheckedContinuation { continuation in
                    let all = parked.continuations.withLock { parked in
                        parked.append(continuation)
                        return parked.count == count ? parked : nil
                    }
                    all?.forEach { $0.resume() }
                }
                withExtendedLifetime(request) {}
            }
        }
    }
    let growth = status("VmHWM") - baseline
    report("harness", "\(count) suspended tasks holding a request: \(megabytes(growth)), \(growth / max(1, count)) bytes each")

case "bombs":
    let base = argument(1), count = integer(2)
    let http = HTTPDataLoader.Configuration()
    let pipeline = ImagePipeline(configuration: loadConfiguration(http))
    let budgets = reportBudgets(pipeline.configuration, http: http)
    let baseline = status("VmRSS")
    resetPeak()
    let tally = Tally()
    let requests = (0..<count).compactMap { URL(string: "\(base)/bomb/\($0).png") }.map { ImageRequest(url: $0) }
    let start = ContinuousClock.now
    await run(requests, concurrency: count, on: pipeline, into: tally)
    report("bombs", String(format: "%d at once, all finished in %.1f s", count, seconds(since: start)))
    reportErrors("bomb errors", tally)
    reportMemory(baseline: baseline, budgets: budgets)

case "tier":
    let healthy = argument(1), port = integer(2), count = integer(3), directory = argument(4)
    let tier = try makeTier(port: port)
    let http = HTTPDataLoader.Configuration()
    let local = try DiskCache(directory: URL(fileURLWithPath: directory))
    let configuration = ImagePipeline.Configuration(
        decoders: decoders, loaders: LoaderRegistry([SharedTierLoader(base: HTTPDataLoader(configuration: http), tier: tier)]),
        memoryCache: MemoryCache(costLimit: 64 << 20), diskCache: TieredDataCache(local: local, shared: tier))
    let pipeline = ImagePipeline(configuration: configuration)
    let tally = Tally()
    let start = ContinuousClock.now
    let load = Task { await run(healthyURLs(healthy, count).map { ImageRequest(url: $0) }, concurrency: 4, on: pipeline, into: tally) }
    // The benchmark gives up after a minute (a stalled tier would otherwise hold it for hours).
    let deadline = start + .seconds(60)
    while tally.finished < count && ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(50)) }
    report("tier", String(format: "%d of %d requests finished in %.1f s", tally.finished, count, seconds(since: start)))
    reportLatency("healthy host through the tier", tally)
    reportErrors("errors", tally)
    report("redis statistics", "\(tier.statistics)")
    load.cancel()
    exit(0)

case "plant":
    let healthy = argument(1), port = integer(2), count = integer(3)
    let tier = try makeTier(port: port, secret: "an attacker's guess at the secret")
    guard let red = Bitmap(width: 16, height: 16, bytesPerRow: 64, bytes: Array(repeating: [255, 0, 0, 255], count: 256).flatMap { $0 })
    else { fail("cannot make the red picture") }
    let png = try PNGEncoder().encode(red)
    let fresh = CacheEntryInfo(freshUntil: Date(timeIntervalSince1970: 4_102_444_800))  // 2100-01-01
    for url in healthyURLs(healthy, count) { await tier.storeData(png, info: fresh, for: url) }
    report("planted", "\(count) red pictures fresh until 2100; redis statistics \(tier.statistics)")

case "victim":
    let healthy = argument(1), port = integer(2), count = integer(3), directory = argument(4)
    let tier = try makeTier(port: port)
    let local = try DiskCache(directory: URL(fileURLWithPath: directory))
    let configuration = ImagePipeline.Configuration(
        decoders: decoders, loaders: LoaderRegistry([SharedTierLoader(base: HTTPDataLoader(), tier: tier)]),
        memoryCache: MemoryCache(costLimit: 64 << 20), diskCache: TieredDataCache(local: local, shared: tier))
    let pipeline = ImagePipeline(configuration: configuration)
    let tally = Tally()
    let poisoned = Mutex(0)
    await run(healthyURLs(healthy, count).map { ImageRequest(url: $0) }, concurrency: 4, on: pipeline, into: tally) { index, response in
        let pixel = response.bitmap.pixel(x: 0, y: 0)
        if Int(pixel.r) != index & 255 || Int(pixel.g) != (index >> 8) & 255 || pixel.b != 7 { poisoned.withLock { $0 += 1 } }
    }
    await pipeline.waitForBackgroundWork()
    await local.waitForMaintenance()
    report("victim", "\(tally.latencies.count) of \(count) answered, \(poisoned.withLock { $0 }) of them the planted picture")
    reportErrors("errors", tally)
    report("redis statistics", "\(tier.statistics)")

default:
    fail("unknown mode \(mode)")
}
