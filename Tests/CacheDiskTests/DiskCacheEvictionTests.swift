import CacheDisk
import Foundation
import PipelineCore
import PipelineTestSupport
import Testing

@Suite("Disk cache size cap and LRU eviction")
struct DiskCacheEvictionTests {
    static func url(_ i: Int) -> URL { URL(string: "test://lru/\(i < 10 ? "0" : "")\(i)")! }

    /// The file size of one 1000-byte entry of ``url(_:)``.
    static func entrySize(_ directory: TemporaryDirectory) async throws -> Int {
        let probe = try makeCache(directory)
        await probe.storeData(Data(count: 1000), info: CacheEntryInfo(), for: url(99))
        let size = await probe.totalSize
        await probe.removeAll()
        return size
    }

    @Test func theLeastRecentlyUsedEntriesGoWhenAStoreCrossesTheCap() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let size = try await Self.entrySize(directory)
        let cache = try makeCache(directory, sizeLimit: 10 * size, trimRatio: 0.8)
        await cache.waitForMaintenance()
        for i in 0..<10 { await cache.storeData(Data(count: 1000), info: CacheEntryInfo(), for: Self.url(i)) }
        await cache.waitForMaintenance()
        #expect(await cache.entryCount == 10)  // at the cap, not over it: nothing goes
        _ = await cache.cachedData(for: Self.url(0))  // 0 and 1 become the most recent
        _ = await cache.cachedData(for: Self.url(1))
        await cache.storeData(Data(count: 1000), info: CacheEntryInfo(), for: Self.url(10))
        await cache.waitForMaintenance()
        // 11 entries over a cap of 10 are trimmed to 8: the three least recently used go.
        let present = (0...10).filter { FileManager.default.fileExists(atPath: directory.entryPath(Self.url($0))) }
        #expect(present == [0, 1, 5, 6, 7, 8, 9, 10])
        #expect(await cache.entryCount == 8)
        #expect(await cache.totalSize == 8 * size)
    }

    @Test func openingOverTheCapTrimsByPersistedAccessTimes() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let size = try await Self.entrySize(directory)
        let writer = try makeCache(directory, accessPersistInterval: 0)
        // Stored in order, with last uses a second apart in the past, set in the index here.
        let past = Date().addingTimeInterval(-100)
        for i in 0..<10 {
            await writer.storeData(Data(count: 1000), info: CacheEntryInfo(), for: Self.url(i))
            await writer.setLastUse(past.addingTimeInterval(Double(i)), for: Self.url(i))
        }
        // Reads, written to the index (interval 0: at once, in the background; waitForMaintenance
        // waits for them), make 2 and 3 the most recent.
        _ = await writer.cachedData(for: Self.url(2))
        _ = await writer.cachedData(for: Self.url(3))
        await writer.waitForMaintenance()
        // A new instance with a smaller cap trims on open, ordering by the index's last uses.
        let reopened = try makeCache(directory, sizeLimit: 5 * size, trimRatio: 0.8)
        await reopened.waitForMaintenance()
        let present = (0..<10).filter { FileManager.default.fileExists(atPath: directory.entryPath(Self.url($0))) }
        #expect(present == [2, 3, 8, 9])
    }

    /// Hits wait in memory and are written in one batch: nothing reaches the index before the
    /// interval or a full batch, and ``DiskCache/waitForMaintenance()`` writes them. (Without
    /// batching, each hit would be a write transaction on the request path.)
    @Test func hitsAreWrittenToTheIndexInBatches() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let size = try await Self.entrySize(directory)
        let cache = try makeCache(directory, accessPersistInterval: 3600)
        let past = Date().addingTimeInterval(-2 * 86_400)  // longer ago than the interval: hits count
        for i in 0..<10 {
            await cache.storeData(Data(count: 1000), info: CacheEntryInfo(), for: Self.url(i))
            await cache.setLastUse(past.addingTimeInterval(Double(i)), for: Self.url(i))
        }
        _ = await cache.cachedData(for: Self.url(0))
        _ = await cache.cachedData(for: Self.url(1))
        // Another instance sees no hit yet: it evicts 0 and 1 first...
        let other = try makeCache(directory, sizeLimit: 9 * size, trimRatio: 1)
        await other.waitForMaintenance()
        #expect(!FileManager.default.fileExists(atPath: directory.entryPath(Self.url(0))))
        // ...then, once the first instance has written its hits, it evicts by them.
        _ = await cache.cachedData(for: Self.url(4))
        await cache.waitForMaintenance()
        let third = try makeCache(directory, sizeLimit: 7 * size, trimRatio: 1)
        await third.waitForMaintenance()
        let present = (0..<10).filter { FileManager.default.fileExists(atPath: directory.entryPath(Self.url($0))) }
        #expect(present == [1, 4, 5, 6, 7, 8, 9])
    }

    /// A hit on an entry used more recently than ``DiskCache/accessPersistInterval`` is not
    /// written: the index is not rewritten for every hit of a hot entry, and entries used within
    /// one interval keep the order they had.
    @Test func aHitWithinTheIntervalKeepsTheLastUse() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let size = try await Self.entrySize(directory)
        let cache = try makeCache(directory, accessPersistInterval: 3600)
        let past = Date().addingTimeInterval(-100)
        for i in 0..<10 {
            await cache.storeData(Data(count: 1000), info: CacheEntryInfo(), for: Self.url(i))
            await cache.setLastUse(past.addingTimeInterval(Double(i)), for: Self.url(i))
        }
        _ = await cache.cachedData(for: Self.url(0))  // used 100 s ago: within the hour
        await cache.waitForMaintenance()
        let other = try makeCache(directory, sizeLimit: 9 * size, trimRatio: 1)
        await other.waitForMaintenance()
        #expect(!FileManager.default.fileExists(atPath: directory.entryPath(Self.url(0))))
        #expect(FileManager.default.fileExists(atPath: directory.entryPath(Self.url(1))))
    }

    /// Two instances (as two processes would) evicting at once delete disjoint rows: the total
    /// ends at the target, each evicted file is gone, and the index counts what is on disk.
    @Test func twoInstancesEvictingAtOnceAgreeWithTheDisk() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let size = try await Self.entrySize(directory)
        let caches = [try makeCache(directory, sizeLimit: 40 * size, trimRatio: 0.5),
                      try makeCache(directory, sizeLimit: 40 * size, trimRatio: 0.5)]
        await withTaskGroup(of: Void.self) { group in
            for (n, cache) in caches.enumerated() {
                group.addTask {
                    for i in stride(from: n, to: 200, by: 2) {
                        await cache.storeData(Data(count: 1000), info: CacheEntryInfo(), for: Self.url(i))
                    }
                    await cache.trim()
                }
            }
        }
        for cache in caches { await cache.waitForMaintenance() }
        let count = await caches[0].entryCount
        #expect(count <= 40 && count >= 20, "\(count) entries under a cap of 40 trimmed to 20")
        #expect(directory.entryNames.count == count)
        #expect(await caches[1].totalSize == allocatedBytes(in: directory))
    }

    @Test func entriesLargerThanTheCapAreNotStored() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let cache = try makeCache(directory, sizeLimit: 1000)
        await cache.storeData(Data(count: 1001), info: CacheEntryInfo(), for: Self.url(1))
        #expect(await cache.cachedData(for: Self.url(1)) == nil)
        #expect(await cache.entryCount == 0)
    }
}
