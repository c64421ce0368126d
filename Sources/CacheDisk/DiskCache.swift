import PipelineCore
import Synchronization

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// A `DataCaching` on disk: the compressed bytes exactly as loaded, keyed by fetch URL, with
/// their HTTP validators and freshness, under a cap on the disk space the files take and one
/// on their count, with least-recently-used eviction.
///
/// - Each entry is one file, `<directory>/<xx>/<name>`: `name` is the SHA-256 of the fetch URL in
///   hex and `xx` its first two digits (256 folders: a million entries make about 4,000 files
///   per folder). The file's header records the full URL, which is compared on every read, so
///   a name collision is a miss, never another picture.
/// - An index in SQLite (`<directory>/index.sqlite`) holds a row per entry: its
///   generation, the disk space it takes, its last use and its `CacheEntryInfo`. Lookups,
///   the caps and eviction read the index, never the folder, so opening costs the same at any
///   entry count; a miss touches no file.
/// - Every file is written as a temporary file in its folder and renamed into place before
///   its row commits: readers (in this process or another) see a whole old entry or a whole
///   new one. A truncated or corrupt entry (bad header, length or CRC-32 mismatch) is a miss
///   and is removed, and a row whose file is gone is a miss and is dropped.
/// - ``updateInfo(_:for:)`` (after a 304) changes the row only, never the file; it is skipped
///   when its validators differ from the stored ones (the entry was replaced since it was
///   read; RFC 9111 §4.3.4).
/// - Eviction runs in the background: once after opening, and after a store takes the total
///   past ``sizeLimit`` or the entries past ``countLimit``; it trims both to ``trimRatio`` of
///   their cap, least recently used first, choosing with one indexed query. With
///   ``maxUnusedAge`` it also removes every entry unused for that long (then a store also
///   starts a pass when the last began a tenth of that age ago). Passes in several processes
///   delete disjoint rows in SQLite transactions.
/// - Writes, repairs, eviction and anything that may wait for the disk run on a dedicated
///   `WorkerPool`, never on an actor or the cooperative pool. A lookup that needs no waiting (the
///   index's connection is free; the file's bytes are in the page cache, read with
///   `RWF_NOWAIT`) is answered on the caller's thread without a hop.
public final class DiskCache: DataCaching, Sendable {
    /// The directory holding the entries.
    public let directory: URL
    /// The most disk space, in bytes, the entries may take before eviction; see
    /// ``defaultSizeLimit(for:)``. It counts each file's allocated blocks (`st_blocks`), not
    /// its length: on a file system of 4 KiB blocks a 200-byte entry counts 4 KiB, as it takes
    /// 4 KiB of the disk. The index database and the 256 folders are not counted (about 150
    /// bytes per entry and 1 MiB). Between a store that crosses the cap and the background pass that trims, the directory
    /// may hold a few stores more.
    public let sizeLimit: Int
    /// The most entries the directory may hold before eviction; default
    /// ``defaultCountLimit(sizeLimit:)``, one per 4 KiB of ``sizeLimit``. It bounds the inodes
    /// (each entry is one file) where tiny files take little or no block
    /// space (small blocks, data kept inside the inode), so tiny entries cannot use 100,000
    /// inodes under a 32 MiB cap. Trimmed, like the size, to ``trimRatio`` of it. A value
    /// under 1 counts as 1.
    public let countLimit: Int
    /// Whether each write is `fsync`ed before its rename. Default `false`: a power cut may then
    /// lose recent entries, but a torn file fails its length or CRC check and reads as a miss.
    public let syncsWrites: Bool
    /// The fraction of ``sizeLimit`` an eviction pass trims down to. Default 0.8.
    public let trimRatio: Double
    /// How often, at most, a hit on one entry is written to the index, in seconds: a hit on an
    /// entry whose last use is more recent than that keeps it (entries used within the same
    /// interval are not ordered among themselves). Hits that are written wait in memory and go
    /// in batches, one transaction for up to 1,024 (a full batch at once, else within this
    /// interval), off the request path; ``waitForMaintenance()`` and
    /// the next eviction pass write them too. Each written hit rewrites its row's page and the
    /// last-use index's, so writing every hit of a busy cache would write megabytes of index a
    /// second. Default 60; 0 writes every hit, at once (in the background).
    public let accessPersistInterval: TimeInterval
    /// Entries not used for this long, in seconds, are removed by the next eviction pass, even
    /// under the cap; `nil` for no age limit. Default `nil`, as Nuke's `DataCache`: the size cap
    /// already bounds the space, and the least recently used go first when it is needed; until
    /// then an old entry still costs nothing and saves a download (a 304 instead of the body)
    /// or answers offline. Kingfisher's 7 days and SDWebImage's week are `7 * 86_400`.
    ///
    /// "Used" is a store or a hit in any process on the directory; another process's hits are
    /// seen once written to the index (see ``accessPersistInterval``).
    public let maxUnusedAge: TimeInterval?

