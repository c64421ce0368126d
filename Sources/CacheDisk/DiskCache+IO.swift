import CDiskCacheShim
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

// Reading and writing single entries. Every function here blocks and runs on `pool`.
extension DiskCache {
    /// The folder of entry `name`: its first two hex digits.
    func folderPath(_ name: String) -> String { path + "/" + name.prefix(2) }
    func entryPath(_ name: String) -> String { folderPath(name) + "/" + name }

    /// The largest entry file a read accepts: bigger ones cannot have been written under this
    /// cap (or are hostile) and are removed before anything is allocated.
    var maxEntryFileSize: Int { sizeLimit + DiskCacheEntry.maxLength }

    /// Reads `url`'s entry from file `name`: the index's row, then the file's header checks,
    /// URL check, generation, body length and CRC. A damaged file, or anything but a regular
    /// file (``DiskFiles/openRegular(_:flags:)``), is removed with its row; another URL's entry
    /// (a name collision) is left alone.
    func read(url: URL, name: String) -> CachedData? {
        guard let entry = lookUp(url: url, name: name) else { return nil }
        var body = Data(count: Int(entry.header.bodyLength))
        let ok = body.isEmpty || body.withUnsafeMutableBytes { entry.file.read(into: $0, at: entry.headerLength) }
        guard ok, CRC32.checksum(body) == entry.header.bodyCRC else {
            removeDamaged(name, status: entry.status)
            return nil
        }
        recordHit(entry)
        return CachedData(data: body, info: entry.info)
    }

    /// What a lookup on the caller's thread found: an answer, or that it would have had to
    /// wait (for the disk, for a connection another thread holds) or to repair something.
    enum QuickAnswer<Value> {
        case answered(Value?)
        case wouldWait
    }

    /// Reads `url`'s entry without waiting: the index's row if its connection is free, then the
    /// file's header and body only as far as the page cache holds them (`RWF_NOWAIT`). Anything
    /// else — a read that would go to the disk, a rebuild, a missing or damaged file — is left
    /// to ``read(url:name:)`` on the pool, which also repairs. A miss the index answers touches
    /// no file.
    func readWithoutWaiting(url: URL, name: String) -> QuickAnswer<CachedData> {
        let found: OpenedEntry
        switch lookUpWithoutWaiting(url: url, name: name, readsWhole: true) {
        case .answered(let entry?): found = entry
        case .answered(nil): return .answered(nil)
        case .wouldWait: return .wouldWait
        }
        var entry = found
        var body: Data
        if var whole = entry.wholeFile {  // a small file, read in one go with its header
            entry.wholeFile = nil
            whole.removeSubrange(0..<entry.headerLength)  // in place: no second buffer
            body = whole
        } else {
            body = Data(count: Int(entry.header.bodyLength))
            let ok = body.isEmpty || body.withUnsafeMutableBytes { entry.file.read(into: $0, at: entry.headerLength) }
            guard ok else { return .wouldWait }
        }
        guard CRC32.checksum(body) == entry.header.bodyCRC else { return .wouldWait }
        recordHit(entry)
        return .answered(CachedData(data: body, info: entry.info))
    }

    /// ``readDigest(url:name:)`` without waiting (see ``readWithoutWaiting(url:name:)``).
    func readDigestWithoutWaiting(url: URL, name: String) -> QuickAnswer<CachedDigest> {
        switch lookUpWithoutWaiting(url: url, name: name, readsWhole: false) {
        case .answered(let entry?):
            recordHit(entry)
            return .answered(CachedDigest(length: Int(entry.header.bodyLength), crc32: entry.header.bodyCRC, info: entry.info))
        case .answered(nil): return .answered(nil)
        case .wouldWait: return .wouldWait
        }
    }

    /// Opens entry file `name` for reading with no symlink followed in its folder or its name
    /// (`openat2` below the directory; where that call does not exist, an `lstat` of the folder
    /// then an `O_NOFOLLOW` open). -1 when it cannot.
    private func openBelowDirectory(_ name: String) -> Int32 {
        let fd = directoryDescriptor >= 0 ? cachedisk_open_beneath(directoryDescriptor, String(name.prefix(2)) + "/" + name) : -1
        guard fd < 0, directoryDescriptor < 0 || errno == ENOSYS else { return fd }
        var folder = stat()
        guard lstat(folderPath(name), &folder) == 0, folder.st_mode & S_IFMT == S_IFDIR else { return -1 }
        return open(entryPath(name), O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY)
    }

