// A child process for the disk-cache crash and multi-process tests: stores (and re-validates)
// DiskCachePattern entries in a loop from several tasks at once, until it is killed or has done
// `count` stores. It writes a line to stdout after each store: the test's signal that it is
// under way (a line is one `write`, whole even with four tasks writing).
//
// Usage: DiskCacheCrashWriter <directory> <keys> <count (0 = forever)> <seed> [--size-limit=<bytes>]
//
// With `--size-limit` (the churn mode) the cache has that small cap, so stores cross it all the
// time and eviction passes (row deletes, then file removals) run throughout; writes are not
// `fsync`ed (more operations per second, so kills land at more kinds of points); and after each
// store every task also reads another key, whose hit is written to the index at once
// (`accessPersistInterval` 0: a last-use transaction per hit), and updates an entry's info
// (a row-only write), printing a line after each ("stored", "read", "updated").
import CacheDisk
import Foundation
import PipelineCore
import PipelineTestSupport

let arguments = Array(CommandLine.arguments.dropFirst())
let positional = arguments.filter { !$0.hasPrefix("--") }
let options = arguments.filter { $0.hasPrefix("--") }
let sizeLimit = options.first { $0.hasPrefix("--size-limit=") }.flatMap { Int($0.dropFirst("--size-limit=".count)) }
guard positional.count == 4, options.count == (sizeLimit == nil ? 0 : 1), let keys = Int(positional[1]),
      let count = Int(positional[2]), let seed = Int(positional[3]) else {
    FileHandle.standardError.write(Data("usage: DiskCacheCrashWriter <directory> <keys> <count> <seed> [--size-limit=<bytes>]\n".utf8))
    exit(2)
}
let directory = URL(fileURLWithPath: positional[0])
let churns = sizeLimit != nil
// fsync before each rename keeps temporary files open for a while: a kill often lands mid-write.
let cache = try DiskCache(directory: directory, sizeLimit: sizeLimit ?? 1 << 30, syncsWrites: !churns,
                          accessPersistInterval: churns ? 0 : 5)

func report(_ line: String) { FileHandle.standardOutput.write(Data((line + "\n").utf8)) }

await withTaskGroup(of: Void.self) { group in
    for worker in 0..<4 {
        group.addTask {
            var step = 0
            while count == 0 || step < count / 4 {
                step += 1
                let key = (step &* 7 &+ worker &* 13 &+ seed) % keys
                let version = seed &* 1_000_000 &+ worker &* 100_000 &+ step
                let info = CacheEntryInfo(etag: DiskCachePattern.etag(version), freshUntil: Date())
                await cache.storeData(DiskCachePattern.body(key: key, version: version), info: info,
                                      for: DiskCachePattern.url(key))
                report("stored \(key)")
                if churns {
                    // A hit on another key: its last use is written in a transaction of its own.
                    let other = (key &+ 5 &+ worker) % keys
                    if await cache.cachedData(for: DiskCachePattern.url(other)) != nil { report("read \(other)") }
                }
                if step % 3 == 0 || churns, let entry = await cache.cachedData(for: DiskCachePattern.url(key)) {
                    // A 304 for whatever version is there now: the stored info must keep its ETag.
                    var refreshed = entry.info
                    refreshed.freshUntil = Date().addingTimeInterval(60)
                    await cache.updateInfo(refreshed, for: DiskCachePattern.url(key))
                    if churns { report("updated \(key)") }
                }
            }
        }
    }
}
