import CacheDisk
import Foundation
import PipelineCore
import PipelineTestSupport
import Testing

@Suite("Disk cache entries: round trip, collisions, damage")
struct DiskCacheEntryTests {
    @Test func aStoredEntryReadsBackWithItsBytesAndInfo() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let cache = try makeCache(directory)
        let url = URL(string: "https://cdn.example.com/photos/1.jpg?w=320")!
        let bytes = Data((0..<5000).map { UInt8(truncatingIfNeeded: $0 &* 13) })
        let info = CacheEntryInfo(etag: "W/\"abc\"", lastModified: "Sun, 06 Nov 1994 08:49:37 GMT",
                                  freshUntil: Date(timeIntervalSince1970: 1_700_000_123.456))
        #expect(await cache.cachedData(for: url) == nil)
        await cache.storeData(bytes, info: info, for: url)
        let entry = try #require(await cache.cachedData(for: url))
        #expect(entry.data == bytes && entry.info == info)
        // An empty body and absent validators round-trip too.
        await cache.storeData(Data(), info: CacheEntryInfo(), for: url)
        let empty = try #require(await cache.cachedData(for: url))
        #expect(empty.data.isEmpty && empty.info == CacheEntryInfo())
        #expect(directory.entryNames.contains(DiskCache.fileName(for: url)))
        await cache.removeData(for: url)
        #expect(await cache.cachedData(for: url) == nil)
        #expect(directory.entryNames.isEmpty)
    }

    @Test func aNameCollisionNeverServesAnotherURLsEntry() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let sameName = String(repeating: "ab", count: 32)
        let cache = try makeCache(directory, fileName: { _ in sameName })
        let a = URL(string: "test://host/a")!, b = URL(string: "test://host/b")!
        await cache.storeData(Data("picture A".utf8), info: CacheEntryInfo(etag: "\"a\""), for: a)
        #expect(await cache.cachedData(for: b) == nil)
        #expect(await cache.cachedData(for: a)?.data == Data("picture A".utf8))  // B's miss left A alone

        await cache.updateInfo(CacheEntryInfo(etag: "\"a\"", freshUntil: .distantFuture), for: b)
        #expect(!directory.names.contains(sameName + ".info"))  // not written over A's entry
        await cache.removeData(for: b)
        #expect(await cache.cachedData(for: a) != nil)  // not removed either

        await cache.storeData(Data("picture B".utf8), info: CacheEntryInfo(), for: b)
        #expect(await cache.cachedData(for: a) == nil)  // replaced, and never B's bytes
        #expect(await cache.cachedData(for: b)?.data == Data("picture B".utf8))
        #expect(directory.entryNames == [sameName])
    }

    @Test func aTruncatedEntryReadsAsAMissAndIsRemovedAtEveryLength() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let cache = try makeCache(directory)
        let url = URL(string: "test://host/small")!
        await cache.storeData(Data("a small body".utf8), info: CacheEntryInfo(etag: "\"e\"", lastModified: "x",
                                                                             freshUntil: Date()), for: url)
        let path = directory.entryPath(url)
        let whole = try Data(contentsOf: URL(fileURLWithPath: path))
        #expect(whole.count > 60)
        for length in 0..<whole.count {
            try whole.prefix(length).write(to: URL(fileURLWithPath: path))
            #expect(await cache.cachedData(for: url) == nil, "length \(length)")
            #expect(!FileManager.default.fileExists(atPath: path), "length \(length)")
        }
        try whole.write(to: URL(fileURLWithPath: path))
        #expect(await cache.cachedData(for: url)?.data == Data("a small body".utf8))
    }

    @Test func anyFlippedByteReadsAsAMissAndIsRemoved() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let cache = try makeCache(directory)
        let url = URL(string: "test://host/flip")!
        await cache.storeData(Data("body bytes".utf8), info: CacheEntryInfo(etag: "\"e\"", freshUntil: Date()), for: url)
        let path = directory.entryPath(url)
        let whole = try Data(contentsOf: URL(fileURLWithPath: path))
        for offset in 0..<whole.count {
            var damaged = whole
            damaged[offset] ^= 0x20
            try damaged.write(to: URL(fileURLWithPath: path))
            #expect(await cache.cachedData(for: url) == nil, "offset \(offset)")
            #expect(!FileManager.default.fileExists(atPath: path), "offset \(offset)")
        }
        // A longer file (bytes appended) fails the length check.
        try (whole + Data([0])).write(to: URL(fileURLWithPath: path))
        #expect(await cache.cachedData(for: url) == nil)
    }

    @Test func hostileFilesAreMissesWithoutHugeAllocations() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let cache = try makeCache(directory, sizeLimit: 1 << 20)
        let url = URL(string: "test://host/hostile")!
        let path = directory.entryPath(url)
        // A header that declares a 4 GiB header, then one that declares a 4 GiB URL.
        var header = Array("IPDC".utf8) + [2, 0, 0, 0] + [0xFF, 0xFF, 0xFF, 0xFF]
        header += [UInt8](repeating: 0xFF, count: 200)
        try Data(header).write(to: URL(fileURLWithPath: path))
        #expect(await cache.cachedData(for: url) == nil)
        #expect(!FileManager.default.fileExists(atPath: path))
        // A sparse file far over the cap is refused from its size alone.
        #expect(FileManager.default.createFile(atPath: path, contents: Data("IPDC".utf8)))
        let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: path))
        try handle.truncate(atOffset: 8 << 30)
        try handle.close()
        #expect(await cache.cachedData(for: url) == nil)
        #expect(!FileManager.default.fileExists(atPath: path))
        // A directory where an entry should be, and garbage names, are ignored.
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: false)
        try Data("junk".utf8).write(to: directory.url.appendingPathComponent("README"))
        #expect(await cache.cachedData(for: url) == nil)
        await cache.trim()
        #expect(await cache.entryCount == 0)
    }

    @Test func updateInfoWritesASidecarAndNeverTheBody() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let cache = try makeCache(directory)
        let url = URL(string: "test://host/304")!
        let body = Data(repeating: 7, count: 10_000)
        await cache.storeData(body, info: CacheEntryInfo(etag: "\"v1\"", freshUntil: Date(timeIntervalSince1970: 0)), for: url)
        let before = try #require(FileIdentity(directory.entryPath(url)))
        let bytesBefore = try Data(contentsOf: URL(fileURLWithPath: directory.entryPath(url)))
        let refreshed = CacheEntryInfo(etag: "\"v1\"", freshUntil: Date(timeIntervalSince1970: 2_000_000_000))
        await cache.updateInfo(refreshed, for: url)
        #expect(FileIdentity(directory.entryPath(url)) == before)
        #expect(try Data(contentsOf: URL(fileURLWithPath: directory.entryPath(url))) == bytesBefore)
        #expect(await cache.cachedData(for: url)?.info == refreshed)
        // A 304 whose ETag names other bytes (the entry was replaced meanwhile) changes nothing.
        await cache.updateInfo(CacheEntryInfo(etag: "\"v0\"", freshUntil: .distantFuture), for: url)
        #expect(await cache.cachedData(for: url)?.info == refreshed)
        // A new store starts a new generation: the old sidecar no longer applies.
        let newInfo = CacheEntryInfo(etag: "\"v2\"")
        await cache.storeData(body, info: newInfo, for: url)
        #expect(await cache.cachedData(for: url)?.info == newInfo)
        // A damaged sidecar is ignored; the entry still serves with its own info.
        await cache.updateInfo(refreshed, for: url)  // ETag differs from v2: skipped
        #expect(await cache.cachedData(for: url)?.info == newInfo)
        await cache.updateInfo(CacheEntryInfo(etag: "\"v2\"", freshUntil: .distantFuture), for: url)
        let sidecar = URL(fileURLWithPath: directory.entryPath(url) + ".info")
        var damaged = try Data(contentsOf: sidecar)
        damaged[damaged.count - 1] ^= 1
        try damaged.write(to: sidecar)
        #expect(await cache.cachedData(for: url)?.info == newInfo)
    }

    @Test func aSecondInstanceOnTheDirectorySeesTheFirstOnesEntries() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let first = try makeCache(directory)
        for i in 0..<20 {
            await first.storeData(Data(repeating: UInt8(i), count: 100 + i), info: CacheEntryInfo(etag: "\"\(i)\""),
                                  for: URL(string: "test://host/\(i)")!)
        }
        let second = try makeCache(directory)
        #expect(await second.cachedData(for: URL(string: "test://host/7")!)?.data == Data(repeating: 7, count: 107))
        #expect(await second.entryCount == 20)
        let firstTotal = await first.totalSize
        #expect(await second.totalSize == firstTotal)
        await second.updateInfo(CacheEntryInfo(etag: "\"7\"", freshUntil: .distantFuture), for: URL(string: "test://host/7")!)
        #expect(await first.cachedData(for: URL(string: "test://host/7")!)?.info.freshUntil == .distantFuture)
        await second.removeAll()
        #expect(await first.cachedData(for: URL(string: "test://host/3")!) == nil)
        #expect(await second.entryCount == 0)
        await first.trim()
        #expect(await first.entryCount == 0)
        #expect(await first.totalSize == 0)
    }

    /// An entry stored in header version 2 (the info in that version's own fields) before
    /// version 3 still serves with all its info; a 304's sidecar applies to it; the next store
    /// writes version 3.
    @Test func aVersion2EntryStillReads() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let cache = try makeCache(directory)
        let url = URL(string: "https://cdn.example.com/old.jpg")!
        let body = Data((0..<300).map { UInt8(truncatingIfNeeded: $0 &* 7) })
        let hash = try #require(ThumbHash(base64: "1QcSHQRnh493V4dIh4eXh1h4kJUI"))
        let info = CacheEntryInfo(etag: "\"old\"", lastModified: "Sun, 06 Nov 1994 08:49:37 GMT",
                                  freshUntil: Date(timeIntervalSince1970: 1_700_000_123.456), lifetimeIsHeuristic: true,
                                  rendition: RenditionRecord(originTag: "5-9", originalSize: PixelSize(width: 8, height: 6),
                                                             format: .jpeg, standalone: false),
                                  placeholder: hash)
        let path = directory.entryPath(url)
        try Self.version2Entry(url: url, info: info, body: body).write(to: URL(fileURLWithPath: path))
        let entry = try #require(await cache.cachedData(for: url))
        #expect(entry.data == body && entry.info == info)
        #expect(await cache.cachedDigest(for: url)?.crc32 == CRC32.checksum(body))
        let refreshed = CacheEntryInfo(etag: "\"old\"", freshUntil: Date(timeIntervalSince1970: 2_000_000_000))
        await cache.updateInfo(refreshed, for: url)
        #expect(await cache.cachedData(for: url)?.info == refreshed)
        #expect(try Data(contentsOf: URL(fileURLWithPath: path)).subdata(in: 4..<6) == Data([2, 0]))  // not rewritten
        await cache.storeData(body, info: info, for: url)
        #expect(try Data(contentsOf: URL(fileURLWithPath: path)).subdata(in: 4..<6) == Data([3, 0]))
        #expect(await cache.cachedData(for: url)?.info == info)
        // A version-2 file damaged anywhere in its header is still a miss, and removed.
        try Self.version2Entry(url: url, info: info, body: body).write(to: URL(fileURLWithPath: path))
        var damaged = try Data(contentsOf: URL(fileURLWithPath: path))
        damaged[60] ^= 0x20
        try damaged.write(to: URL(fileURLWithPath: path))
        #expect(await cache.cachedData(for: url) == nil)
        #expect(!FileManager.default.fileExists(atPath: path))
    }

    /// An entry file in header version 2, built here from that version's description
    /// (`DiskCacheEntry+Version2.swift`).
    static func version2Entry(url: URL, info: CacheEntryInfo, body: Data) -> Data {
        func integer<T: FixedWidthInteger>(_ value: T, into out: inout [UInt8]) {
            withUnsafeBytes(of: value.littleEndian) { out.append(contentsOf: $0) }
        }
        let urlBytes = Array(url.absoluteString.utf8), etag = Array((info.etag ?? "").utf8)
        let lastModified = Array((info.lastModified ?? "").utf8)
        let record = info.rendition.map { [UInt8]($0.serialized) } ?? [], placeholder = info.placeholder?.bytes ?? []
        var flags: UInt16 = 0
        for (bit, present) in [(1, info.freshUntil != nil), (2, info.etag != nil), (4, info.lastModified != nil),
                               (8, info.rendition != nil), (16, info.placeholder != nil), (32, info.lifetimeIsHeuristic)]
        where present { flags |= UInt16(bit) }
        var out = Array("IPDC".utf8)
        integer(UInt16(2), into: &out)
        integer(flags, into: &out)
        integer(UInt32(52 + urlBytes.count + etag.count + lastModified.count + record.count + placeholder.count + 4), into: &out)
        integer(UInt64(0x1234_5678_9abc_def0), into: &out)
        integer(UInt64(body.count), into: &out)
        integer(CRC32.checksum(body), into: &out)
        integer((info.freshUntil?.timeIntervalSince1970 ?? 0).bitPattern, into: &out)
        integer(UInt32(urlBytes.count), into: &out)
        for count in [etag.count, lastModified.count, record.count, placeholder.count] { integer(UInt16(count), into: &out) }
        out += urlBytes + etag + lastModified + record + placeholder
        integer(out.withUnsafeBytes { CRC32.checksum($0) }, into: &out)
        return Data(out) + body
    }
}
