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

/// The background work's bookkeeping in one instance.
struct MaintenanceState {
    /// The running pass, if any.
    var task: Task<Void, Never>?
    /// Set when a pass is asked for while one runs: it runs once more.
    var wantsAnotherPass = false
    /// When the last pass began, in seconds since 1970 (0 before the first).
    var lastPassStart: Double = 0
}

// Background maintenance: the rebuild of a lost index (and the migration of the flat layout),
// the sweep of one folder per pass, and LRU eviction.
extension DiskCache {
    /// How many rows an eviction transaction deletes at most; a pass repeats until done.
    static let evictionBatch = 512

    /// Starts a maintenance pass in the background, or asks the running one to go again.
    func scheduleMaintenance() {
        maintenance.withLock { state in
            guard state.task == nil else {
                state.wantsAnotherPass = true
                return
            }
            state.wantsAnotherPass = false
            // Stored under the lock before the task can finish, so its clean-up always finds it.
            state.task = Task { [self] in await runMaintenance() }
        }
    }

    private func runMaintenance() async {
        while true {
            _ = try? await pool.run(priority: PriorityHandle(.prefetch)) { [self] in maintenancePass() }
            let again = maintenance.withLock { state -> Bool in
                if state.wantsAnotherPass {
                    state.wantsAnotherPass = false
                    return true
                }
                state.task = nil
                return false
            }
            if !again { return }
        }
    }

    /// One pass: follows another process's replacement of a corrupt index, writes the waiting
    /// hits, rebuilds the index from the files if that is pending, sweeps the next of the 256
    /// folders, then removes the entries unused for ``maxUnusedAge`` and, if the total is over
    /// ``sizeLimit`` or the count over ``countLimit``, the least recently used down to
    /// ``trimRatio`` of both. Runs on `pool`.
    func maintenancePass() {
        let first = maintenance.withLock { state -> Bool in
            defer { state.lastPassStart = Date().timeIntervalSince1970 }
            return state.lastPassStart == 0
        }
        index.followReplacement()
        index.flushUses()
        index.refreshRebuilding()
        if index.isRebuilding && index.isOpen { rebuild() }
        // Not in the pass that opening starts: its folder (4,000 files at a million entries)
        // would compete with the first lookups for the machine.
        if !first { sweepNextFolder() }
        evict()
    }

    /// Deletes the rows to evict in batches (one transaction each) and then their files. A file
    /// is removed only while it still holds the evicted generation: a writer that renamed a new
    /// file in since keeps it (its row follows).
    func evict() {
        guard let totals = index.totals() else { return }
        let over = totals.size > sizeLimit || totals.count > countLimit
        let unusedBefore = maxUnusedAge.map { Int64((Date().timeIntervalSince1970 - $0) * 1e6) }
        guard over || unusedBefore != nil else { return }
        while true {
            let victims = index.evict(sizeTarget: over ? Int(Double(sizeLimit) * trimRatio) : nil,
                                      countTarget: over ? Int(Double(countLimit) * trimRatio) : nil,
                                      unusedBefore: unusedBefore, batch: Self.evictionBatch)
            for victim in victims { removeFile(named: SHA256.hex(victim.name), generation: victim.generation) }
            if victims.count < Self.evictionBatch { return }
        }
    }

    /// Removes entry file `name` if its header names `generation` (or is damaged). A name that
    /// is not an entry's (a planted row's: an empty one makes the path the cache's own folder)
    /// names no file.
    private func removeFile(named name: String, generation: UInt64) {
        guard DiskFiles.isEntryName(name), isFolder(folderPath(name)),
              let file = DiskFiles.openRegular(entryPath(name), flags: O_RDONLY), let status = file.status() else { return }
        let header = DiskCacheEntry.read(from: file, kind: .entry, fileSize: Int(status.st_size))
        if header == nil || header?.value.generation == generation { DiskFiles.remove(entryPath(name), ifStill: status) }
    }

    /// Sweeps the folder the index's cursor names and moves the cursor on: a whole sweep takes
    /// 256 passes, shared by every process on the directory.
    private func sweepNextFolder() {
        guard index.isOpen, !index.isRebuilding else { return }
        let cursor = Int(index.meta("sweep") ?? 0) & 0xFF
        index.setMeta("sweep", Int64((cursor + 1) & 0xFF))
        sweep(folder: path + "/" + SHA256.hex([UInt8(cursor)]), now: Date())
    }

    /// Removes from `folder` what no row accounts for and no writer is still about to: entry
    /// files without a row (a crash between the rename and the commit, or rows lost with a
    /// power cut) once older than ``DiskFiles/temporaryLifetime``, stale temporary files, and
    /// anything but a regular file under an entry's name.
    func sweep(folder: String, now: Date) {
        guard isFolder(folder) else { return }
        for name in DiskFiles.names(in: folder) ?? [] {
            guard let status = DiskFiles.status(of: name, in: folder) else { continue }
            if DiskFiles.isEntryName(name) {
                guard status.st_mode & S_IFMT == S_IFREG else {
                    DiskFiles.remove(folder + "/" + name, ifStill: status)
                    continue
                }
                let (key, digest) = DiskIndex.key(of: name)
                guard now.timeIntervalSince1970 - DiskFiles.modificationTime(status) > DiskFiles.temporaryLifetime,
                      index.rowForMaintenance(key)?.name != digest else { continue }
                DiskFiles.remove(folder + "/" + name, ifStill: status)
            } else if DiskFiles.isStaleTemporary(name, status: status, now: now) {
                unlink(folder + "/" + name)
            }
        }
    }

