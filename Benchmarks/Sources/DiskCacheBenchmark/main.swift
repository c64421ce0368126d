// Disk-cache open and lookup cost at 100,000 entries, beside peers measured in the same run:
//   DiskCache.cachedData(for:)        (ours, the async call the pipeline makes: pool hop + read)
//   Data(contentsOf:) of the file     (Foundation, the same file, no checks)
//   stat(2) of the file               (a floor: one path lookup in the kernel)
// The files sit in the page cache (they were just written): these are warm numbers.
// Run: swift run -c release DiskCacheBenchmark [entries]
import CacheDisk
import Foundation
import PipelineCore

let entryCount = CommandLine.arguments.count > 1 ? Int(CommandLine.arguments[1]) ?? 100_000 : 100_000
let bodySize = 1024
let lookups = 20_000

func now() -> Double { Double(DispatchTime.now().uptimeNanoseconds) / 1e9 }
func url(_ i: Int) -> URL { URL(string: "https://cdn.example.com/photos/\(i).jpg?w=320")! }
func missURL(_ i: Int) -> URL { URL(string: "https://cdn.example.com/missing/\(i).jpg?w=320")! }

let directory = FileManager.default.temporaryDirectory.appendingPathComponent("DiskCacheBenchmark-\(UUID().uuidString)")
defer { try? FileManager.default.removeItem(at: directory) }

// 1. Fill: entries stored through `storeData(_:info:for:)`, 64 writers at a time.
var start = now()
do {
    let writer = try DiskCache(directory: directory, sizeLimit: 1 << 30)
    await writer.waitForMaintenance()
    let body = Data((0..<bodySize).map { UInt8(truncatingIfNeeded: $0) })
    let info = CacheEntryInfo(etag: "\"abc\"", freshUntil: Date().addingTimeInterval(3600))
    await withTaskGroup(of: Void.self) { group in
        for chunk in 0..<64 {
            group.addTask {
                for i in stride(from: chunk, to: entryCount, by: 64) { await writer.storeData(body, info: info, for: url(i)) }
            }
        }
    }
}
print(String(format: "filled %d entries of %d bytes in %.2f s", entryCount, bodySize, now() - start))

// 2. Open: a new instance, timed to its first successful lookup; the index builds behind it.
start = now()
let cache = try DiskCache(directory: directory, sizeLimit: 1 << 30)
let first = await cache.cachedData(for: url(entryCount / 2))
let openTime = now() - start
precondition(first?.data.count == bodySize, "the first lookup must hit")
let count = await cache.entryCount
let indexTime = now() - start
precondition(count == entryCount, "index: \(count) of \(entryCount)")
print(String(format: "open → first hit            %8.2f ms   (the index of %d entries was ready after %.0f ms, in the background)",
             openTime * 1000, count, indexTime * 1000))

// 3. Lookups at a fixed pseudo-random order.
let order: [Int] = {
    var seed: UInt64 = 0x9E37_79B9
    return (0..<lookups).map { _ in
        seed = seed &* 6364136223846793005 &+ 1442695040888963407
        return Int(seed >> 33) % entryCount
    }
}()
let hitURLs = order.map(url), missURLs = order.map(missURL)
let hitPaths = hitURLs.map { directory.appendingPathComponent(DiskCache.fileName(for: $0)) }

func report(_ name: String, _ seconds: Double) {
    print(String(format: "%-30@ %8.2f µs per lookup", name as NSString, seconds / Double(lookups) * 1e6))
}

/// Best of three runs, on the global executor (not the main actor, as a pipeline's callers are).
func measure(_ name: String, _ body: @escaping @Sendable () async -> Int) async {
    let best = await Task.detached {
        var best = Double.infinity
        for _ in 0..<3 {
            let start = now()
            let hits = await body()
            best = min(best, now() - start)
            precondition(hits >= 0)
        }
        return best
    }.value
    report(name, best)
}

await measure("DiskCache hit (async)") {
    var hits = 0
    for u in hitURLs where await cache.cachedData(for: u) != nil { hits += 1 }
    precondition(hits == lookups)
    return hits
}
await measure("DiskCache miss (async)") {
    var hits = 0
    for u in missURLs where await cache.cachedData(for: u) != nil { hits += 1 }
    precondition(hits == 0)
    return hits
}
await measure("SHA-256 file name alone") {
    var total = 0
    for u in hitURLs { total &+= DiskCache.fileName(for: u).utf8.count }
    return total
}
await measure("Data(contentsOf:) peer") {
    var hits = 0
    for path in hitPaths where (try? Data(contentsOf: path)) != nil { hits += 1 }
    precondition(hits == lookups)
    return hits
}
await measure("stat(2) peer") {
    var hits = 0
    var status = stat()
    for path in hitPaths where stat(path.path, &status) == 0 { hits += 1 }
    return hits
}
