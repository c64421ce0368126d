import CacheDisk
import Foundation
import PipelineCore
import PipelineTestSupport
import Testing

/// The SQLite index: entries in 256 folders, lookups answered by the index, a lost index
/// rebuilt from the files, the flat layout of earlier releases moved in, orphans swept.
@Suite("Disk cache index: folders, rebuild, migration, sweep")
struct DiskCacheIndexTests {
    static func url(_ i: Int) -> URL { URL(string: "https://cdn.example.com/index/\(i).jpg")! }
    static func body(_ i: Int) -> Data { Data((0..<(500 + i)).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ i) }) }

    /// The names in the top folder other than the index's own files and the 256 folders.
    static func strays(in directory: TemporaryDirectory) -> [String] {
        directory.names.filter { !$0.hasPrefix("index.sqlite") && !($0.utf8.count == 2 && $0.allSatisfy(\.isHexDigit)) }
    }

    @Test func entriesLiveInTheFolderOfTheirNamesFirstTwoDigits() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let cache = try makeCache(directory)
        for i in 0..<40 { await cache.storeData(Self.body(i), info: CacheEntryInfo(), for: Self.url(i)) }
        for i in 0..<40 {
            #expect(FileManager.default.fileExists(atPath: directory.entryPath(Self.url(i))))
        }
        #expect(Self.strays(in: directory).isEmpty, "\(Self.strays(in: directory))")
        #expect(directory.names.contains("index.sqlite"))
        // A hit read in one go with its header starts its bytes at index 0, as any Data a caller
        // indexes from zero.
        let hit = try #require(await cache.cachedData(for: Self.url(3)))
        #expect(hit.data.startIndex == 0 && hit.data == Self.body(3))
        #expect(Set(directory.entryNames) == Set((0..<40).map { DiskCache.fileName(for: Self.url($0)) }))
    }

    /// A file the index does not know (another process's rename whose row has not committed,
    /// or a crash's leftover) is a miss: the index answers, the file is not read.
    @Test func aFileWithoutARowIsAMiss() async throws {
        let directory = try TemporaryDirectory(), elsewhere = try TemporaryDirectory()
        defer {
            directory.remove()
            elsewhere.remove()
        }
        let other = try makeCache(elsewhere)
        await other.storeData(Self.body(1), info: CacheEntryInfo(), for: Self.url(1))
        let cache = try makeCache(directory)
        await cache.waitForMaintenance()  // the first pass (an empty rebuild) is over
        let path = directory.entryPath(Self.url(1))
        try FileManager.default.createDirectory(atPath: (path as NSString).deletingLastPathComponent,
                                                withIntermediateDirectories: true)
        try FileManager.default.copyItem(atPath: elsewhere.entryPath(Self.url(1)), toPath: path)
        #expect(await cache.cachedData(for: Self.url(1)) == nil)
        #expect(FileManager.default.fileExists(atPath: path))  // young: left for its writer's commit
    }

    @Test func aRowWhoseFileIsGoneIsAMissAndIsDropped() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let cache = try makeCache(directory)
        await cache.storeData(Self.body(2), info: CacheEntryInfo(), for: Self.url(2))
        #expect(await cache.entryCount == 1)
        #expect(unlink(directory.entryPath(Self.url(2))) == 0)
        #expect(await cache.cachedData(for: Self.url(2)) == nil)
        #expect(await cache.entryCount == 0)
        #expect(await cache.totalSize == 0)
    }

    /// The index deleted while no cache is open: a new instance rebuilds it from the entry
    /// files' headers in the background; meanwhile lookups read the files. Every entry comes
    /// back with its info, and the totals are the disk's.
    @Test func aLostIndexIsRebuiltFromTheFiles() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        do {
            let cache = try makeCache(directory)
            for i in 0..<30 {
                await cache.storeData(Self.body(i), info: CacheEntryInfo(etag: "\"\(i)\"", freshUntil: Date(timeIntervalSince1970: 2e9)),
                                      for: Self.url(i))
            }
            await cache.waitForMaintenance()
        }
        for name in directory.names where name.hasPrefix("index.sqlite") {
            try FileManager.default.removeItem(at: directory.url.appendingPathComponent(name))
        }
        let cache = try makeCache(directory)
        // Whether or not the rebuild has finished, an answer is the entry's exact bytes.
        #expect(await cache.cachedData(for: Self.url(7))?.data == Self.body(7))
        #expect(await cache.entryCount == 30)
        #expect(await cache.totalSize == allocatedBytes(in: directory))
        for i in 0..<30 {
            let entry = try #require(await cache.cachedData(for: Self.url(i)))
            #expect(entry.data == Self.body(i) && entry.info.etag == "\"\(i)\"")
        }
    }

    /// A directory of the flat layout (entries of header versions 2 and 3 side by side with
    /// `.info` sidecars, a `.lock`, a crash's temporary file) is moved into the index once: each
    /// entry into its folder with its sidecar's info where that applies and its last use (the
    /// file's mtime), the rest removed.
    @Test func theFlatLayoutMovesIntoTheIndex() async throws {
        let directory = try TemporaryDirectory(), source = try TemporaryDirectory()
        defer {
            directory.remove()
            source.remove()
        }
        // Version-3 files as the flat layout held them: the same bytes an entry file has now.
        let writer = try makeCache(source)
        for i in 0..<6 { await writer.storeData(Self.body(i), info: CacheEntryInfo(etag: "\"\(i)\""), for: Self.url(i)) }
        let now = time(nil)
        for i in 0..<6 {
            let flat = directory.flatEntryPath(Self.url(i))
            try FileManager.default.copyItem(atPath: source.entryPath(Self.url(i)), toPath: flat)
            let times = [timespec(tv_sec: now - 1000 - i, tv_nsec: 0), timespec(tv_sec: now - 1000 - i, tv_nsec: 0)]
            #expect(utimensat(AT_FDCWD, flat, times, 0) == 0)
        }
        // A 304's sidecar for entry 0, one for a generation that is gone (entry 1), a version-2 entry.
        let refreshed = CacheEntryInfo(etag: "\"0\"", freshUntil: Date(timeIntervalSince1970: 3e9))
        let entry0 = try Data(contentsOf: URL(fileURLWithPath: directory.flatEntryPath(Self.url(0))))
        try Self.sidecar(for: entry0, info: refreshed).write(to: URL(fileURLWithPath: directory.flatEntryPath(Self.url(0)) + ".info"))
        var entry1 = try Data(contentsOf: URL(fileURLWithPath: directory.flatEntryPath(Self.url(1))))
        entry1[12] ^= 1  // another generation
        try Self.sidecar(for: entry1, info: refreshed).write(to: URL(fileURLWithPath: directory.flatEntryPath(Self.url(1)) + ".info"))
        let old = Self.url(100)
        try DiskCacheEntryTests.version2Entry(url: old, info: CacheEntryInfo(etag: "\"v2\""), body: Data([1, 2, 3]))
            .write(to: URL(fileURLWithPath: directory.flatEntryPath(old)))
        _ = FileManager.default.createFile(atPath: directory.url.appendingPathComponent(".lock").path, contents: nil)
        let stale = directory.url.appendingPathComponent(".tmp.\(DiskCache.fileName(for: old)).x").path
        _ = FileManager.default.createFile(atPath: stale, contents: Data(count: 10))
        #expect(utimensat(AT_FDCWD, stale, [timespec(tv_sec: now - 3600, tv_nsec: 0), timespec(tv_sec: now - 3600, tv_nsec: 0)], 0) == 0)

        let cache = try makeCache(directory)
        await cache.waitForMaintenance()
        #expect(Self.strays(in: directory).isEmpty, "\(Self.strays(in: directory))")
        #expect(await cache.entryCount == 7)
        #expect(await cache.totalSize == allocatedBytes(in: directory))
        // The last uses came along (the files' mtimes, entry i used 1000 + i seconds ago): a
        // cap of five entries removes the two least recently used, 5 and 4.
        let size = try #require(FileIdentity(directory.entryPath(Self.url(5)))).allocated
        let small = try makeCache(directory, sizeLimit: 5 * size + size / 2, trimRatio: 1)
        await small.waitForMaintenance()
        let present = (0..<6).filter { FileManager.default.fileExists(atPath: directory.entryPath(Self.url($0))) }
        #expect(present == [0, 1, 2, 3])
        #expect(await cache.cachedData(for: Self.url(0))?.info == refreshed)
        #expect(await cache.cachedData(for: Self.url(1))?.info == CacheEntryInfo(etag: "\"1\""))
        #expect(await cache.cachedData(for: old)?.data == Data([1, 2, 3]))
        for i in 0..<4 { #expect(await cache.cachedData(for: Self.url(i))?.data == Self.body(i)) }
    }

    /// The sweep visits one of the 256 folders per maintenance pass: a file without a row
    /// older than ten minutes (a crash between the rename and the commit) goes, as does a stale
    /// temporary file; a young one is left for its writer's commit.
    @Test func orphansAreSweptOneFolderAPass() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let cache = try makeCache(directory)
        await cache.waitForMaintenance()  // the pass after opening sweeps nothing; the cursor is at 00
        let folder = directory.url.appendingPathComponent("01")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let oldOrphan = folder.appendingPathComponent("01" + String(repeating: "a", count: 62)).path
        let youngOrphan = folder.appendingPathComponent("01" + String(repeating: "b", count: 62)).path
        let staleTemporary = folder.appendingPathComponent(".tmp.01x.abc").path
        for path in [oldOrphan, youngOrphan, staleTemporary] { _ = FileManager.default.createFile(atPath: path, contents: Data(count: 100)) }
        let hourAgo = [timespec(tv_sec: time(nil) - 3600, tv_nsec: 0), timespec(tv_sec: time(nil) - 3600, tv_nsec: 0)]
        #expect(utimensat(AT_FDCWD, oldOrphan, hourAgo, 0) == 0 && utimensat(AT_FDCWD, staleTemporary, hourAgo, 0) == 0)
        // At most a whole round of the cursor (256 passes) reaches folder 01, however the passes fell.
        for _ in 0..<256 where FileManager.default.fileExists(atPath: oldOrphan) { await cache.trim() }
        #expect(!FileManager.default.fileExists(atPath: oldOrphan))
        #expect(!FileManager.default.fileExists(atPath: staleTemporary))
        #expect(FileManager.default.fileExists(atPath: youngOrphan))
    }

    /// The directory deleted under a running cache (a tmp cleaner, an operator): lookups miss,
    /// stores fail quietly, nothing crashes or recreates the folder behind the operator's back;
    /// a new instance on the path starts an empty cache.
    @Test func aDeletedDirectoryMissesAndStoresNothing() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let cache = try makeCache(directory)
        await cache.storeData(Self.body(1), info: CacheEntryInfo(), for: Self.url(1))
        try FileManager.default.removeItem(at: directory.url)
        #expect(await cache.cachedData(for: Self.url(1)) == nil)
        await cache.storeData(Self.body(2), info: CacheEntryInfo(), for: Self.url(2))
        #expect(await cache.cachedData(for: Self.url(2)) == nil)
        await cache.trim()
        #expect(!FileManager.default.fileExists(atPath: directory.url.path))
        let fresh = try makeCache(directory)
        #expect(await fresh.entryCount == 0)
        await fresh.storeData(Self.body(3), info: CacheEntryInfo(), for: Self.url(3))
        #expect(await fresh.cachedData(for: Self.url(3))?.data == Self.body(3))
    }

    /// A version-3 info sidecar of the flat layout for the entry file `entry`: the entry's
    /// header with magic "IPDI", `info`, and no body.
    static func sidecar(for entry: Data, info: CacheEntryInfo) throws -> Data {
        let bytes = [UInt8](entry)
        func u32(_ at: Int) -> Int { Int(bytes[at]) | Int(bytes[at + 1]) << 8 | Int(bytes[at + 2]) << 16 | Int(bytes[at + 3]) << 24 }
        let urlLength = u32(32)
        let url = Array(bytes[40..<40 + urlLength])
        let infoBytes = try #require(info.encoded())
        var out = Array("IPDI".utf8) + bytes[4..<8]  // version 3, reserved
        let length = 40 + urlLength + infoBytes.count + 4
        withUnsafeBytes(of: UInt32(length).littleEndian) { out += $0 }
        out += bytes[12..<32]  // generation, body length, body CRC
        withUnsafeBytes(of: UInt32(urlLength).littleEndian) { out += $0 }
        withUnsafeBytes(of: UInt32(infoBytes.count).littleEndian) { out += $0 }
        out += url + infoBytes
        withUnsafeBytes(of: out.withUnsafeBytes { CRC32.checksum($0) }.littleEndian) { out += $0 }
        return Data(out)
    }
}
