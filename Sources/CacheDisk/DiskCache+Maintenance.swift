import Foundation
import PipelineCore
import Synchronization

// Background maintenance: the directory scan that builds the index, and LRU eviction.
extension DiskCache {
    /// Starts a maintenance pass in the background, or asks the running one to go again.
    /// One pass at a time per instance; passes of all instances and processes on the directory
    /// are serialised by `flock` on `.lock`.
    func scheduleMaintenance() {
        index.withLock { index in
            guard index.maintenance == nil else {
                index.wantsAnotherPass = true
                return
            }
            index.wantsAnotherPass = false
            // Stored under the lock before the task can finish, so its clean-up always finds it.
            index.maintenance = Task { [self] in await runMaintenance() }
        }
    }

    private func runMaintenance() async {
        while true {
            _ = try? await pool.run(priority: PriorityHandle(.prefetch)) { [self] in maintenancePass() }
            let again = index.withLock { index -> Bool in
                if index.wantsAnotherPass {
                    index.wantsAnotherPass = false
                    return true
                }
                index.maintenance = nil
                return false
            }
            if !again { return }
        }
    }

    /// Scans the directory (picking up other instances' writes and removals), then removes
    /// the entries unused for ``maxUnusedAge`` and, if the total is over ``sizeLimit`` or the
    /// count over ``countLimit``, the least recently used down to ``trimRatio`` of both. Runs
    /// on `pool` under the directory's lock.
    func maintenancePass() {
        let lock = DiskFiles.withExclusiveLock(path + "/.lock") {
            index.withLock { $0.beginScan() }
            let scanned = scan()
            index.withLock { $0.finishScan(scanned) }
            let unusedSince = maxUnusedAge.map { Date().timeIntervalSince1970 - $0 }
            let victims = index.withLock { index in
                let over = index.totalSize > sizeLimit || index.records.count > countLimit
                return index.victims(downTo: over ? Int(Double(sizeLimit) * trimRatio) : nil,
                                     count: over ? Int(Double(countLimit) * trimRatio) : nil, unusedSince: unusedSince)
            }
            for victim in victims {
                // Skip an entry read or rewritten since it was chosen: it is no longer the oldest.
                let unchanged = index.withLock { index -> Bool in
                    guard index.records[victim.name] == victim.record else { return false }
                    index.recordRemoval(victim.name)
                    return true
                }
                if unchanged {
                    unlink(entryPath(victim.name))
                    unlink(infoPath(victim.name))
                }
            }
        }
        if !lock {  // the lock file cannot be made: still index, never evict blind
            index.withLock { $0.beginScan() }
            let scanned = scan()
            index.withLock { $0.finishScan(scanned) }
        }
    }

    /// Lists the directory: entry files with their and their sidecars' disk space
    /// (``DiskFiles/allocatedSize(_:)`` of the `lstat` taken anyway) and mtime. Removes orphaned sidecars,
    /// temporary files old enough to be a crash's leftovers, and anything but a regular file
    /// under an entry's or a sidecar's name.
    func scan() -> [DiskIndex.Scanned] {
        guard let names = DiskFiles.names(in: path) else { return [] }
        let now = Date()
        var entries: [DiskIndex.Scanned] = []
        entries.reserveCapacity(names.count / 2 + 1)
        var sidecars: [String] = []
        var sidecarSizes: [Substring: Int] = [:]
        var entryNames = Set<String>()
        for name in names {
            if DiskFiles.isEntryName(name) {
                guard let status = DiskFiles.status(of: name, in: path) else { continue }
                guard status.st_mode & S_IFMT == S_IFREG else {  // a FIFO, symlink, directory…: never an entry
                    DiskFiles.remove(path + "/" + name, ifStill: status)
                    continue
                }
                entries.append(.init(name: name, size: DiskFiles.allocatedSize(status),
                                     modified: DiskFiles.modificationTime(status)))
                entryNames.insert(name)
            } else if name.hasSuffix(DiskFiles.infoSuffix) {
                let status = DiskFiles.status(of: name, in: path)
                if let status, status.st_mode & S_IFMT != S_IFREG {
                    DiskFiles.remove(path + "/" + name, ifStill: status)  // never a sidecar
                } else {
                    sidecars.append(name)
                    if let status { sidecarSizes[name.dropLast(DiskFiles.infoSuffix.count)] = DiskFiles.allocatedSize(status) }
                }
            } else if name.hasPrefix(DiskFiles.temporaryPrefix), let status = DiskFiles.status(of: name, in: path),
                      DiskFiles.isStaleTemporary(name, status: status, now: now) {
                unlink(path + "/" + name)
            }
        }
        for sidecar in sidecars where !entryNames.contains(String(sidecar.dropLast(DiskFiles.infoSuffix.count))) {
            // The entry may have been written since the listing: remove the sidecar only if it
            // is still orphaned now.
            let entry = String(sidecar.dropLast(DiskFiles.infoSuffix.count))
            if DiskFiles.status(of: entry, in: path) == nil { unlink(path + "/" + sidecar) }
        }
        for i in entries.indices { entries[i].sidecarSize = sidecarSizes[Substring(entries[i].name)] ?? 0 }
        return entries
    }

    /// Removes every entry, sidecar and temporary file, under the directory's lock.
    func removeAllFiles() {
        let remove = { [self] in
            for name in DiskFiles.names(in: path) ?? [] where DiskFiles.isEntryName(name)
                || name.hasSuffix(DiskFiles.infoSuffix) || name.hasPrefix(DiskFiles.temporaryPrefix) {
                if unlink(path + "/" + name) != 0 && errno == EISDIR, let status = DiskFiles.status(of: name, in: path) {
                    DiskFiles.remove(path + "/" + name, ifStill: status)
                }
            }
            index.withLock { $0.reset() }
        }
        if !DiskFiles.withExclusiveLock(path + "/.lock", remove) { remove() }
    }
}
