import CacheDisk
import Foundation
import PipelineCore
import PipelineTestSupport
import Testing

@Suite("Disk cache review regressions: index and replacement", .timeLimit(.minutes(3)))
struct DiskCacheIndexRegressionTests {
    /// A read that finds a damaged entry removes the file; the index (size cap, entry count)
    /// must forget it too, or the phantom bytes count against the cap until the next rescan.
    @Test func aDamagedEntryRemovedByAReadLeavesTheIndex() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let cache = try makeCache(directory)
        let damagedURL = URL(string: "test://host/damaged")!, keptURL = URL(string: "test://host/kept")!
        await cache.storeData(Data(repeating: 7, count: 1000), info: CacheEntryInfo(), for: damagedURL)
        await cache.storeData(Data(repeating: 8, count: 10), info: CacheEntryInfo(), for: keptURL)
        #expect(await cache.entryCount == 2)
        let keptSize = try #require(FileIdentity(directory.entryPath(keptURL))).allocated  // the disk space it takes

        // A flipped body byte (CRC mismatch), then a truncated file (length mismatch).
        let path = directory.entryPath(damagedURL)
        var bytes = try Data(contentsOf: URL(fileURLWithPath: path))
        bytes[bytes.count - 1] ^= 0xFF
        try bytes.write(to: URL(fileURLWithPath: path))
        #expect(await cache.cachedData(for: damagedURL) == nil)
        #expect(!FileManager.default.fileExists(atPath: path))
        #expect(await cache.entryCount == 1)
        #expect(await cache.totalSize == keptSize)

        await cache.storeData(Data(repeating: 7, count: 1000), info: CacheEntryInfo(), for: damagedURL)
        let whole = try Data(contentsOf: URL(fileURLWithPath: path))
        try whole.prefix(whole.count - 10).write(to: URL(fileURLWithPath: path))
        #expect(await cache.cachedData(for: damagedURL) == nil)
        #expect(await cache.entryCount == 1)
        #expect(await cache.totalSize == keptSize)
    }

    /// Storing new bytes for a URL replaces its entry, also when the new bytes cannot be stored
    /// (over the cap): the old picture must not go on being served as the URL's content.
    @Test func aStoreTooLargeToKeepStillRemovesTheOldEntry() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let cache = try makeCache(directory, sizeLimit: 4096)
        let url = URL(string: "test://host/grew")!
        await cache.storeData(Data(repeating: 1, count: 100), info: CacheEntryInfo(etag: "\"v1\""), for: url)
        #expect(await cache.cachedData(for: url)?.data.count == 100)
        await cache.storeData(Data(repeating: 2, count: 8192), info: CacheEntryInfo(etag: "\"v2\""), for: url)
        #expect(await cache.cachedData(for: url) == nil)
        #expect(await cache.entryCount == 0)
    }
}
