import Foundation

/// The disk cache's in-memory view of its directory: size and last access per entry, for the
/// size cap, least-recently-used eviction and the age limit (``DiskCache/maxUnusedAge``).
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
        /// Entry file bytes.
        var size: Int
        /// Seconds since 1970 (strictly increasing within this instance).
        var lastAccess: Double
        /// The last access written to the file's mtime.
        var persistedAccess: Double
    }

    /// A file found by a scan.
    struct Scanned {
        var name: String
        var size: Int
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

    /// A store of `size` bytes under `name`.
    mutating func recordWrite(_ name: String, size: Int) {
        let now = tick()
        set(name, Record(size: size, lastAccess: now, persistedAccess: now))
    }

    /// A hit on `name` (a file of `size` bytes, last modified at `modified`). Returns whether
    /// the access should be written to the file's mtime now.
    mutating func recordAccess(_ name: String, size: Int, modified: Double, persistInterval: TimeInterval) -> Bool {
        let now = tick()
        var record = records[name] ?? Record(size: size, lastAccess: now, persistedAccess: modified)
        record.size = size
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
            fresh[file.name] = Record(size: file.size, lastAccess: max(file.modified, known?.lastAccess ?? 0),
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
    /// recently used until the total is at most `target` bytes.
    /// - Complexity: O(n log n) in the entry count when something goes; runs on a maintenance
    ///   pass only.
    func victims(downTo target: Int?, unusedSince: Double? = nil) -> [(name: String, record: Record)] {
        var excess = target.map { totalSize - $0 } ?? 0
        let cutoff = unusedSince ?? -Double.infinity
        guard excess > 0 || records.values.contains(where: { $0.lastAccess < cutoff }) else { return [] }
        var victims: [(name: String, record: Record)] = []
        for (name, record) in records.sorted(by: { $0.value.lastAccess < $1.value.lastAccess }) {
            guard excess > 0 || record.lastAccess < cutoff else { break }
            victims.append((name, record))
            excess -= record.size
        }
        return victims
    }
}
