import CacheDisk
import Foundation
import PipelineCore
import PipelineTestSupport
import Testing

/// Issue 22, point 5: the caps bound the disk. A 1 MiB cap counted file lengths and used 24 MB
/// of 4 KiB blocks (5,706 tiny files); a 32 MiB cap used 402 MB and 100,075 inodes; the
/// default cap's 16 MiB floor filled a 2 MiB file system.
@Suite("Disk cache caps count disk space and entries")
struct DiskCacheDiskSpaceTests {
    static func url(_ i: Int) -> URL { URL(string: "test://tiny/\(i)")! }

    /// 600 entries of 100 bytes under a 256 KiB cap, the count cap out of the way: by their
    /// lengths (about 170 bytes each, 100 KB in all) nothing would go, but each takes a block of
    /// the file system (4 KiB on most), so the directory's real `st_blocks` sum stays under the
    /// cap only if the cap counts blocks.
    @Test func manyTinyEntriesStayWithinTheCapMeasuredByTheirBlocks() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let cap = 256 << 10
        let cache = try makeCache(directory, sizeLimit: cap, countLimit: 1_000_000)
        await cache.waitForMaintenance()
        for i in 0..<600 { await cache.storeData(Data(repeating: UInt8(i & 0xFF), count: 100), info: CacheEntryInfo(), for: Self.url(i)) }
        await cache.trim()
        let real = allocatedBytes(in: directory)
        #expect(real <= cap, "the directory takes \(real) bytes of disk under a cap of \(cap)")
        #expect(await cache.totalSize == real)  // the cache's count is the disk's
        #expect(await cache.entryCount > 0)
        // The most recent entries are the ones kept.
        #expect(await cache.cachedData(for: Self.url(599))?.data.count == 100)
    }

    /// After a 304 only the index changes: no file is added, and the size and count stay.
    @Test func a304AddsNoFileAndNoSize() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let cache = try makeCache(directory)
        await cache.storeData(Data(count: 100), info: CacheEntryInfo(etag: "\"a\""), for: Self.url(1))
        let files = directory.entryFolderFiles, size = await cache.totalSize
        await cache.updateInfo(CacheEntryInfo(etag: "\"a\"", freshUntil: Date(timeIntervalSince1970: 4e9)), for: Self.url(1))
        #expect(directory.entryFolderFiles == files)
        #expect(await cache.totalSize == size && size == allocatedBytes(in: directory))
        let reopened = try makeCache(directory)
        #expect(await reopened.totalSize == allocatedBytes(in: directory))
        #expect(await reopened.cachedData(for: Self.url(1))?.info.freshUntil == Date(timeIntervalSince1970: 4e9))
    }

    /// The count cap holds however little space the entries take; trimmed to the trim ratio.
    @Test func theEntryCountCapHolds() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let cache = try makeCache(directory, sizeLimit: 1 << 30, countLimit: 50)
        #expect(cache.countLimit == 50)
        await cache.waitForMaintenance()
        for i in 0..<200 { await cache.storeData(Data(count: 10), info: CacheEntryInfo(), for: Self.url(i)) }
        await cache.trim()
        let files = directory.entryNames.count
        #expect(files <= 50 && files >= 40, "\(files) entry files under a count cap of 50")
        #expect(await cache.entryCount == files)
        #expect(await cache.cachedData(for: Self.url(199)) != nil)
    }

    /// The default count cap: one entry per 4 KiB of the size cap.
    @Test func theDefaultCountCapFollowsTheSizeCap() throws {
        #expect(DiskCache.defaultCountLimit(sizeLimit: 32 << 20) == 8192)
        #expect(DiskCache.defaultCountLimit(sizeLimit: 1 << 30) == 262_144)
        #expect(DiskCache.defaultCountLimit(sizeLimit: 0) == 1)
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        #expect(try makeCache(directory, sizeLimit: 1 << 20).countLimit == 256)
    }

    /// The default size cap is a tenth of the free space, at most 1 GiB, with no floor: a 2 MiB
    /// file system gets about 200 KiB (it got 16 MiB, eight times the whole disk).
    @Test func theDefaultSizeCapNeverExceedsATenthOfTheFreeSpace() {
        #expect(DiskCache.defaultSizeLimit(freeSpace: 2 << 20) == (2 << 20) / 10)
        #expect(DiskCache.defaultSizeLimit(freeSpace: 0) == 0)
        #expect(DiskCache.defaultSizeLimit(freeSpace: 5 << 30) == 512 << 20)
        #expect(DiskCache.defaultSizeLimit(freeSpace: 100 << 30) == 1 << 30)
        #expect(DiskCache.defaultSizeLimit(freeSpace: nil) == 16 << 20)
        for free in stride(from: 0, through: 200 << 20, by: 1 << 20) {
            #expect(DiskCache.defaultSizeLimit(freeSpace: free) <= free / 10)
        }
    }
}
