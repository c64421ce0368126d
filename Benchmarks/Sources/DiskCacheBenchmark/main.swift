// The disk cache at N entries of 1 KiB (default 100,000), through its public API only, so the same
// source builds against any revision of CacheDisk (Benchmarks/disk-cache.sh builds it for an old
// revision and for this checkout and prints the two side by side). Measures:
//   fill             storeData by 64 writers at once, entries per second
//   open             a new instance: open → first hit, and open → entryCount == N (index complete)
//   lookups          cachedData(for:) hit and miss (best of 3 runs of 20,000), beside the peers
//                    Data(contentsOf:) and stat(2) of the same files (warm: just written)
//   resident         VmRSS growth per entry in a fresh child process (open + entryCount + 20,000
//                    hits), and the same child on an empty folder (the fixed cost)
//   disk             st_blocks of every file and folder under the directory, per entry; the most
//                    names in one folder
//   lost index       the index files (`index.sqlite*`) deleted, then open in a fresh child
//                    (a layout without them has none to lose: n/a)
//   two processes    two children on the directory at once, each storing M new entries while
//                    reading M existing ones (checked byte for byte), beside one child alone
//   eviction         a new instance capped at 90% of totalSize (trimRatio 1) until entryCount ≤ 90%,
//                    with hits issued while it runs (one at a time, a millisecond apart)
// Output: one "label<TAB>value" line per result on stdout; progress on stderr.
// Run: swift run -c release DiskCacheBenchmark [entries]
// (the children: DiskCacheBenchmark resident|worker|reopen <directory> ...)
import CacheDisk
import Foundation
import PipelineCore
import Synchronization

let bodySize = 1024
let lookups = 20_000
/// The caps of every instance but the eviction pass's: nothing is evicted by accident.
let noLimit = 1 << 40
/// Entries each worker process stores and reads.
let workerEntries = 20_000
let info = CacheEntryInfo(etag: "\"abc\"", freshUntil: Date().addingTimeInterval(86_400))

func now() -> Double { Double(DispatchTime.now().uptimeNanoseconds) / 1e9 }
func url(_ i: Int) -> URL { URL(string: "https://cdn.example.com/photos/\(i).jpg?w=320")! }
func missURL(_ i: Int) -> URL { URL(string: "https://cdn.example.com/missing/\(i).jpg?w=320")! }

/// Entry `i`'s 1 KiB: its number, then bytes that depend on it, so a read of another entry shows.
func body(_ i: Int) -> Data {
    var bytes = [UInt8](repeating: 0, count: bodySize)
    for k in 0..<bodySize { bytes[k] = UInt8(truncatingIfNeeded: k &* 7 &+ i) }
    withUnsafeBytes(of: UInt64(i).littleEndian) { bytes.replaceSubrange(0..<8, with: $0) }
    return Data(bytes)
}

/// `count` pseudo-random numbers in `range`, the same for the same seed.
func order(_ count: Int, in range: Range<Int>, seed: UInt64) -> [Int] {
    var state = seed &* 0x9E37_79B9 | 1
    return (0..<count).map { _ in
        state = state &* 6364136223846793005 &+ 1442695040888963407
        return range.lowerBound + Int(state >> 33) % max(1, range.count)
    }
}

func open(_ directory: URL, sizeLimit: Int = noLimit, trimRatio: Double = 0.8) throws -> DiskCache {
    try DiskCache(directory: directory, sizeLimit: sizeLimit, trimRatio: trimRatio, countLimit: noLimit)
}

/// Stores entries `ids` through `writers` concurrent tasks, a chunk of 100,000 at a time (progress on stderr).
func store(_ cache: DiskCache, _ ids: Range<Int>, writers: Int, progress: Bool = false) async {
    for chunk in stride(from: ids.lowerBound, to: ids.upperBound, by: 100_000) {
        let end = min(ids.upperBound, chunk + 100_000)
        await withTaskGroup(of: Void.self) { group in
            for writer in 0..<writers {
                group.addTask {
                    for i in stride(from: chunk + writer, to: end, by: writers) {
                        await cache.storeData(body(i), info: info, for: url(i))
                    }
                }
            }
        }
        if progress { log("stored \(end - ids.lowerBound) of \(ids.count)") }
    }
}