    /// Files up to this size are read whole in one `pread` when their body is wanted.
    static let oneReadLimit = 64 << 10

    private func lookUpWithoutWaiting(url: URL, name: String, readsWhole: Bool) -> QuickAnswer<OpenedEntry> {
        let (key, digest) = DiskIndex.key(of: name)
        guard let answer = index.rowWithoutWaiting(key) else { return .wouldWait }
        guard let row = answer else { return index.isRebuilding ? .wouldWait : .answered(nil) }
        guard row.name == digest else { return .answered(nil) }  // another name sharing the key's 8 bytes
        let rowInfo = Self.decodeInfo(row.info)
        let fd = openBelowDirectory(name)
        guard fd >= 0 else { return .wouldWait }  // gone or odd: the pool's read drops or removes it
        let file = DiskFiles.Descriptor(fd: fd)
        file.noWait = true
        guard let status = file.status(), status.st_mode & S_IFMT == S_IFREG else { return .wouldWait }
        let fileSize = Int(status.st_size)
        guard fileSize <= maxEntryFileSize else { return .wouldWait }
        var wholeFile: Data?
        let parsed: (value: DiskCacheEntry, length: Int)?
        if readsWhole && fileSize <= Self.oneReadLimit {
            var whole = Data(count: fileSize)
            guard whole.isEmpty || whole.withUnsafeMutableBytes({ file.read(into: $0, at: 0) }) else { return .wouldWait }
            parsed = whole.withUnsafeBytes {
                DiskCacheEntry.read(from: $0, kind: .entry, fileSize: fileSize, skippingInfoOf: rowInfo == nil ? nil : row.generation)
            }
            wholeFile = whole
        } else {
            parsed = DiskCacheEntry.read(from: file, kind: .entry, fileSize: fileSize)
        }
        guard let header = parsed, UInt64(fileSize - header.length) == header.value.bodyLength,
              header.value.url == url.absoluteString else { return .wouldWait }
        var entry = OpenedEntry(file: file, status: status, header: header.value, headerLength: header.length,
                                key: key, indexed: true, info: header.value.info)
        entry.wholeFile = wholeFile
        entry.lastUse = row.lastUse
        if row.generation == header.value.generation, let rowInfo { entry.info = rowInfo }
        return .answered(entry)
    }

    /// The digest of `url`'s entry in file `name` from its row and header alone: the body is
    /// neither read nor checked (a torn body is found by the next full ``read(url:name:)``).
    /// Counts as a use for LRU order, like a read.
    func readDigest(url: URL, name: String) -> CachedDigest? {
        guard let entry = lookUp(url: url, name: name) else { return nil }
        recordHit(entry)
        return CachedDigest(length: Int(entry.header.bodyLength), crc32: entry.header.bodyCRC, info: entry.info)
    }

    /// An entry file opened for reading, with its header checked against the file's size.
    struct OpenedEntry {
        let file: DiskFiles.Descriptor
        let status: stat
        let header: DiskCacheEntry
        let headerLength: Int
        /// The row's key and whether the entry has a row (a hit then updates its last use).
        var key: Int64 = 0
        var indexed = false
        /// The row's info when it describes this file (same generation), else the header's.
        var info = CacheEntryInfo()
        /// The whole file, when a lookup read a small one in one go.
        var wholeFile: Data?
        /// The row's last use (microseconds since 1970).
        var lastUse: Int64 = 0
    }

    /// What is at an entry's path.
    enum Opened {
        case opened(OpenedEntry)
        /// Nothing, or something that was not a sound entry file (now removed).
        case absent
        /// Another URL's entry under the same name.
        case otherURL
    }