    // MARK: Rebuild

    /// Reads every entry file's header into the index: after the database was lost or found
    /// corrupt (it was then made anew), and once when a directory of the flat layout (before
    /// the index: entries and `.info` sidecars side by side) is first opened. Rows a store
    /// wrote meanwhile win. Lookups without a row read the file until it is done.
    func rebuild() {
        migrateFlatLayout()
        for folder in 0...255 { indexFolder(path + "/" + SHA256.hex([UInt8(folder)])) }
        index.setMeta("rebuild", 0)
    }

    /// Indexes the entry files of `folder` that have no row, in one transaction.
    private func indexFolder(_ folder: String) {
        guard isFolder(folder) else { return }
        var rows: [DiskIndex.Row] = []
        for name in DiskFiles.names(in: folder) ?? [] where DiskFiles.isEntryName(name) {
            let (key, digest) = DiskIndex.key(of: name)
            if index.rowForMaintenance(key)?.name == digest { continue }
            if let row = readRow(path: folder + "/" + name, key: key, digest: digest, sidecar: nil) { rows.append(row) }
        }
        index.insertIfAbsent(rows)
    }

    /// The row for the entry file at `path` from its header (and, for the flat layout, its
    /// sidecar's info when that applies); a damaged file is removed and `nil` returned.
    private func readRow(path: String, key: Int64, digest: [UInt8], sidecar: DiskCacheEntry?) -> DiskIndex.Row? {
        guard let file = DiskFiles.openRegular(path, flags: O_RDONLY), let status = file.status() else { return nil }
        guard let header = soundHeader(of: file, fileSize: Int(status.st_size)) else {
            DiskFiles.remove(path, ifStill: status)
            return nil
        }
        var info = header.value.info
        if let sidecar, sidecar.applies(to: header.value) { info = sidecar.info }
        guard let infoBytes = info.encoded() else { return nil }
        return DiskIndex.Row(key: key, name: digest, generation: header.value.generation, size: DiskFiles.allocatedSize(status),
                             lastUse: Int64(DiskFiles.modificationTime(status) * 1e6), info: infoBytes)
    }

    /// Moves the entries of the flat layout (format 2 or 3 headers in `<directory>/<name>`,
    /// their info in `<name>.info` sidecars) into their folders and the index, keeping their
    /// last use (the file's mtime, as that layout persisted it). A format-2 file is kept as it
    /// is (reads still understand its header) until the URL is next stored; a format-1 or
    /// damaged one is removed. Sidecars, the old `.lock` and stale temporary files go.
    private func migrateFlatLayout() {
        guard let names = DiskFiles.names(in: path) else { return }
        let now = Date()
        var rows: [DiskIndex.Row] = []
        for name in names where DiskFiles.isEntryName(name) {
            let flat = path + "/" + name
            let sidecar = readSidecar(flat + DiskFiles.infoSuffix)
            let (key, digest) = DiskIndex.key(of: name)
            guard index.rowForMaintenance(key)?.name != digest else {  // stored again since: the new file wins
                unlink(flat)
                continue
            }
            guard var row = readRow(path: flat, key: key, digest: digest, sidecar: sidecar) else { continue }
            var status = stat()
            guard lstat(flat, &status) == 0, let size = moveIntoFolder(flat, name: name) else { continue }
            row.size = max(size, DiskFiles.allocatedSize(status))
            rows.append(row)
        }
        index.insertIfAbsent(rows)
        for name in names {
            guard let status = DiskFiles.status(of: name, in: path) else { continue }
            // Whatever node is there (a directory too): the flat layout's files are gone for good.
            if name.hasSuffix(DiskFiles.infoSuffix) && DiskFiles.isEntryName(name.dropLast(DiskFiles.infoSuffix.count))
                || name == ".lock" || DiskFiles.isStaleTemporary(name, status: status, now: now) {
                DiskFiles.remove(path + "/" + name, ifStill: status)
            }
        }
    }

    /// Renames the flat file at `flat` into its folder; its disk space, or `nil`.
    private func moveIntoFolder(_ flat: String, name: String) -> Int? {
        guard writeFolder(for: name) else { return nil }
        guard rename(flat, entryPath(name)) == 0 else { return nil }
        var status = stat()
        return lstat(entryPath(name), &status) == 0 ? DiskFiles.allocatedSize(status) : nil
    }

    /// The info sidecar at `path` (flat layout), if it is a sound one.
    private func readSidecar(_ path: String) -> DiskCacheEntry? {
        guard let file = DiskFiles.openRegular(path, flags: O_RDONLY), let status = file.status(),
              Int(status.st_size) <= DiskCacheEntry.maxLength,
              let header = DiskCacheEntry.read(from: file, kind: .info, fileSize: Int(status.st_size)),
              header.length == Int(status.st_size) else { return nil }
        return header.value
    }

    /// Removes every entry and temporary file, and every row.
    func removeAllFiles() {
        index.removeAll()
        // The top folder too: entries of the flat layout not yet moved in.
        let folders = [path] + (0...255).map { path + "/" + SHA256.hex([UInt8($0)]) }.filter(isFolder)
        for folder in folders {
            for name in DiskFiles.names(in: folder) ?? [] where DiskFiles.isEntryName(name) || name.hasPrefix(DiskFiles.temporaryPrefix) {
                if let status = DiskFiles.status(of: name, in: folder) { DiskFiles.remove(folder + "/" + name, ifStill: status) }
            }
        }
    }
}
