import CacheDisk
import Foundation
import PipelineCore
import PipelineTestSupport
import Testing

@Suite("Disk cache entries: round trip, collisions, damage, rows, migration")
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
        // One file per entry, in its folder: nothing beside it.
        #expect(directory.entryFolderFiles == [directory.entryPath(url)])
        #expect(await cache.entryCount == 1)
        // An empty body and absent validators round-trip too.
        await cache.storeData(Data(), info: CacheEntryInfo(), for: url)
        let empty = try #require(await cache.cachedData(for: url))
        #expect(empty.data.isEmpty && empty.info == CacheEntryInfo())
        #expect(directory.entryNames == [DiskCache.fileName(for: url)])
        await cache.removeData(for: url)
        #expect(await cache.cachedData(for: url) == nil)
        #expect(directory.entryNames.isEmpty)
        #expect(await cache.entryCount == 0)
    }

    @Test func aNameCollisionNeverServesAnotherURLsEntry() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let sameName = String(repeating: "ab", count: 32)
        let cache = try makeCache(directory, fileName: { _ in sameName })
        let a = URL(string: "test://host/a")!, b = URL(string: "test://host/b")!
        await cache.storeData(Data("picture A".utf8), info: CacheEntryInfo(etag: "\"a\""), for: a)
        #expect(await cache.cachedData(for: b) == nil)
        #expect(await cache.cachedDigest(for: b) == nil)
        #expect(await cache.cachedData(for: a)?.data == Data("picture A".utf8))  // B's miss left A alone

        // B's 304 does not change the row A's entry shares with it.
        await cache.updateInfo(CacheEntryInfo(etag: "\"a\"", freshUntil: .distantFuture), for: b)
        #expect(await cache.cachedData(for: a)?.info == CacheEntryInfo(etag: "\"a\""))
        await cache.removeData(for: b)
        #expect(await cache.cachedData(for: a) != nil)  // not removed either

        await cache.storeData(Data("picture B".utf8), info: CacheEntryInfo(), for: b)
        #expect(await cache.cachedData(for: a) == nil)  // replaced, and never B's bytes
        #expect(await cache.cachedData(for: b)?.data == Data("picture B".utf8))
        #expect(directory.entryNames == [sameName])
        #expect(await cache.entryCount == 1)
    }

    /// Each round stores the entry (so a row sends the lookup to the file), cuts the file to
    /// `length` bytes and reads it, by the full read and by the header-only digest in turn.
    @Test func aTruncatedEntryReadsAsAMissAndIsRemovedAtEveryLength() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let cache = try makeCache(directory)
        await cache.waitForMaintenance()
        let url = URL(string: "test://host/small")!, body = Data("a small body".utf8)
        let info = CacheEntryInfo(etag: "\"e\"", lastModified: "x", freshUntil: Date())
        let path = directory.entryPath(url), file = URL(fileURLWithPath: path)
        await cache.storeData(body, info: info, for: url)
        let fileLength = try Data(contentsOf: file).count
        #expect(fileLength > 60)
        for length in 0..<fileLength {
            await cache.storeData(body, info: info, for: url)
            let whole = try Data(contentsOf: file)
            #expect(whole.count == fileLength)
            try whole.prefix(length).write(to: file)
            if length.isMultiple(of: 2) {
                #expect(await cache.cachedData(for: url) == nil, "length \(length)")
            } else {
                #expect(await cache.cachedDigest(for: url) == nil, "length \(length)")
            }
            #expect(!FileManager.default.fileExists(atPath: path), "length \(length)")
            #expect(await cache.entryCount == 0, "length \(length): the row stayed")
        }
        await cache.storeData(body, info: info, for: url)
        #expect(await cache.cachedData(for: url)?.data == body)
    }

    @Test func anyFlippedByteReadsAsAMissAndIsRemoved() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let cache = try makeCache(directory)
        await cache.waitForMaintenance()
        let url = URL(string: "test://host/flip")!, body = Data("body bytes".utf8)
        let info = CacheEntryInfo(etag: "\"e\"", freshUntil: Date())
        let path = directory.entryPath(url), file = URL(fileURLWithPath: path)
        await cache.storeData(body, info: info, for: url)
        let fileLength = try Data(contentsOf: file).count
        for offset in 0..<fileLength {
            await cache.storeData(body, info: info, for: url)
            var damaged = try Data(contentsOf: file)
            damaged[offset] ^= 0x20
            try damaged.write(to: file)
            #expect(await cache.cachedData(for: url) == nil, "offset \(offset)")
            #expect(!FileManager.default.fileExists(atPath: path), "offset \(offset)")
            #expect(await cache.entryCount == 0, "offset \(offset): the row stayed")
        }
        // A longer file (bytes appended) fails the length check.
        await cache.storeData(body, info: info, for: url)
        try (try Data(contentsOf: file) + Data([0])).write(to: file)
        #expect(await cache.cachedData(for: url) == nil)
        #expect(!FileManager.default.fileExists(atPath: path))
    }

    /// Each hostile file replaces an indexed entry's file, so the lookup does open it.
    @Test func hostileFilesAreMissesWithoutHugeAllocations() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let cache = try makeCache(directory, sizeLimit: 1 << 20)
        await cache.waitForMaintenance()
        let url = URL(string: "test://host/hostile")!
        let path = directory.entryPath(url)
        // A header that declares a 4 GiB header.
        await cache.storeData(Data("sound".utf8), info: CacheEntryInfo(), for: url)
        var header = Array("IPDC".utf8) + [3, 0, 0, 0] + [0xFF, 0xFF, 0xFF, 0xFF]
        header += [UInt8](repeating: 0xFF, count: 200)
        try Data(header).write(to: URL(fileURLWithPath: path))
        #expect(await cache.cachedData(for: url) == nil)
        #expect(!FileManager.default.fileExists(atPath: path))
        // A sparse file far over the cap is refused from its size alone.
        await cache.storeData(Data("sound".utf8), info: CacheEntryInfo(), for: url)
        #expect(FileManager.default.createFile(atPath: path, contents: Data("IPDC".utf8)))
        let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: path))
        try handle.truncate(atOffset: 8 << 30)
        try handle.close()
        #expect(await cache.cachedDigest(for: url) == nil)
        #expect(!FileManager.default.fileExists(atPath: path))
        // A directory where the entry should be is removed; garbage names are no entries.
        await cache.storeData(Data("sound".utf8), info: CacheEntryInfo(), for: url)
        unlink(path)
        try FileManager.default.createDirectory(atPath: path + "/sub", withIntermediateDirectories: true)
        try Data("junk".utf8).write(to: directory.url.appendingPathComponent("README"))
        try Data("junk".utf8).write(to: URL(fileURLWithPath: (path as NSString).deletingLastPathComponent + "/README"))
        #expect(await cache.cachedData(for: url) == nil)
        #expect(!FileManager.default.fileExists(atPath: path))
        await cache.trim()
        #expect(await cache.entryCount == 0)
    }

    @Test func updateInfoChangesTheRowAndNeverTheFile() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let cache = try makeCache(directory)
        let url = URL(string: "test://host/304")!
        let body = Data(repeating: 7, count: 10_000)
        let stored = CacheEntryInfo(etag: "\"v1\"", freshUntil: Date(timeIntervalSince1970: 0))
        await cache.storeData(body, info: stored, for: url)
        let path = directory.entryPath(url)
        let before = try #require(FileIdentity(path))
        let bytesBefore = try Data(contentsOf: URL(fileURLWithPath: path))
        let refreshed = CacheEntryInfo(etag: "\"v1\"", freshUntil: Date(timeIntervalSince1970: 2_000_000_000))
        await cache.updateInfo(refreshed, for: url)
        // Same inode, bytes and mtime; no sidecar or other file anywhere.
        #expect(FileIdentity(path) == before)
        #expect(try Data(contentsOf: URL(fileURLWithPath: path)) == bytesBefore)
        #expect(directory.entryFolderFiles == [path])
        #expect(directory.names.allSatisfy { $0.utf8.count == 2 || $0.hasPrefix("index.sqlite") })
        #expect(await cache.cachedData(for: url)?.info == refreshed)
        #expect(await cache.cachedDigest(for: url)?.info == refreshed)
        // The info is in the shared index: another instance reads it.
        let second = try makeCache(directory)
        #expect(await second.cachedData(for: url)?.info == refreshed)
        // A 304 whose ETag names other bytes (the entry was replaced meanwhile) changes nothing.
        await cache.updateInfo(CacheEntryInfo(etag: "\"v0\"", freshUntil: .distantFuture), for: url)
        #expect(await cache.cachedData(for: url)?.info == refreshed)
        // A new store is a new generation with its own info only, even under the same ETag.
        await cache.storeData(body, info: stored, for: url)
        #expect(await cache.cachedData(for: url)?.info == stored)
        let newInfo = CacheEntryInfo(etag: "\"v2\"")
        await cache.storeData(body, info: newInfo, for: url)
        #expect(await cache.cachedData(for: url)?.info == newInfo)
        await cache.updateInfo(refreshed, for: url)  // v1's ETag: skipped
        #expect(await cache.cachedData(for: url)?.info == newInfo)
        #expect(await second.cachedData(for: url)?.info == newInfo)
    }

    /// A row describes one generation of one URL's file. A file of another generation under it
    /// (an old entry put back, or a writer's new file whose row has not committed yet) serves
    /// with its own header's info or not at all, never with the row's (a 304 would otherwise
    /// keep the wrong bytes fresh); a file holding another URL's entry never serves for this
    /// one; a row whose file is gone is a miss and is dropped.
    @Test func aRowNeverLendsItsInfoToAnotherFile() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let cache = try makeCache(directory)
        await cache.waitForMaintenance()
        let url = URL(string: "test://host/generations")!, path = directory.entryPath(url)
        let file = URL(fileURLWithPath: path)
        let oldBody = Data("the old bytes".utf8), oldInfo = CacheEntryInfo(etag: "\"old\"")
        await cache.storeData(oldBody, info: oldInfo, for: url)
        let oldFile = try Data(contentsOf: file)
        let newBody = Data("the new bytes, longer".utf8)
        await cache.storeData(newBody, info: CacheEntryInfo(etag: "\"new\""), for: url)
        let refreshed = CacheEntryInfo(etag: "\"new\"", freshUntil: .distantFuture)
        await cache.updateInfo(refreshed, for: url)
        #expect(await cache.cachedData(for: url)?.info == refreshed)

        // The old generation's file comes back under the new generation's row.
        try oldFile.write(to: file)
        func isOldOrMiss(_ entry: CachedData?) -> Bool {
            guard let entry else { return true }
            return entry.data == oldBody && entry.info == oldInfo
        }
        #expect(isOldOrMiss(await cache.cachedData(for: url)))
        let digest = await cache.cachedDigest(for: url)
        #expect(digest == nil || (digest?.crc32 == CRC32.checksum(oldBody) && digest?.info == oldInfo))
        // 304s for either generation's ETag do not pair the row's info with these bytes.
        await cache.updateInfo(CacheEntryInfo(etag: "\"new\"", freshUntil: .distantFuture), for: url)
        #expect(isOldOrMiss(await cache.cachedData(for: url)))
        await cache.updateInfo(CacheEntryInfo(etag: "\"old\"", freshUntil: .distantFuture), for: url)
        let after = await cache.cachedData(for: url)
        #expect(after == nil || (after?.data == oldBody && after?.info.etag == "\"old\""))
        let third = try makeCache(directory)
        #expect(isOldOrMiss(await third.cachedData(for: url)))  // nor does another instance

        // Another URL's entry file under this URL's row.
        let other = URL(string: "test://host/other")!, otherBody = Data("the other picture".utf8)
        await cache.storeData(otherBody, info: CacheEntryInfo(etag: "\"o\""), for: other)
        await cache.storeData(newBody, info: CacheEntryInfo(etag: "\"new\""), for: url)
        let otherFile = try Data(contentsOf: URL(fileURLWithPath: directory.entryPath(other)))
        try otherFile.write(to: file)
        #expect(await cache.cachedData(for: url) == nil)
        #expect(await cache.cachedDigest(for: url) == nil)
        await cache.updateInfo(CacheEntryInfo(etag: "\"o\"", freshUntil: .distantFuture), for: url)
        #expect(try Data(contentsOf: file) == otherFile)
        let otherEntry = await cache.cachedData(for: other)
        #expect(otherEntry?.data == otherBody && otherEntry?.info == CacheEntryInfo(etag: "\"o\""))

        // A row whose file is gone.
        await cache.storeData(newBody, info: CacheEntryInfo(etag: "\"new\""), for: url)
        #expect(await cache.entryCount == 2)
        unlink(path)
        #expect(await cache.cachedData(for: url) == nil)
        #expect(await cache.entryCount == 1)
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
        #expect(directory.entryNames.isEmpty)
        await first.trim()
        #expect(await first.entryCount == 0)
        #expect(await first.totalSize == 0)
    }

    /// The flat layout of the last release (entries at `<dir>/<name>` in header version 2 or 3,
    /// a 304's info in a `<name>.info` sidecar, a `.lock`), found when the cache first opens the
    /// directory: the first maintenance pass moves each entry into its folder and the index,
    /// with the sidecar's info when the sidecar names that very file. A version-2 file serves
    /// with all its info and stays version 2 (a 304 changes its row only) until the URL is next
    /// stored; a damaged one, the sidecars and the lock go.
    @Test func theFlatLayoutMigratesIntoTheFoldersWithItsInfo() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let body = Data((0..<300).map { UInt8(truncatingIfNeeded: $0 &* 7) })
        let hash = try #require(ThumbHash(base64: "1QcSHQRnh493V4dIh4eXh1h4kJUI"))
        let info = CacheEntryInfo(etag: "\"old\"", lastModified: "Sun, 06 Nov 1994 08:49:37 GMT",
                                  freshUntil: Date(timeIntervalSince1970: 1_700_000_123.456), lifetimeIsHeuristic: true,
                                  rendition: RenditionRecord(originTag: "5-9", originalSize: PixelSize(width: 8, height: 6),
                                                             format: .jpeg, standalone: false),
                                  placeholder: hash)
        let refreshed = CacheEntryInfo(etag: "\"old\"", freshUntil: Date(timeIntervalSince1970: 2_000_000_000))
        func url(_ name: String) -> URL { URL(string: "https://cdn.example.com/\(name).jpg")! }
        let plain = url("plain"), revalidated = url("revalidated"), stale = url("stale"), damaged = url("damaged")
        let version3 = url("version3")
        func flat(_ url: URL) -> URL { directory.url.appendingPathComponent(DiskCache.fileName(for: url)) }
        func sidecar(_ url: URL) -> URL { directory.url.appendingPathComponent(DiskCache.fileName(for: url) + ".info") }
        for url in [plain, revalidated, stale] {
            try Self.version2Entry(url: url, info: info, body: body).write(to: flat(url))
        }
        // A sidecar naming the file's generation applies; one naming another does not.
        try Self.sidecar(url: revalidated, generation: Self.version2Generation, info: refreshed, body: body)
            .write(to: sidecar(revalidated))
        try Self.sidecar(url: stale, generation: Self.version2Generation &+ 1, info: refreshed, body: body)
            .write(to: sidecar(stale))
        var broken = Self.version2Entry(url: damaged, info: info, body: body)
        broken[60] ^= 0x20
        try broken.write(to: flat(damaged))
        try await soundEntryFile(for: version3, body: body).write(to: flat(version3))
        try Data().write(to: directory.url.appendingPathComponent(".lock"))

        let cache = try makeCache(directory)
        await cache.waitForMaintenance()
        let migrated = [plain, revalidated, stale, version3]
        #expect(Set(directory.entryNames) == Set(migrated.map(DiskCache.fileName(for:))))
        #expect(migrated.allSatisfy { isRegularFile(directory.entryPath($0)) })
        #expect(directory.names.allSatisfy { $0.utf8.count == 2 || $0.hasPrefix("index.sqlite") })  // no flat file left
        #expect(await cache.entryCount == 4)
        let entry = try #require(await cache.cachedData(for: plain))
        #expect(entry.data == body && entry.info == info)
        #expect(await cache.cachedDigest(for: plain)?.crc32 == CRC32.checksum(body))
        #expect(await cache.cachedData(for: revalidated)?.info == refreshed)
        #expect(await cache.cachedData(for: stale)?.info == info)
        #expect(await cache.cachedData(for: version3)?.info == CacheEntryInfo(freshUntil: .distantFuture))
        #expect(await cache.cachedData(for: damaged) == nil)

        let path = URL(fileURLWithPath: directory.entryPath(plain))
        await cache.updateInfo(refreshed, for: plain)
        #expect(await cache.cachedData(for: plain)?.info == refreshed)
        #expect(try Data(contentsOf: path).subdata(in: 4..<6) == Data([2, 0]))  // not rewritten
        await cache.storeData(body, info: info, for: plain)
        #expect(try Data(contentsOf: path).subdata(in: 4..<6) == Data([3, 0]))
        #expect(await cache.cachedData(for: plain)?.info == info)
        // A migrated version-2 file damaged in its header is a miss, and goes with its row.
        let stalePath = URL(fileURLWithPath: directory.entryPath(stale))
        var damagedFile = try Data(contentsOf: stalePath)
        damagedFile[60] ^= 0x20
        try damagedFile.write(to: stalePath)
        #expect(await cache.cachedData(for: stale) == nil)
        #expect(!FileManager.default.fileExists(atPath: stalePath.path))
        #expect(await cache.entryCount == 3)
    }

    /// A migrated entry keeps its last use (the flat layout kept it as the file's mtime): the
    /// eviction in the migrating pass removes the least recently used, whichever it is.
    @Test(arguments: [false, true])
    func aMigratedEntryKeepsItsLastUse(firstIsOlder: Bool) async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let a = URL(string: "test://host/a")!, b = URL(string: "test://host/b")!
        for url in [a, b] {
            let flat = directory.url.appendingPathComponent(DiskCache.fileName(for: url))
            try await soundEntryFile(for: url, body: Data(url.absoluteString.utf8)).write(to: flat)
        }
        let (older, newer) = firstIsOlder ? (a, b) : (b, a)
        try FileManager.default.setAttributes([.modificationDate: Date(timeIntervalSinceNow: -86_400)],
                                              ofItemAtPath: directory.url.appendingPathComponent(DiskCache.fileName(for: older)).path)
        let cache = try makeCache(directory, trimRatio: 1, countLimit: 1)
        await cache.waitForMaintenance()
        #expect(directory.entryNames == [DiskCache.fileName(for: newer)])
        #expect(await cache.cachedData(for: newer)?.data == Data(newer.absoluteString.utf8))
    }

    /// The generation ``version2Entry(url:info:body:)`` writes.
    static let version2Generation: UInt64 = 0x1234_5678_9abc_def0

    /// An entry file in header version 2, built here from that version's description
    /// (`DiskCacheEntry+Version2.swift`).
    static func version2Entry(url: URL, info: CacheEntryInfo, body: Data) -> Data {
        let urlBytes = Array(url.absoluteString.utf8), etag = Array((info.etag ?? "").utf8)
        let lastModified = Array((info.lastModified ?? "").utf8)
        let record = info.rendition.map { [UInt8]($0.serialized) } ?? [], placeholder = info.placeholder?.bytes ?? []
        var flags: UInt16 = 0
        for (bit, present) in [(1, info.freshUntil != nil), (2, info.etag != nil), (4, info.lastModified != nil),
                               (8, info.rendition != nil), (16, info.placeholder != nil), (32, info.lifetimeIsHeuristic)]
        where present { flags |= UInt16(bit) }
        var out = Array("IPDC".utf8)
        out.appendLittleEndian(UInt16(2))
        out.appendLittleEndian(flags)
        out.appendLittleEndian(UInt32(52 + urlBytes.count + etag.count + lastModified.count + record.count + placeholder.count + 4))
        out.appendLittleEndian(version2Generation)
        out.appendLittleEndian(UInt64(body.count))
        out.appendLittleEndian(CRC32.checksum(body))
        out.appendLittleEndian((info.freshUntil?.timeIntervalSince1970 ?? 0).bitPattern)
        out.appendLittleEndian(UInt32(urlBytes.count))
        for count in [etag.count, lastModified.count, record.count, placeholder.count] { out.appendLittleEndian(UInt16(count)) }
        out += urlBytes + etag + lastModified + record + placeholder
        out.appendLittleEndian(out.withUnsafeBytes { CRC32.checksum($0) })
        return Data(out) + body
    }

    /// An info sidecar of the flat layout as a 304 wrote it (header version 3, magic "IPDI", no
    /// body, `DiskCacheEntry.swift`): it names the generation, URL, body length and CRC-32 of
    /// the entry it applies to.
    static func sidecar(url: URL, generation: UInt64, info: CacheEntryInfo, body: Data) throws -> Data {
        let urlBytes = Array(url.absoluteString.utf8), infoBytes = try #require(info.encoded())
        var out = Array("IPDI".utf8)
        out.appendLittleEndian(UInt16(3))
        out.appendLittleEndian(UInt16(0))
        out.appendLittleEndian(UInt32(40 + urlBytes.count + infoBytes.count + 4))
        out.appendLittleEndian(generation)
        out.appendLittleEndian(UInt64(body.count))
        out.appendLittleEndian(CRC32.checksum(body))
        out.appendLittleEndian(UInt32(urlBytes.count))
        out.appendLittleEndian(UInt32(infoBytes.count))
        out += urlBytes + infoBytes
        out.appendLittleEndian(out.withUnsafeBytes { CRC32.checksum($0) })
        return Data(out)
    }
}
