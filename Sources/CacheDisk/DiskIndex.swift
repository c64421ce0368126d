import Foundation

/// The disk cache's in-memory view of its directory: disk space and last access per entry, for
/// the size and count caps, least-recently-used eviction and the age limit
/// (``DiskCache/maxUnusedAge``). Sizes are the files' allocated space
/// (``DiskFiles/allocatedSize(_:)``), taken from a `stat` of each file (never from a stored
/// field), so a scan of a directory that other processes wrote, or that a crash left, counts
/// what is really there.
/// Lookups never need it (they go straight to the file), so it is built by a directory scan in
/// the background and the first request does not wait for it.
///
/// Last access lives here, in memory, updated on every hit with a strictly increasing clock
/// (cheap: one dictionary write under the cache's lock). It is persisted as the entry file's
/// mtime, at most once per ``DiskCache/accessPersistInterval`` per entry (a `futimens` on the
/// open descriptor, no bytes written), so a later process orders entries by it after a scan.
///
/// A scan runs without the lock. Whatever this instance writes, reads or removes while a scan is
/// running is remembered in ``touchedDuringScan`` and wins over the scan's older picture.
struct DiskIndex {
    struct Record: Equatable {
        /// The disk space the entry file takes.
        var entrySize: Int
        /// The disk space its info sidecar takes (0 without one).
        var sidecarSize = 0
        /// Seconds since 1970 (strictly increasing within this instance).
        var lastAccess: Double
        /// The last access written to the file's mtime.
        var persistedAccess: Double

        /// What the entry counts against the cap: both files.
        var size: Int { entrySize + sidecarSize }
    }

    /// A file found by a scan.
    struct Scanned {
        var name: String
        /// The entry file's disk space.
        var size: Int
        /// Its sidecar's, 0 without one.
        var sidecarSize = 0
        var modified: Double
    }

    private(set) var records: [String: Record] = [:]
    private(set) var totalSize = 0
    /// Whether one scan has finished (``totalSize`` and the count are then meaningful).
    private(set) var isLoaded = false
    private var scanning = false
    private var touchedDuringScan: Set<String> = []
    private var clock: Double = 0

    /// When the last scan began (``tick()``), 0 before the first.
    private(set) var lastScanStart: Double = 0

    /// The running maintenance task (scan and eviction), if any.
    var maintenance: Task<Void, Never>?
    /// Set when maintenance is asked for while a pass runs: the pass runs once more.
    var wantsAnotherPass = false

    /// A strictly increasing "now" in seconds since 1970.
    mutating func tick() -> Double {
        clock = max(Date().timeIntervalSince1970, clock + 1e-6)
        return clock
    }

    private mutating func set(_ name: String, _ record: Record?) {
        totalSize -= records[name]?.size ?? 0
        records[name] = record
        totalSize += record?.size ?? 0
        if scanning { touchedDuringScan.insert(name) }
    }

    /// A store under `name` of a file taking `size` bytes of disk (its sidecar was removed).
    mutating func recordWrite(_ name: String, size: Int) {
        let now = tick()
        set(name, Record(entrySize: size, lastAccess: now, persistedAccess: now))
    }

    /// A sidecar taking `size` bytes of disk written for entry `name` (ignored when the entry
    /// is not known: the next scan counts it).
    mutating func recordSidecar(_ name: String, size: Int) {
        guard var record = records[name] else { return }
        record.sidecarSize = size
        set(name, record)
    }

    /// A hit on `name` (a file taking `size` bytes of disk with a sidecar of `sidecarSize`,
    /// last modified at `modified`). Returns whether the access should be written to the
    /// file's mtime now.
    mutating func recordAccess(_ name: String, size: Int, sidecarSize: Int, modified: Double,
                               persistInterval: TimeInterval) -> Bool {
        let now = tick()
        var record = records[name] ?? Record(entrySize: size, lastAccess: now, persistedAccess: modified)
        record.entrySize = size
        record.sidecarSize = sidecarSize
        record.lastAccess = now
        let persist = now - record.persistedAccess >= persistInterval
        if persist { record.persistedAccess = now }
        set(name, record)
        return persist
    }

    /// `name` is gone.
    mutating func recordRemoval(_ name: String) {
        set(name, nil)
    }

    /// Forgets everything (after `removeAll`).
    mutating func reset() {
        if scanning { touchedDuringScan.formUnion(records.keys) }
        records = [:]
        totalSize = 0
    }

    mutating func beginScan() {
        lastScanStart = tick()
        scanning = true
        touchedDuringScan = []
    }

    /// Replaces the view with `scanned`, keeping what this instance did during the scan and the
    /// later of the file's mtime and the access remembered in memory.
    mutating func finishScan(_ scanned: [Scanned]) {
        var fresh: [String: Record] = [:]
        fresh.reserveCapacity(scanned.count)
        for file in scanned where !touchedDuringScan.contains(file.name) {
            let known = records[file.name]
            fresh[file.name] = Record(entrySize: file.size, sidecarSize: file.sidecarSize,
                                      lastAccess: max(file.modified, known?.lastAccess ?? 0),
                                      persistedAccess: max(file.modified, known?.persistedAccess ?? 0))
        }
        for name in touchedDuringScan {
            if let record = records[name] { fresh[name] = record }
        }
        records = fresh
        totalSize = fresh.values.reduce(0) { $0 + $1.size }
        scanning = false
        touchedDuringScan = []
        isLoaded = true
    }

    /// The entries to remove, oldest access first, with the record each had when chosen: every
    /// one last used before `unusedSince` (seconds since 1970), then, with a `target`, the least
    /// recently used until the total is at most `target` bytes and, with a `countTarget`, the
    /// entries at most that many.
    /// - Complexity: O(n log n) in the entry count when something goes; runs on a maintenance
    ///   pass only.
    func victims(downTo target: Int?, count countTarget: Int? = nil,
                 unusedSince: Double? = nil) -> [(name: String, record: Record)] {
        var excess = target.map { totalSize - $0 } ?? 0
        var excessCount = countTarget.map { records.count - $0 } ?? 0
        let cutoff = unusedSince ?? -Double.infinity
        guard excess > 0 || excessCount > 0 || records.values.contains(where: { $0.lastAccess < cutoff }) else {
            return []
        }
        var victims: [(name: String, record: Record)] = []
        for (name, record) in records.sorted(by: { $0.value.lastAccess < $1.value.lastAccess }) {
            guard excess > 0 || excessCount > 0 || record.lastAccess < cutoff else { break }
            victims.append((name, record))
            excess -= record.size
            excessCount -= 1
        }
        return victims
    }
}