/// Reads `ids` through `readers` concurrent tasks; returns the misses and the wrong answers.
func read(_ cache: DiskCache, _ ids: [Int], readers: Int) async -> (misses: Int, wrong: Int) {
    await withTaskGroup(of: (Int, Int).self) { group in
        for reader in 0..<readers {
            group.addTask {
                var misses = 0, wrong = 0
                for k in stride(from: reader, to: ids.count, by: readers) {
                    guard let entry = await cache.cachedData(for: url(ids[k])) else {
                        misses += 1
                        continue
                    }
                    if entry.data != body(ids[k]) { wrong += 1 }
                }
                return (misses, wrong)
            }
        }
        return await group.reduce((0, 0)) { ($0.0 + $1.0, $0.1 + $1.1) }
    }
}

/// The file of `url`'s entry: `<dir>/<xx>/<name>` (two levels) or `<dir>/<name>` (flat).
func entryPath(_ directory: URL, _ url: URL) -> String {
    let name = DiskCache.fileName(for: url)
    let nested = directory.path + "/" + name.prefix(2) + "/" + name
    return FileManager.default.fileExists(atPath: nested) ? nested : directory.path + "/" + name
}

func log(_ line: String) { FileHandle.standardError.write(Data(("DiskCacheBenchmark: " + line + "\n").utf8)) }
func result(_ label: String, _ value: String) { print("\(label)\t\(value)") }

func grouped(_ n: Int) -> String {
    let digits = String(abs(n))
    var out = ""
    for (k, c) in digits.enumerated() {
        if k > 0 && (digits.count - k) % 3 == 0 { out += "," }
        out.append(c)
    }
    return (n < 0 ? "-" : "") + out
}

func fixed(_ value: Double, _ decimals: Int) -> String { String(format: "%.\(decimals)f", value) }

func percentile(_ sorted: [Double], _ q: Double) -> Double {
    sorted.isEmpty ? .nan : sorted[min(sorted.count - 1, Int(Double(sorted.count) * q))]
}

/// VmRSS and RssAnon of this process, in bytes.
func residentBytes() -> (rss: Int, anon: Int) {
    guard let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8) else { return (0, 0) }
    func field(_ name: String) -> Int {
        guard let line = status.split(separator: "\n").first(where: { $0.hasPrefix(name + ":") }) else { return 0 }
        return (Int(line.split(separator: " ").dropFirst().first ?? "") ?? 0) * 1024
    }
    return (field("VmRSS"), field("RssAnon"))
}

/// The allocated bytes (st_blocks × 512) of `path` and everything under it, and the most names in one folder.
func diskUsage(_ path: String) -> (bytes: Int, mostNames: Int) {
    var status = stat()
    guard lstat(path, &status) == 0 else { return (0, 0) }
    var bytes = Int(status.st_blocks) * 512
    guard status.st_mode & S_IFMT == S_IFDIR, let folder = opendir(path) else { return (bytes, 0) }
    defer { closedir(folder) }
    var names = 0, most = 0
    while let entry = readdir(folder) {
        let name = withUnsafeBytes(of: entry.pointee.d_name) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
        if name == "." || name == ".." { continue }
        names += 1
        let inner = diskUsage(path + "/" + name)
        bytes += inner.bytes
        most = max(most, inner.mostNames)
    }
    return (bytes, max(most, names))
}