    let path: String
    let fileName: @Sendable (URL) -> String
    let pool: WorkerPool
    let index: DiskIndex
    let maintenance = Mutex(MaintenanceState())
    /// The directory, opened once: lookups open entries below it with `openat2`,
    /// which refuses a symlink in any component in the same call. -1 when it cannot be opened.
    let directoryDescriptor: Int32

    /// A cache in `$XDG_CACHE_HOME/<name>` (or `~/.cache/<name>`), created if missing.
    /// - Parameters:
    ///   - name: the folder's name in the user's cache directory (``defaultDirectory(name:)``).
    ///   - sizeLimit: bytes; default ``defaultSizeLimit(for:)``.
    ///   - maxUnusedAge: seconds an entry may go unused before it is removed (``maxUnusedAge``);
    ///     default `nil`, no age limit.
    ///   - countLimit: entries; default ``defaultCountLimit(sizeLimit:)``.
    public convenience init(name: String = "ImagePipeline", sizeLimit: Int? = nil, maxUnusedAge: TimeInterval? = nil,
                            countLimit: Int? = nil) throws {
        try self.init(directory: Self.defaultDirectory(name: name), sizeLimit: sizeLimit, maxUnusedAge: maxUnusedAge,
                      countLimit: countLimit)
    }

    /// A cache in `directory`, created if missing. The directory may be shared by several
    /// instances and processes; it should hold nothing else.
    /// - Parameters:
    ///   - directory: the cache's folder.
    ///   - sizeLimit: bytes; default ``defaultSizeLimit(for:)``.
    ///   - syncsWrites: `fsync` every write before its rename. Default `false`.
    ///   - trimRatio: the fraction of the cap an eviction pass trims to. Default 0.8.
    ///   - accessPersistInterval: seconds between two writes of one entry's last use to the
    ///     index (``accessPersistInterval``). Default 60.
    ///   - maxUnusedAge: seconds an entry may go unused before it is removed (``maxUnusedAge``);
    ///     default `nil`, no age limit.
    ///   - countLimit: entries; default ``defaultCountLimit(sizeLimit:)``.
    public convenience init(directory: URL, sizeLimit: Int? = nil, syncsWrites: Bool = false,
                            trimRatio: Double = 0.8, accessPersistInterval: TimeInterval = 60,
                            maxUnusedAge: TimeInterval? = nil, countLimit: Int? = nil) throws {
        try self.init(directory: directory, sizeLimit: sizeLimit, syncsWrites: syncsWrites, trimRatio: trimRatio,
                      accessPersistInterval: accessPersistInterval, maxUnusedAge: maxUnusedAge, countLimit: countLimit,
                      fileName: Self.fileName(for:))
    }

