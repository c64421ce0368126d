import CacheDisk
import Foundation
import PipelineCore
import PipelineTestSupport
import Testing

/// The disk-cache attacks of the hostile issue, held against the SQLite index: a database made
/// unreadable (while no instance is open, and under an open one), rows planted through a
/// connection of the test's own (as another process could), and entry files truncated under
/// their rows. Whatever was done, every answer is a miss or exact bytes, nothing crashes, and
/// once the cache has recovered every entry whose file is left is served again.
@Suite("Disk cache index under attack: unreadable database, planted rows, truncated files", .timeLimit(.minutes(3)))
struct DiskCacheHostileIndexTests {
    static let keys = 8

    /// Ways to make `index.sqlite` unreadable. `chmod 000` is not among them: these tests run as
    /// root, whom permissions do not stop, so a file SQLite cannot read is made with bytes.
    enum Damage: CaseIterable, Sendable {
        /// 8 KiB of random bytes over the file.
        case garbage
        /// The file cut to its first 10 bytes (part of SQLite's magic).
        case truncated
        /// A sound SQLite database of the right schema version without the cache's tables.
        case foreignDatabase

        func apply(to directory: TemporaryDirectory) throws {
            let path = directory.url.appendingPathComponent("index.sqlite").path
            switch self {
            case .garbage:
                var random = SeededGenerator(seed: 7)
                try write(Data((0..<8192).map { _ in UInt8.random(in: 0...255, using: &random) }), inPlaceAt: path)
            case .truncated:
                guard truncate(path, 10) == 0 else { throw CocoaError(.fileWriteUnknown) }
            case .foreignDatabase:
                let database = try IndexDatabase(directory)
                try database.execute("DROP TABLE entries; DROP TABLE totals; DROP TABLE meta")
            }
        }