/// Runs this executable with `arguments` and returns its "label<TAB>value" lines; the children
/// of one call run at the same time.
func children(_ argumentLists: [[String]]) throws -> [[String: String]] {
    let executable = URL(fileURLWithPath: try FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe"))
    let running = try argumentLists.map { arguments -> (Process, Pipe) in
        let process = Process(), pipe = Pipe()
        process.executableURL = executable
        process.arguments = arguments
        process.standardOutput = pipe
        try process.run()
        return (process, pipe)
    }
    return running.map { process, pipe in
        let output = String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        if process.terminationStatus != 0 { log("child \(process.arguments ?? []) exited with \(process.terminationStatus)") }
        var values: [String: String] = [:]
        for line in output.split(separator: "\n") {
            let parts = line.split(separator: "\t", maxSplits: 1)
            if parts.count == 2 { values[String(parts[0])] = String(parts[1]) }
        }
        return values
    }
}

/// Best of three runs of `body` over `lookups` lookups, on the global executor (not the main
/// actor, as a pipeline's callers are), in µs per lookup.
func microseconds(_ body: @escaping @Sendable () async -> Int) async -> Double {
    await Task.detached {
        var best = Double.infinity
        for _ in 0..<3 {
            let start = now()
            let hits = await body()
            best = min(best, now() - start)
            precondition(hits >= 0)
        }
        return best / Double(lookups) * 1e6
    }.value
}

/// Each lookup's latency in µs, one at a time: `ids` once, or round and round until `stop` says
/// so, one lookup per `pace` at most (a steady load beside a background pass, not a flood that
/// competes with it for the two cores).
func latencies(_ cache: DiskCache, _ ids: [Int], until stop: (@Sendable () -> Bool)? = nil,
               pace: Duration = .zero) async -> (sorted: [Double], misses: Int) {
    var times: [Double] = []
    var misses = 0
    times.reserveCapacity(ids.count)
    var k = 0
    while stop.map({ !$0() }) ?? (k < ids.count) {
        let start = now()
        if await cache.cachedData(for: url(ids[k % ids.count])) == nil { misses += 1 }
        times.append((now() - start) * 1e6)
        k += 1
        if pace > .zero { try? await Task.sleep(for: pace) }
    }
    return (times.sorted(), misses)
}

/// A flag one task sets and another polls.
final class StopFlag: Sendable {
    private let value = Mutex(false)
    var isSet: Bool { value.withLock { $0 } }
    func set() { value.withLock { $0 = true } }
}

/// A new instance's totalSize and entryCount, and the latencies of `hits` on it (sorted, µs).
func probe(_ directory: URL, hits ids: [Int]) async throws -> (total: Int, count: Int, sorted: [Double]) {
    let cache = try open(directory)
    let total = await cache.totalSize, count = await cache.entryCount
    _ = await latencies(cache, Array(ids.prefix(1_000)))  // the pool's threads started
    let idle = await latencies(cache, ids)
    await cache.waitForMaintenance()
    return (total, count, idle.sorted)
}

/// A new instance on `directory`, timed from the open to its first hit (entry N/2, checked) and to
/// its entryCount (the index complete), in seconds.
func timedOpen(_ directory: URL, entries n: Int) async throws
    -> (DiskCache, (firstHit: Double, hit: Bool, complete: Double, count: Int)) {
    let start = now()
    let cache = try open(directory)
    let first = await cache.cachedData(for: url(n / 2))
    let firstHit = now() - start
    let count = await cache.entryCount
    return (cache, (firstHit, first?.data == body(n / 2), now() - start, count))
}

/// The whole benchmark at `entries` entries.
func benchmark(entries n: Int) async throws {
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent("DiskCacheBenchmark-\(UUID().uuidString)")
    defer {
        log("removing \(directory.path)")
        try? FileManager.default.removeItem(at: directory)
    }
    result("entries", grouped(n))

    // Fill: 64 writers at once, until the stores returned and the instance is idle.
    do {
        log("filling \(n) entries")
        let start = now()
        let writer = try open(directory)
        await writer.waitForMaintenance()
        await store(writer, 0..<n, writers: 64, progress: n >= 200_000)
        await writer.waitForMaintenance()
        result("fill (storeData, 64 writers at once)", "\(grouped(Int(Double(n) / (now() - start)))) entries/s")
    }

    // Open: a new instance, timed to its first hit and to entryCount (the index complete).
    log("open and lookups")
    do {
        let (cache, opened) = try await timedOpen(directory, entries: n)
        result("open → first hit", "\(fixed(opened.firstHit * 1000, 1)) ms" + (opened.hit ? "" : " (MISSED)"))
        result("open → index complete (entryCount == N)",
               "\(grouped(Int(opened.complete * 1000))) ms" + (opened.count == n ? "" : " (entryCount \(grouped(opened.count)))"))

        // Lookups at a fixed pseudo-random order.
        let ids = order(lookups, in: 0..<n, seed: 1)
        let hitURLs = ids.map(url), missURLs = ids.map(missURL)
        let paths = hitURLs.map { entryPath(directory, $0) }
        let hit = await microseconds {
            var hits = 0
            for u in hitURLs where await cache.cachedData(for: u) != nil { hits += 1 }
            precondition(hits == lookups, "hits: \(hits) of \(lookups)")
            return hits
        }
        let miss = await microseconds {
            var hits = 0
            for u in missURLs where await cache.cachedData(for: u) != nil { hits += 1 }
            precondition(hits == 0)
            return hits
        }
        let contents = await microseconds {
            var hits = 0
            for path in paths where (try? Data(contentsOf: URL(fileURLWithPath: path))) != nil { hits += 1 }
            precondition(hits == lookups)
            return hits
        }
        let stats = await microseconds {
            var hits = 0
            var status = stat()
            for path in paths where stat(path, &status) == 0 { hits += 1 }
            precondition(hits == lookups)
            return hits
        }
        result("cachedData hit (async, best of 3 × 20,000)", "\(fixed(hit, 1)) µs")
        result("cachedData miss", "\(fixed(miss, 1)) µs")
        result("peer: Data(contentsOf:) of the same file", "\(fixed(contents, 1)) µs")
        result("peer: stat(2) of the same file", "\(fixed(stats, 1)) µs")
        await cache.waitForMaintenance()
    }

    // Resident memory, in fresh processes: this directory, and an empty one.
    log("resident memory")
    let empty = FileManager.default.temporaryDirectory.appendingPathComponent("DiskCacheBenchmark-empty-\(UUID().uuidString)")
    defer { try? FileManager.default.removeItem(at: empty) }
    let full = try children([["resident", directory.path, String(n)]])[0]
    let none = try children([["resident", empty.path, "0"]])[0]
    let growth = (Int(full["after"] ?? "") ?? 0) - (Int(full["before"] ?? "") ?? 0)
    let anonGrowth = (Int(full["anonAfter"] ?? "") ?? 0) - (Int(full["anonBefore"] ?? "") ?? 0)
    let fixedCost = (Int(none["after"] ?? "") ?? 0) - (Int(none["before"] ?? "") ?? 0)
    result("resident growth per entry (VmRSS, fresh process: open + entryCount + 20,000 hits)",
           "\(grouped(growth / max(n, 1))) B (anonymous \(grouped(anonGrowth / max(n, 1))) B; less the empty folder's growth \(grouped((growth - fixedCost) / max(n, 1))) B)"
           + (full["count"] == String(n) ? "" : " (entryCount \(full["count"] ?? "?"))"))
    result("the same child on an empty folder (fixed cost)", "\(fixed(Double(fixedCost) / 1_048_576, 1)) MiB")

    // Disk: every file and folder's blocks, the most names in one folder.
    log("disk usage")
    let usage = diskUsage(directory.path)
    result("bytes on disk per entry (st_blocks of all files and folders; payload 1,024 B)",
           "\(grouped(usage.bytes / n)) B (\(fixed(Double(usage.bytes) / Double(n) / Double(bodySize), 2))×)")
    result("most names in one folder", grouped(usage.mostNames))

    // Lost index: the index files deleted, then a fresh process opens the directory.
    let indexFiles = (try? FileManager.default.contentsOfDirectory(atPath: directory.path))?.filter { $0.hasPrefix("index.sqlite") } ?? []
    if indexFiles.isEmpty {
        result("lost index (index.sqlite* deleted): open → first hit", "n/a (no index files: every open scans)")
        result("lost index: open → index rebuilt (entryCount == N)", "n/a")
    } else {
        log("lost index: deleting \(indexFiles.joined(separator: ", "))")
        for name in indexFiles { try FileManager.default.removeItem(atPath: directory.path + "/" + name) }
        let reopened = try children([["reopen", directory.path, String(n)]])[0]
        result("lost index (index.sqlite* deleted): open → first hit",
               "\(reopened["first"] ?? "?") ms" + (reopened["hit"] == "yes" ? "" : " (MISSED)"))
        result("lost index: open → index rebuilt (entryCount == N)",
               "\(reopened["complete"] ?? "?") ms" + (reopened["count"] == String(n) ? "" : " (entryCount \(reopened["count"] ?? "?"))"))
    }

    // Two processes: one worker alone, then two at once, each storing M new entries and reading M old ones.
    log("worker processes")
    let m = workerEntries
    // Each run's workers start together, two seconds on (time to start and open).
    func startAt() -> String { String(Date().timeIntervalSince1970 + 2) }
    let alone = try children([["worker", directory.path, String(n + 2 * m), String(m), String(n), "3", startAt()]])[0]
    let at = startAt()
    let pair = try children([["worker", directory.path, String(n), String(m), String(n), "1", at],
                             ["worker", directory.path, String(n + m), String(m), String(n), "2", at]])
    result("one process alone: stores/s, hits/s (\(grouped(m)) of each at once, 8 tasks each)",
           "\(alone["stores"] ?? "?") / \(alone["hits"] ?? "?")")
    result("two processes at once: stores/s, each", pair.map { $0["stores"] ?? "?" }.joined(separator: " and "))
    result("two processes at once: hits/s, each", pair.map { $0["hits"] ?? "?" }.joined(separator: " and "))
    let checked = ([alone] + pair).map { (Int($0["misses"] ?? "") ?? -1, Int($0["wrong"] ?? "") ?? -1) }
    result("reads checked byte for byte: misses, wrong bytes",
           "\(checked.map(\.0).reduce(0, +)), \(checked.map(\.1).reduce(0, +)) of \(grouped(3 * m))")

    // Eviction: a new instance capped at 90% of the total, trimming to the cap; hits meanwhile.
    log("eviction")
    // The hits go to the entries the two workers stored at once, the newest: no pass of 10% evicts
    // them (the lone worker's, stored before, were never read since, and go first when the
    // workers' reads touched most of a small fill).
    let newest = n..<n + 2 * m
    let (total, before, idle) = try await probe(directory, hits: order(5_000, in: newest, seed: 4))
    result("entries before the eviction (N + 3 × \(grouped(m)) stored by the workers)",
           grouped(before) + (before == n + 3 * m ? "" : " (expected \(grouped(n + 3 * m)))"))
    let target = before * 9 / 10
    let stop = StopFlag()
    let start = now()
    let cache = try open(directory, sizeLimit: Int(Double(total) * 0.9), trimRatio: 1)
    let during = Task.detached {
        await latencies(cache, order(100_000, in: newest, seed: 5), until: { stop.isSet }, pace: .milliseconds(1))
    }
    await cache.waitForMaintenance()
    var count = await cache.entryCount, passes = 0
    while count > target && passes < 3 {
        await cache.trim()
        count = await cache.entryCount
        passes += 1
    }
    let evicted = now() - start
    stop.set()
    let hits = await during.value
    result("eviction of 10% (sizeLimit 90% of totalSize, trimRatio 1): open → entryCount ≤ 90%",
           "\(fixed(evicted, 2)) s" + (count <= target ? "" : " (entryCount \(grouped(count)) > \(grouped(target)))")
           + (passes > 0 ? " (\(passes) trim() after the open's pass)" : ""))
    result("hits while it runs: median / p99 (idle: median / p99)",
           "\(fixed(percentile(hits.sorted, 0.5), 0)) / \(fixed(percentile(hits.sorted, 0.99), 0)) µs over \(grouped(hits.sorted.count)) hits"
           + (hits.misses == 0 ? "" : ", \(grouped(hits.misses)) missed")
           + " (idle \(fixed(percentile(idle, 0.5), 0)) / \(fixed(percentile(idle, 0.99), 0)) µs)")
    await cache.waitForMaintenance()
}

/// Child: VmRSS before the cache opens and after open + entryCount + 20,000 lookups.
func resident(_ directory: URL, entries n: Int) async throws {
    let urls = (n > 0 ? order(lookups, in: 0..<n, seed: 6) : Array(0..<lookups)).map(url)
    let before = residentBytes()
    let cache = try open(directory)
    let count = await cache.entryCount
    var hits = 0
    for u in urls where await cache.cachedData(for: u) != nil { hits += 1 }
    let after = residentBytes()
    result("before", String(before.rss))
    result("after", String(after.rss))
    result("anonBefore", String(before.anon))
    result("anonAfter", String(after.anon))
    result("count", String(count))
    result("hits", String(hits))
    await cache.waitForMaintenance()
}

/// Child: open → first hit and open → entryCount, in ms.
func reopen(_ directory: URL, entries n: Int) async throws {
    let (cache, opened) = try await timedOpen(directory, entries: n)
    result("first", fixed(opened.firstHit * 1000, 1))
    result("hit", opened.hit ? "yes" : "no")
    result("complete", grouped(Int(opened.complete * 1000)))
    result("count", String(opened.count))
    await cache.waitForMaintenance()
}

/// Child: from `startAt` (seconds since 1970, the same for every worker of a run), stores entries
/// `first..<first + m` and reads m of `0..<existing` (checked) at the same time, each timed to its end.
func worker(_ directory: URL, first: Int, count m: Int, existing: Int, seed: UInt64, startAt: Double) async throws {
    let cache = try open(directory)
    try await Task.sleep(for: .seconds(max(0, startAt - Date().timeIntervalSince1970)))
    let start = now()
    async let stored: Double = {
        await store(cache, first..<first + m, writers: 8)
        return now() - start
    }()
    async let checked: (misses: Int, wrong: Int, seconds: Double) = {
        let (misses, wrong) = await read(cache, order(m, in: 0..<existing, seed: seed), readers: 8)
        return (misses, wrong, now() - start)
    }()
    let (storeSeconds, reads) = await (stored, checked)
    result("stores", grouped(Int(Double(m) / storeSeconds)))
    result("hits", grouped(Int(Double(m) / reads.seconds)))
    result("misses", String(reads.misses))
    result("wrong", String(reads.wrong))
    await cache.waitForMaintenance()
}

let arguments = CommandLine.arguments
func argument(_ k: Int) -> String { k < arguments.count ? arguments[k] : "" }
switch argument(1) {
case "resident":
    try await resident(URL(fileURLWithPath: argument(2)), entries: Int(argument(3)) ?? 0)
case "reopen":
    try await reopen(URL(fileURLWithPath: argument(2)), entries: Int(argument(3)) ?? 0)
case "worker":
    try await worker(URL(fileURLWithPath: argument(2)), first: Int(argument(3)) ?? 0, count: Int(argument(4)) ?? 0,
                     existing: Int(argument(5)) ?? 1, seed: UInt64(argument(6)) ?? 1, startAt: Double(argument(7)) ?? 0)
default:
    try await benchmark(entries: Int(argument(1)) ?? 100_000)
}
