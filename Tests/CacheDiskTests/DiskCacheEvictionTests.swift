import CacheDisk
import Foundation
import PipelineCore
import PipelineTestSupport
import Testing

@Suite("Disk cache size cap and LRU eviction")
struct DiskCacheEvictionTests {
    static func url(_ i: Int) -> URL { URL(string: "test://lru/\(i < 10 ? "0" : "")\(i)")! }

    /// Whether a process waits for a `flock` on the file at `path`: `/proc/locks` lists a
    /// blocked request as `N: -> FLOCK ADVISORY WRITE <pid> <major>:<minor>:<inode> …`.
    static func hasLockWaiter(_ path: String) -> Bool {
        var status = stat()
        guard stat(path, &status) == 0, let locks = try? String(contentsOfFile: "/proc/locks", encoding: .utf8) else { return false }
        return locks.split(separator: "\n").contains { line in
            let fields = line.split(separator: " ")
            return fields.count > 6 && fields[1] == "->" && fields[2] == "FLOCK" && fields[6].hasSuffix(":\(status.st_ino)")
        }
    }

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
        // Stored in order, with last-use times a second apart in the past, set here: no waiting
        // for the kernel's coarse file-time tick to tell them apart.
        let past = time(nil) - 100
        for i in 0..<10 {
            await writer.storeData(Data(count: 1000), info: CacheEntryInfo(), for: Self.url(i))
            let times = [timespec(tv_sec: past + i, tv_nsec: 0), timespec(tv_sec: past + i, tv_nsec: 0)]
            #expect(utimensat(AT_FDCWD, directory.entryPath(Self.url(i)), times, 0) == 0)
        }
        // Reads, persisted as mtimes at once (interval 0), make 2 and 3 the most recent.
        _ = await writer.cachedData(for: Self.url(2))
        _ = await writer.cachedData(for: Self.url(3))
        // A new instance with a smaller cap trims on open, ordering by the files' mtimes.
        let reopened = try makeCache(directory, sizeLimit: 5 * size, trimRatio: 0.8)
        await reopened.waitForMaintenance()
        let present = (0..<10).filter { FileManager.default.fileExists(atPath: directory.entryPath(Self.url($0))) }
        #expect(present == [2, 3, 8, 9])
    }

    @Test func evictionWaitsForAnotherHolderOfTheDirectoryLock() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let size = try await Self.entrySize(directory)
        let cache = try makeCache(directory, sizeLimit: 4 * size, trimRatio: 0.5)
        await cache.waitForMaintenance()
        // Another process's eviction pass, as far as flock is concerned: a second open file.
        let lock = open(directory.url.appendingPathComponent(".lock").path, O_RDWR | O_CREAT, 0o644)
        #expect(lock >= 0)
        defer { close(lock) }
        #expect(flock(lock, LOCK_EX) == 0)
        for i in 0..<6 { await cache.storeData(Data(count: 1000), info: CacheEntryInfo(), for: Self.url(i)) }
        // The pass the stores started is blocked on the lock (the kernel lists it as a waiter
        // for the lock file), and has removed nothing.
        #expect(await eventually { Self.hasLockWaiter(directory.url.appendingPathComponent(".lock").path) })
        #expect(directory.entryNames.count == 6)  // held off while locked
        // Reads and writes do not take the lock.
        #expect(await cache.cachedData(for: Self.url(5)) != nil)
        flock(lock, LOCK_UN)
        await cache.waitForMaintenance()
        #expect(directory.entryNames.count == 2)
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