    /// Finds `url`'s entry: its row first (no row is a miss without touching the disk, unless a
    /// rebuild is pending), then its file. A row whose file is missing or damaged is dropped.
    private func lookUp(url: URL, name: String) -> OpenedEntry? {
        let (key, digest) = DiskIndex.key(of: name)
        let row = index.row(key)
        if let row, row.name != digest { return nil }  // another name that shares the key's 8 bytes
        if row == nil && !index.isRebuilding { return nil }
        switch openEntry(url: url, name: name) {
        case .opened(var entry):
            entry.key = key
            entry.info = entry.header.info
            if let row {
                entry.indexed = true
                entry.lastUse = row.lastUse
                // The row describes its generation only: a file renamed in by a writer whose row
                // has not committed yet carries its own info in its header.
                if row.generation == entry.header.generation, let info = Self.decodeInfo(row.info) { entry.info = info }
            }
            return entry
        case .absent:
            if let row { index.remove(key, name: digest, generation: row.generation) }
            return nil
        case .otherURL:
            return nil
        }
    }

    /// Opens file `name` when it holds `url`'s entry with a sound header. A damaged file is
    /// removed (as anything but a regular file is by the open).
    func openEntry(url: URL, name: String) -> Opened {
        guard isFolder(folderPath(name)), let file = DiskFiles.openRegular(entryPath(name), flags: O_RDONLY),
              let status = file.status(), status.st_mode & S_IFMT == S_IFREG else { return .absent }
        guard let header = soundHeader(of: file, fileSize: Int(status.st_size)) else {
            removeDamaged(name, status: status)
            return .absent
        }
        guard header.value.url == url.absoluteString else { return .otherURL }  // a collision: not ours
        return .opened(OpenedEntry(file: file, status: status, header: header.value, headerLength: header.length))
    }

    /// The header of the entry file `file` of `fileSize` bytes when the file is sound: no larger
    /// than an entry under this cap can be, a header that decodes, and then exactly the body
    /// length it declares. `nil` for damage.
    func soundHeader(of file: DiskFiles.Descriptor, fileSize: Int) -> (value: DiskCacheEntry, length: Int)? {
        guard fileSize <= maxEntryFileSize, let header = DiskCacheEntry.read(from: file, kind: .entry, fileSize: fileSize),
              UInt64(fileSize - header.length) == header.value.bodyLength else { return nil }
        return header
    }

    /// Records a hit for LRU order when the entry's last use is older than
    /// ``accessPersistInterval``: in memory, written to the index in a batch off the request path.
    private func recordHit(_ entry: OpenedEntry) {
        guard entry.indexed else { return }
        let now = index.tick()
        // A planted or clock-skewed last use (far past, future) must not overflow: it counts as old.
        let (age, overflow) = now.subtractingReportingOverflow(entry.lastUse)
        guard overflow || age < 0 || Double(age) >= accessPersistInterval * 1e6 else { return }
        let delay: TimeInterval
        switch index.recordUse(entry.key, at: now, flushAfter: accessPersistInterval) {
        case .now: delay = 0
        case .later(let wait): delay = wait
        case .scheduled: return
        }
        Task { [index, pool] in
            if delay > 0 { try? await Task.sleep(for: .seconds(delay)) }
            _ = try? await pool.run(priority: PriorityHandle(.prefetch)) { index.flushUses() }
        }
    }

    /// Removes damaged entry file `name` if it is still the file `status` describes, and its row.
    private func removeDamaged(_ name: String, status: stat) {
        if DiskFiles.remove(entryPath(name), ifStill: status) {
            let (key, digest) = DiskIndex.key(of: name)
            index.remove(key, name: digest)
        }
    }

    static func decodeInfo(_ bytes: [UInt8]) -> CacheEntryInfo? {
        bytes.withUnsafeBytes { CacheEntryInfo(encoded: $0) }
    }