    /// The designated initialiser; `fileName` lets tests force two URLs onto one file.
    package init(directory: URL, sizeLimit: Int?, syncsWrites: Bool, trimRatio: Double,
                 accessPersistInterval: TimeInterval, maxUnusedAge: TimeInterval?, countLimit: Int? = nil,
                 fileName: @escaping @Sendable (URL) -> String) throws {
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        self.directory = directory
        self.path = directory.path
        self.sizeLimit = max(0, sizeLimit ?? Self.defaultSizeLimit(for: directory))
        self.countLimit = max(1, countLimit ?? Self.defaultCountLimit(sizeLimit: self.sizeLimit))
        self.syncsWrites = syncsWrites
        self.trimRatio = min(1, max(0, trimRatio))
        self.accessPersistInterval = max(0, accessPersistInterval)
        self.maxUnusedAge = maxUnusedAge.map { max(0, $0) }
        self.fileName = fileName
        // Idle threads linger a second: a run of lookups reuses them instead of starting one each.
        self.pool = WorkerPool(maxConcurrent: 4, name: "DiskCache", idleTimeout: 1)
        self.index = DiskIndex(directory: directory.path)
        self.directoryDescriptor = open(directory.path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        scheduleMaintenance()  // a rebuild if one is pending, a folder's sweep, eviction: in the background
    }

    deinit {
        index.flushUses()  // the last hits' times, for LRU order in the next process
        if directoryDescriptor >= 0 { close(directoryDescriptor) }
    }

    /// `$XDG_CACHE_HOME/<name>` when that variable is an absolute path, else `~/.cache/<name>`.
    public static func defaultDirectory(name: String) -> URL {
        let environment = ProcessInfo.processInfo.environment
        if let xdg = environment["XDG_CACHE_HOME"], xdg.hasPrefix("/") {
            return URL(fileURLWithPath: xdg, isDirectory: true).appendingPathComponent(name, isDirectory: true)
        }
        return FileManager.default.homeDirectoryForCurrentUser
            .appendingPathComponent(".cache", isDirectory: true).appendingPathComponent(name, isDirectory: true)
    }

    /// The default cap: ``defaultSizeLimit(freeSpace:)`` of the space free to this user on
    /// `directory`'s file system (`statvfs`'s `f_bavail × f_frsize`), measured when the cache
    /// opens.
    public static func defaultSizeLimit(for directory: URL) -> Int {
        var info = statvfs()
        guard statvfs(directory.path, &info) == 0 else { return defaultSizeLimit(freeSpace: nil) }
        let free = Double(info.f_bavail) * Double(info.f_frsize)
        return defaultSizeLimit(freeSpace: Int(min(free, Double(Int.max / 2))))
    }

    /// The default cap for a file system with `freeSpace` bytes free: a tenth of it, at most
    /// 1 GiB, and never more than that tenth, however small (there is no floor: a 16 MiB floor
    /// once filled a 2 MiB file system to 100%; a 2 MiB one now gets a cap of about 200 KiB).
    /// 16 MiB when the free space cannot be read (`nil`), which happens only when `statvfs`
    /// fails on a directory just created.
    public static func defaultSizeLimit(freeSpace: Int?) -> Int {
        guard let freeSpace else { return 16 << 20 }
        return min(1 << 30, max(0, freeSpace) / 10)
    }

    /// The default ``countLimit``: one entry per 4 KiB of `sizeLimit` (the block of most Linux
    /// file systems, so where tiny entries take a block each the size cap binds first), at
    /// least 1. A 32 MiB cap holds at most 8,192 entries; the 1 GiB most caps get, 262,144.
    public static func defaultCountLimit(sizeLimit: Int) -> Int {
        max(1, sizeLimit / 4096)
    }

    /// The file name of `url`'s entry: the SHA-256 of its absolute string, in hex.
    public static func fileName(for url: URL) -> String {
        SHA256.hexDigest(url.absoluteString.utf8)
    }

    // MARK: DataCaching

    /// The entry for `url`, or `nil` when there is none or it is damaged (then it is removed).
    ///
    /// Answered on the caller's thread when that needs no waiting: a miss the index answers, or
    /// a hit whose file the page cache holds (a few microseconds, no thread hop). Otherwise the
    /// read runs on the cache's pool.
    public func cachedData(for url: URL) async -> CachedData? {
        let name = fileName(url)
        if case .answered(let data) = readWithoutWaiting(url: url, name: name) { return data }
        return try? await pool.run(priority: PriorityHandle(.visible)) { [self] in read(url: url, name: name) }
    }

    /// The length, CRC-32 and info of `url`'s entry, read from its header only (no body read):
    /// what a rendition's tag check needs. `nil` when there is none or its header is damaged.
    /// Answered on the caller's thread when it can be without waiting, as ``cachedData(for:)``.
    public func cachedDigest(for url: URL) async -> CachedDigest? {
        let name = fileName(url)
        if case .answered(let digest) = readDigestWithoutWaiting(url: url, name: name) { return digest }
        return try? await pool.run(priority: PriorityHandle(.visible)) { [self] in readDigest(url: url, name: name) }
    }

    /// Stores `data` for `url` atomically, replacing any entry. Entries larger than the cap or
    /// with a URL over 32 KiB are not stored (and any old entry for `url` is removed).
    public func storeData(_ data: Data, info: CacheEntryInfo, for url: URL) async {
        let name = fileName(url)
        _ = try? await pool.run(priority: PriorityHandle(.visible)) { [self] in write(data, info: info, url: url, name: name) }
    }

    /// Replaces the info of `url`'s entry in the index; the file is not touched.
    public func updateInfo(_ info: CacheEntryInfo, for url: URL) async {
        let name = fileName(url)
        _ = try? await pool.run(priority: PriorityHandle(.visible)) { [self] in writeInfo(info, url: url, name: name) }
    }

    /// Removes `url`'s entry, if the file holds `url`.
    public func removeData(for url: URL) async {
        let name = fileName(url)
        _ = try? await pool.run(priority: PriorityHandle(.visible)) { [self] in remove(url: url, name: name) }
    }

    // MARK: Whole cache

    /// Removes every entry and temporary file in the directory, and every row of the index.
    public func removeAll() async {
        await waitForMaintenance()
        _ = try? await pool.run(priority: PriorityHandle(.visible)) { [self] in removeAllFiles() }
    }

    /// The disk space the entries take (allocated blocks, as ``sizeLimit`` counts them), by the
    /// index (once a pending rebuild has finished).
    public var totalSize: Int {
        get async { await totals().size }
    }

    /// The number of entries, by the index (once a pending rebuild has finished).
    public var entryCount: Int {
        get async { await totals().count }
    }

    private func totals() async -> (size: Int, count: Int) {
        await waitForIndex()
        return (try? await pool.run(priority: PriorityHandle(.visible)) { [index] in index.totals() }) ?? nil ?? (0, 0)
    }

    /// Runs an eviction pass now and waits for it.
    public func trim() async {
        scheduleMaintenance()
        await waitForMaintenance()
    }

    /// Sets the last use of `url`'s entry in the index, as if it had last been used at `date`
    /// (tests of eviction and the age limit: entries used days ago, without waiting days).
    package func setLastUse(_ date: Date, for url: URL) async {
        let key = DiskIndex.key(of: fileName(url)).key
        _ = try? await pool.run(priority: PriorityHandle(.visible)) { [index] in
            index.flushUses()
            index.setLastUse(key, Int64(date.timeIntervalSince1970 * 1e6))
        }
    }

    /// Writes the hits waiting in memory to the index (``accessPersistInterval``), then waits
    /// until no background rebuild, sweep or eviction is running.
    public func waitForMaintenance() async {
        if index.hasPendingUses { _ = try? await pool.run(priority: PriorityHandle(.visible)) { [index] in index.flushUses() } }
        while let task = maintenance.withLock({ $0.task }) {
            await task.value
        }
    }

    /// Waits until no rebuild is pending (at most one pass when the index cannot be opened).
    private func waitForIndex() async {
        await waitForMaintenance()
        if index.isRebuilding && index.isOpen {
            scheduleMaintenance()
            await waitForMaintenance()
        }
    }
}