        /// Overwrites the file at `path` in place (same inode: open connections keep it).
        private func write(_ data: Data, inPlaceAt path: String) throws {
            let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: path))
            defer { try? handle.close() }
            try handle.truncate(atOffset: 0)
            try handle.write(contentsOf: data)
        }
    }

    static func url(_ key: Int) -> URL { DiskCachePattern.url(key) }

    /// Stores `keys` at `version` (ETag and body from it, as `DiskCachePattern.isExact` checks).
    func store(_ keys: Range<Int>, version: Int, in cache: DiskCache) async {
        for key in keys {
            await cache.storeData(DiskCachePattern.body(key: key, version: version), info: CacheEntryInfo(etag: DiskCachePattern.etag(version)),
                                  for: Self.url(key))
        }
    }

    /// Reads every key: each must be a miss or exact. Returns the keys served.
    func served(_ cache: DiskCache, _ context: String) async -> Set<Int> {
        var served = Set<Int>()
        for key in 0..<Self.keys {
            guard let entry = await cache.cachedData(for: Self.url(key)) else { continue }
            #expect(DiskCachePattern.isExact(entry, key: key), "\(context): key \(key)")
            served.insert(key)
        }
        return served
    }

    /// The keys whose entry file is in the directory.
    func keysWithFiles(_ directory: TemporaryDirectory) -> Set<Int> {
        Set((0..<Self.keys).filter { FileManager.default.fileExists(atPath: directory.entryPath(Self.url($0))) })
    }

    /// Recovered: after the background work (a rebuild), every key whose file is there is
    /// served, and the index, a sound database again (read by the test's own connection),
    /// holds a row for exactly those files and counts their blocks.
    func expectRecovered(_ cache: DiskCache, in directory: TemporaryDirectory, _ context: String) async throws {
        await cache.waitForMaintenance()
        let withFiles = keysWithFiles(directory)
        #expect(await served(cache, context) == withFiles, "\(context)")
        #expect(await cache.entryCount == withFiles.count, "\(context)")
        #expect(await cache.totalSize == allocatedBytes(in: directory), "\(context)")
        let names = try IndexDatabase(directory).rows().map(\.fileName)
        #expect(Set(names) == Set(directory.entryNames) && names.count == withFiles.count, "\(context)")
    }

    // MARK: A database made unreadable

    @Test(arguments: Damage.allCases)
    func anIndexMadeUnreadableWhileClosedIsRebuiltFromTheFiles(damage: Damage) async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        do {
            let cache = try makeCache(directory)
            await store(0..<Self.keys, version: 1, in: cache)
            await cache.waitForMaintenance()
        }  // closed: its last connection checkpoints the WAL into the database
        try damage.apply(to: directory)

        let cache = try makeCache(directory)
        // At once, before the rebuild has run: a lookup without a row reads the file.
        #expect(await served(cache, "\(damage), during the rebuild") == Set(0..<Self.keys))
        try await expectRecovered(cache, in: directory, "\(damage), rebuilt")
        await store(0..<2, version: 2, in: cache)
        try await expectRecovered(try makeCache(directory), in: directory, "\(damage), reopened")
    }

    @Test(arguments: Damage.allCases)
    func anIndexMadeUnreadableUnderAnOpenCacheIsDetectedAndRebuilt(damage: Damage) async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let cache = try makeCache(directory)
        await store(0..<4, version: 1, in: cache)
        await cache.waitForMaintenance()
        // Move every page into the database file, so that the damage hits pages in use rather
        // than ones the WAL still shadows.
        try IndexDatabase(directory).execute("PRAGMA wal_checkpoint(TRUNCATE)")
        try damage.apply(to: directory)

        // It keeps answering (exact or a miss) and storing while it finds out.
        _ = await served(cache, "\(damage), just damaged")
        await store(4..<Self.keys, version: 1, in: cache)
        _ = await served(cache, "\(damage), after stores")
        await cache.trim()
        try await expectRecovered(cache, in: directory, "\(damage), recovered")
        #expect(keysWithFiles(directory).isSuperset(of: 4..<Self.keys), "\(damage): stores after the damage were lost")
        try await expectRecovered(try makeCache(directory), in: directory, "\(damage), reopened")
    }

    @Test func anUnreadableIndexRenamedOverTheOpenOneIsFollowedAndRebuilt() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let cache = try makeCache(directory)
        await store(0..<4, version: 1, in: cache)
        await cache.waitForMaintenance()
        // Another process's replacement (here: garbage) under the open connections.
        let garbage = directory.url.appendingPathComponent("garbage")
        try Data(repeating: 0xA5, count: 8192).write(to: garbage)
        #expect(rename(garbage.path, directory.url.appendingPathComponent("index.sqlite").path) == 0)
        _ = await served(cache, "replaced")
        await store(4..<Self.keys, version: 1, in: cache)
        await cache.trim()  // a maintenance pass follows the replacement
        try await expectRecovered(cache, in: directory, "replaced, recovered")
        #expect(keysWithFiles(directory) == Set(0..<Self.keys))
    }

    // MARK: Planted rows

    /// Rows rewritten by another writer of the database, each against the stored entries.
    enum Plant: CaseIterable, Sendable {
        /// Key 0's row names another generation than its file's.
        case otherGeneration
        /// Key 0's row holds another name (key 1's) than its key's.
        case otherName
        /// Key 0's row points at key 1's file (its name and generation); key 1's file is also
        /// copied over key 0's, so key 0's own file holds another URL's entry.
        case anotherURLsFile
        /// Key 0's row counts 2^62 bytes; key 1's Int64.max.
        case hugeSizes
        /// Negative sizes, last uses and generations (Int64.min and -1).
        case negativeValues
        /// Rows whose names are empty or 1 byte long, of huge sizes and the oldest uses, so that
        /// eviction picks them first.
        case malformedNames
        /// A row for key 7, never stored, whose file is missing; and undecodable info in key 2's.
        case rowWithoutFile

        func sql(_ directory: TemporaryDirectory) -> String {
            let name = { (key: Int) in "X'\(DiskCache.fileName(for: DiskCachePattern.url(key)))'" }
            switch self {
            case .otherGeneration: return "UPDATE entries SET generation = generation + 1 WHERE name = \(name(0))"
            case .otherName: return "UPDATE entries SET name = \(name(1)) WHERE name = \(name(0))"
            case .anotherURLsFile:
                return """
                    UPDATE entries SET name = \(name(1)), generation = (SELECT generation FROM entries WHERE name = \(name(1)))
                    WHERE name = \(name(0))
                    """
            case .hugeSizes:
                return """
                    UPDATE entries SET size = 4611686018427387904 WHERE name = \(name(0));
                    UPDATE entries SET size = 9223372036854775807 WHERE name = \(name(1))
                    """
            case .negativeValues:
                return """
                    UPDATE entries SET size = -9223372036854775808, last_use = -9223372036854775808 WHERE name = \(name(0));
                    UPDATE entries SET size = -1, generation = -1, last_use = -1 WHERE name = \(name(1))
                    """
            case .malformedNames:
                return """
                    INSERT INTO entries VALUES (11, X'', 0, 4611686018427387904, -2, X'');
                    INSERT INTO entries VALUES (12, X'2f', 0, 4611686018427387904, -1, X'')
                    """
            case .rowWithoutFile:
                return """
                    INSERT INTO entries SELECT key + 1, \(name(7)), 1, 4096, 0, X'' FROM entries WHERE name = \(name(3));
                    UPDATE entries SET info = X'ffffffff00' WHERE name = \(name(2))
                    """
            }
        }
    }

    @Test(arguments: Plant.allCases)
    func plantedRowsNeverServeWrongBytesNorCrash(plant: Plant) async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let cache = try makeCache(directory)
        await store(0..<7, version: 1, in: cache)
        await cache.waitForMaintenance()
        if plant == .anotherURLsFile {
            try FileManager.default.removeItem(atPath: directory.entryPath(Self.url(0)))
            try FileManager.default.copyItem(atPath: directory.entryPath(Self.url(1)), toPath: directory.entryPath(Self.url(0)))
        }
        try IndexDatabase(directory).execute(plant.sql(directory))

        #expect(await served(cache, "\(plant)").isSuperset(of: 3..<7), "\(plant): untouched entries stopped being served")
        _ = await cache.cachedDigest(for: Self.url(0))
        await cache.updateInfo(CacheEntryInfo(etag: DiskCachePattern.etag(1), freshUntil: .distantFuture), for: Self.url(0))
        // Eviction over the planted rows, by this instance (its cap) and by one whose count cap
        // the entries exceed, as another process's could be.
        await cache.trim()
        #expect(FileManager.default.fileExists(atPath: directory.url.appendingPathComponent("index.sqlite").path),
                "\(plant): the eviction removed the cache's own folder")
        #expect(await served(cache, "\(plant), after eviction").isSuperset(of: 3..<7), "\(plant): evicted beyond the planted rows")
        try await makeCache(directory, countLimit: 4).trim()
        _ = await served(cache, "\(plant), after a stricter eviction")

        // Storing every key again replaces whatever was planted under it: all are served.
        await store(0..<Self.keys, version: 2, in: cache)
        #expect(await served(cache, "\(plant), stored again") == Set(0..<Self.keys))
        await cache.trim()
        let rows = try IndexDatabase(directory).rows()
        #expect(rows.allSatisfy { $0.size >= 0 && $0.size < 1 << 40 }, "\(plant): a planted size outlived a trim")
        #expect(await cache.totalSize == rows.reduce(0) { $0 + Int($1.size) }, "\(plant): the totals drifted from the rows")
    }

    /// A planted 32 MiB info, then name: neither a lookup nor an info update may read it into
    /// memory, and a lookup serves the entry's own bytes and info or a miss.
    @Test func aPlantedHugeBlobIsNeverReadIntoMemory() async throws {
        for column in ["info", "name"] {
            let directory = try TemporaryDirectory()
            defer { directory.remove() }
            let cache = try makeCache(directory)
            await store(0..<3, version: 1, in: cache)
            try IndexDatabase(directory).execute("UPDATE entries SET \(column) = zeroblob(\(32 << 20))")
            // Measured alone (the memory tests' lock), the least growth of three tries, each on
            // a key of its own (an info update replaces the planted blob).
            var key = 0
            let growth = try await ResidentMemory.exclusively {
                try await ResidentMemory.peakGrowth(attempts: 3) {
                    if let entry = await cache.cachedData(for: Self.url(key)) { #expect(DiskCachePattern.isExact(entry, key: key)) }
                    await cache.updateInfo(CacheEntryInfo(etag: DiskCachePattern.etag(1)), for: Self.url(key))
                    key += 1
                }
            }
            guard let growth else { return }  // no /proc to measure with
            #expect(growth < 16 << 20, "\(column): the peak grew by \(growth) bytes")
        }
    }

    // MARK: Truncated files

    @Test func entryFilesTruncatedUnderTheirRowsAreMissesAndTheirRowsGo() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let cache = try makeCache(directory)
        await store(0..<Self.keys, version: 1, in: cache)
        // Cut to nothing, into the fixed header, into the URL, half-way, one byte short; and
        // one byte appended.
        let cuts: [(Int) -> Int] = [{ _ in 0 }, { _ in 12 }, { _ in 45 }, { $0 / 2 }, { $0 - 1 }, { $0 + 1 }]
        for (key, cut) in cuts.enumerated() {
            let path = directory.entryPath(Self.url(key))
            let whole = try Data(contentsOf: URL(fileURLWithPath: path))
            let damaged = cut(whole.count) <= whole.count ? whole.prefix(cut(whole.count)) : whole + Data([0])
            try damaged.write(to: URL(fileURLWithPath: path))
        }
        #expect(await served(cache, "truncated") == Set(cuts.count..<Self.keys))
        #expect(keysWithFiles(directory) == Set(cuts.count..<Self.keys))
        let names = Set(try IndexDatabase(directory).rows().map(\.fileName))
        #expect(names == Set((cuts.count..<Self.keys).map { DiskCache.fileName(for: Self.url($0)) }))
        #expect(await cache.entryCount == Self.keys - cuts.count)
        #expect(await cache.totalSize == allocatedBytes(in: directory))
    }
}