    /// Writes a new entry (new generation) over file `name`, then its row. When the bytes
    /// cannot be stored (over the cap, a URL too long, a failed write), the old entry is
    /// removed all the same: it no longer holds the URL's current bytes. When the row cannot
    /// be written, the file is removed too: nothing unindexed is left to count against nothing.
    func write(_ data: Data, info: CacheEntryInfo, url: URL, name: String) {
        guard data.count <= sizeLimit else { return remove(url: url, name: name) }
        let generation = UInt64.random(in: 1...UInt64.max)
        let header = DiskCacheEntry(kind: .entry, generation: generation, url: url.absoluteString, info: info,
                                     bodyLength: UInt64(data.count), bodyCRC: CRC32.checksum(data))
        guard let headerBytes = header.encoded(), let infoBytes = info.encoded() else { return remove(url: url, name: name) }
        guard let size = writeFile(name: name, parts: [Data(headerBytes), data]) else { return remove(url: url, name: name) }
        let (key, digest) = DiskIndex.key(of: name)
        let row = DiskIndex.Row(key: key, name: digest, generation: generation, size: size, lastUse: index.tick(), info: infoBytes)
        guard let totals = index.store(row) else {
            if index.isOpen { unlink(entryPath(name)) }
            return
        }
        let passDue: Bool = {
            if totals.size > sizeLimit || totals.count > countLimit { return true }
            // With an age limit, also when a tenth of it has passed since the last pass began:
            // in a long-running process no entry outlives the limit by more than that.
            guard let maxUnusedAge else { return false }
            return Date().timeIntervalSince1970 - maintenance.withLock({ $0.lastPassStart }) >= maxUnusedAge / 10
        }()
        if passDue { scheduleMaintenance() }
    }

    /// Writes file `name` atomically into its folder; the disk space it takes, or `nil`.
    func writeFile(name: String, parts: [Data]) -> Int? {
        guard writeFolder(for: name) else { return nil }
        return DiskFiles.writeAtomically(directory: folderPath(name), name: name, parts: parts, sync: syncsWrites)
    }

    /// Makes sure entry `name`'s folder is a directory, making it if needed and replacing
    /// anything else under its name (a symlink there is never followed out of the cache).
    func writeFolder(for name: String) -> Bool {
        let folder = folderPath(name)
        if isFolder(folder) { return true }
        guard mkdir(folder, 0o755) == 0 || errno == EEXIST else { return false }
        var status = stat()
        return lstat(folder, &status) == 0 && status.st_mode & S_IFMT == S_IFDIR
    }

    /// Whether `folder` is a real directory, checked before any path through it is opened,
    /// listed or unlinked: a symlink there (planted, or a folder moved away) would lead reads
    /// and removals out of the cache, as `O_NOFOLLOW` guards the last component only. Anything
    /// but a directory there is removed, as at an entry's path, and `false` returned.
    func isFolder(_ folder: String) -> Bool {
        var status = stat()
        guard lstat(folder, &status) == 0 else { return false }
        if status.st_mode & S_IFMT == S_IFDIR { return true }
        DiskFiles.remove(folder, ifStill: status)
        return false
    }

    /// Replaces the info in the row of `url`'s entry; the file is not touched. As RFC 9111
    /// §4.3.4 selects stored responses for a 304 by validator, nothing is written when `info`'s
    /// ETag (or, without ETags, Last-Modified) differs from the stored one: the entry was
    /// replaced by other bytes since it was read.
    func writeInfo(_ info: CacheEntryInfo, url: URL, name: String) {
        let (key, digest) = DiskIndex.key(of: name)
        guard let row = index.row(key), row.name == digest, let bytes = info.encoded(),
              case .opened(let entry) = openEntry(url: url, name: name), entry.header.generation == row.generation
        else { return }
        _ = index.updateInfo(key, name: digest, generation: row.generation, to: bytes) { storedBytes in
            guard let stored = Self.decodeInfo(storedBytes) else { return true }
            if let new = info.etag, let old = stored.etag { return new == old }
            if info.etag == nil, stored.etag == nil, let new = info.lastModified, let old = stored.lastModified {
                return new == old
            }
            return true
        }
    }

    /// Removes file `name` and its row if the entry is `url`'s (or unreadable).
    func remove(url: URL, name: String) {
        if case .otherURL = openEntry(url: url, name: name) { return }  // another URL's entry under a colliding name
        unlink(entryPath(name))
        let (key, digest) = DiskIndex.key(of: name)
        index.remove(key, name: digest)
    }
}
