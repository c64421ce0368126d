import CacheDisk
import Foundation
import PipelineCore
import PipelineTestSupport
import Testing

@Suite("Disk cache entry format: the rendition record and the version bump")
struct DiskCacheFormatTests {
    @Test func aRenditionRecordRoundTripsAsItsOwnField() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let cache = try makeCache(directory)
        let url = URL(string: "imgpipe-rendition:///0123")!
        let record = RenditionRecord(originTag: "48213-1c291ca3", originalSize: PixelSize(width: 6000, height: 4000),
                                     format: .jpeg, standalone: true)
        // The validators stay validators: nothing of the record is written into them.
        let info = CacheEntryInfo(etag: "\"v1\"", lastModified: nil, freshUntil: Date(timeIntervalSince1970: 1_700_000_000),
                                  rendition: record)
        await cache.storeData(Data([1, 2, 3]), info: info, for: url)
        let entry = try #require(await cache.cachedData(for: url))
        #expect(entry.info == info)
        #expect(entry.info.rendition == record)
        #expect(entry.info.etag == "\"v1\"" && entry.info.lastModified == nil)
        // After a 304 the sidecar keeps it too.
        var refreshed = info
        refreshed.freshUntil = Date(timeIntervalSince1970: 1_800_000_000)
        await cache.updateInfo(refreshed, for: url)
        #expect(await cache.cachedData(for: url)?.info == refreshed)
        // An original's entry has none.
        await cache.storeData(Data([4]), info: CacheEntryInfo(etag: "\"o\""), for: URL(string: "https://a.example/o.jpg")!)
        #expect(await cache.cachedData(for: URL(string: "https://a.example/o.jpg")!)?.info.rendition == nil)
    }

    /// Found by the rebuild that moves the flat layout into the index, a version-1 entry is
    /// removed; the URL stored again reads back.
    @Test func anEntryOfTheFirstFormatIsAMissOnceAndRemoved() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let url = URL(string: "https://cdn.example.com/old.jpg")!
        let body = Data(repeating: 9, count: 100)
        // A version-1 entry as the previous release wrote it: 48 fixed bytes, the URL and an
        // ETag, the header CRC, then the body. Well-formed in every other way.
        let urlBytes = Array(url.absoluteString.utf8), etag = Array("\"v1\"".utf8)
        var header = Array("IPDC".utf8)
        func append<T: FixedWidthInteger>(_ value: T) { withUnsafeBytes(of: value.littleEndian) { header += $0 } }
        append(UInt16(1)); append(UInt16(2))
        append(UInt32(48 + urlBytes.count + etag.count + 4))
        append(UInt64(42)); append(UInt64(body.count)); append(CRC32.checksum(body)); append(UInt64(0))
        append(UInt32(urlBytes.count)); append(UInt16(etag.count)); append(UInt16(0))
        header += urlBytes + etag
        append(header.withUnsafeBytes { CRC32.checksum($0) })
        let path = directory.flatEntryPath(url)
        try (Data(header) + body).write(to: URL(fileURLWithPath: path))
        #expect(FileManager.default.fileExists(atPath: path))

        let cache = try makeCache(directory)
        #expect(await cache.cachedData(for: url) == nil)
        await cache.waitForMaintenance()
        #expect(!FileManager.default.fileExists(atPath: path))
        #expect(!FileManager.default.fileExists(atPath: directory.entryPath(url)))
        #expect(await cache.entryCount == 0)
        // Once: the entry written again is read back.
        await cache.storeData(body, info: CacheEntryInfo(etag: "\"v1\""), for: url)
        #expect(await cache.cachedData(for: url)?.data == body)
    }

    /// The placeholder hash is a field of the header and of the index's row: it round-trips, a
    /// 304 keeps it, a header read (`cachedDigest`) has it, and a damaged one is a miss. An
    /// entry written before the field existed (its length a reserved 0), found in the flat
    /// layout by the rebuild, reads as one without a placeholder.
    @Test func aPlaceholderRoundTripsInTheHeader() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let plain = URL(string: "https://cdn.example.com/plain.jpg")!
        let plainEntry = DiskCacheEntryTests.version2Entry(url: plain, info: CacheEntryInfo(etag: "\"o\""), body: Data([1]))
        #expect(plainEntry[50] == 0 && plainEntry[51] == 0 && plainEntry[6] & 16 == 0)
        try plainEntry.write(to: URL(fileURLWithPath: directory.flatEntryPath(plain)))
        let cache = try makeCache(directory)
        await cache.waitForMaintenance()
        let url = URL(string: "https://cdn.example.com/p.jpg")!
        let hash = try #require(ThumbHash(base64: "1QcSHQRnh493V4dIh4eXh1h4kJUI"))
        let info = CacheEntryInfo(etag: "\"p\"", placeholder: hash)
        await cache.storeData(Data(repeating: 7, count: 5000), info: info, for: url)
        #expect(await cache.cachedData(for: url)?.info == info)
        #expect(await cache.cachedDigest(for: url)?.info.placeholder == hash)
        var refreshed = info
        refreshed.freshUntil = Date(timeIntervalSince1970: 1_800_000_000)
        await cache.updateInfo(refreshed, for: url)
        #expect(await cache.cachedDigest(for: url)?.info == refreshed)
        // A heuristic lifetime is kept as such (flag 32), for the next bare 304.
        refreshed.lifetimeIsHeuristic = true
        await cache.updateInfo(refreshed, for: url)
        #expect(await cache.cachedDigest(for: url)?.info.lifetimeIsHeuristic == true)
        #expect(await cache.cachedData(for: url)?.info.validator?.allowsHeuristicLifetime == true)

        // A version-2 entry without a placeholder (placeholder length 0 in the field an earlier
        // release kept reserved, flag 16 clear) reads as one without a placeholder.
        #expect(await cache.cachedData(for: plain)?.info == CacheEntryInfo(etag: "\"o\""))

        // A hash byte flipped on disk fails the header's CRC: a miss, not a wrong placeholder.
        let path = directory.entryPath(url)
        var bytes = try Data(contentsOf: URL(fileURLWithPath: path))
        let headerLength = Int(bytes[8]) | Int(bytes[9]) << 8
        bytes[headerLength - 4 - 3] ^= 0xFF
        try bytes.write(to: URL(fileURLWithPath: path))
        #expect(await cache.cachedDigest(for: url) == nil)
    }
}
