// A child process for the disk-cache crash and multi-process tests: stores (and re-validates)
// DiskCachePattern entries in a loop from several tasks at once, until it is killed or has done
// `count` stores. It writes a line to stdout after each store: the test's signal that it is
// under way (a line is one `write`, whole even with four tasks writing).
//
// Usage: DiskCacheCrashWriter <directory> <keys> <count (0 = forever)> <seed>
import CacheDisk
import Foundation
import PipelineCore
import PipelineTestSupport

let arguments = CommandLine.arguments
guard arguments.count == 5, let keys = Int(arguments[2]), let count = Int(arguments[3]), let seed = Int(arguments[4]) else {
    FileHandle.standardError.write(Data("usage: DiskCacheCrashWriter <directory> <keys> <count> <seed>\n".utf8))
    exit(2)
}
// fsync before each rename keeps temporary files open for a while: a kill often lands mid-write.
let cache = try DiskCache(directory: URL(fileURLWithPath: arguments[1]), sizeLimit: 1 << 30, syncsWrites: true)

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
                FileHandle.standardOutput.write(Data("stored \(key)\n".utf8))
                if step % 3 == 0, let entry = await cache.cachedData(for: DiskCachePattern.url(key)) {
                    // A 304 for whatever version is there now: the sidecar must keep its ETag.
                    var refreshed = entry.info
                    refreshed.freshUntil = Date().addingTimeInterval(60)
                    await cache.updateInfo(refreshed, for: DiskCachePattern.url(key))
                }
            }
        }
    }
}
