import CacheDisk
import Foundation
import PipelineCore
import PipelineTestSupport
import Testing

/// Child processes (`DiskCacheCrashWriter`) writing `DiskCachePattern` entries: killed with
/// SIGKILL mid-loop, or two at once on one directory. Afterwards every entry must be absent or
/// byte-exact, with an ETag from the same version as its bytes.
@Suite("Disk cache across crashes and processes", .timeLimit(.minutes(4)), .serialized, .tags(.cpuBound))
struct DiskCacheCrashTests {
    static let keys = 24

    /// A writer; with `reportsStores`, its line after each store can be awaited (else its
    /// stdout is discarded). With `sizeLimit`, it runs in its churn mode: that cap (eviction
    /// throughout), a read and an info update after each store, a line after each.
    func launchWriter(_ directory: TemporaryDirectory, count: Int, seed: Int, reportsStores: Bool = false,
                      sizeLimit: Int? = nil) throws -> ExternalTool.Child {
        let executable = try #require(helperExecutable("DiskCacheCrashWriter"), "DiskCacheCrashWriter not built")
        let options = sizeLimit.map { ["--size-limit=\($0)"] } ?? []
        return try ExternalTool.Child(executable.path, [directory.url.path, "\(Self.keys)", "\(count)", "\(seed)"] + options,
                                      readsOutput: reportsStores)
    }

    /// Reads every key through a new cache; returns how many were present.
    func verifyEveryEntry(_ directory: TemporaryDirectory) async throws -> Int {
        let cache = try makeCache(directory)
        var present = 0
        for key in 0..<Self.keys {
            if let entry = await cache.cachedData(for: DiskCachePattern.url(key)) {
                #expect(DiskCachePattern.isExact(entry, key: key), "key \(key)")
                present += 1
            }
        }
        #expect(await cache.entryCount == present)  // damaged ones were removed by the reads
        return present
    }

    @Test func aWriterKilledMidLoopLeavesEveryEntryAbsentOrExact() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        var strayTemporaries = 0
        for round in 0..<4 {
            let writer = try launchWriter(directory, count: 0, seed: round + 1, reportsStores: true)
            // Let it write for a while (past its first entries, a later point each round, however
            // slow the machine is: it reports each store), then kill it without warning while its
            // four tasks are in their next writes.
            #expect(try await writer.lines(8 + 12 * round), "the writer stopped on its own")
            #expect(writer.process.isRunning)
            writer.kill(SIGKILL)
            #expect(writer.process.terminationReason == .uncaughtSignal && writer.process.terminationStatus == SIGKILL)
            strayTemporaries += directory.temporaryNames.count
            let present = try await verifyEveryEntry(directory)
            #expect(present > 0)
        }
        // Killed mid-write, a writer leaves its temporary file: evidence the kill landed inside a
        // write at least sometimes (not asserted: timing-dependent). Readers never see them.
        print("crash test: \(strayTemporaries) stray temporary files over 4 kills")
    }

    @Test func twoProcessesWritingTheSameKeysNeverCorruptAnEntry() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let writers = [try launchWriter(directory, count: 160, seed: 11), try launchWriter(directory, count: 160, seed: 12)]
        // Meanwhile this process reads the same keys through its own instance.
        let reader = try makeCache(directory)
        var reads = 0
        while writers.contains(where: \.process.isRunning) {
            for key in 0..<Self.keys {
                if let entry = await reader.cachedData(for: DiskCachePattern.url(key)) {
                    #expect(DiskCachePattern.isExact(entry, key: key), "key \(key)")
                    reads += 1
                }
            }
        }
        for writer in writers {
            writer.process.waitUntilExit()
            #expect(writer.process.terminationStatus == 0)
        }
        #expect(reads > 0)
        #expect(try await verifyEveryEntry(directory) == Self.keys)
        #expect(directory.temporaryNames.isEmpty)
    }

    @Test func twoInstancesInOneProcessShareADirectorySafely() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let caches = [try makeCache(directory), try makeCache(directory)]
        await withTaskGroup(of: Void.self) { group in
            for (n, cache) in caches.enumerated() {
                group.addTask {
                    for step in 0..<60 {
                        let key = step % 8, version = n * 1000 + step
                        await cache.storeData(DiskCachePattern.body(key: key, version: version),
                                              info: CacheEntryInfo(etag: DiskCachePattern.etag(version)),
                                              for: DiskCachePattern.url(key))
                        if let entry = await caches[1 - n].cachedData(for: DiskCachePattern.url((key + 3) % 8)) {
                            #expect(DiskCachePattern.isExact(entry, key: (key + 3) % 8))
                            await caches[1 - n].updateInfo(entry.info, for: DiskCachePattern.url((key + 3) % 8))
                        }
                    }
                }
            }
        }
        for key in 0..<8 {
            let entry = try #require(await caches[0].cachedData(for: DiskCachePattern.url(key)))
            #expect(DiskCachePattern.isExact(entry, key: key))
        }
    }
}
