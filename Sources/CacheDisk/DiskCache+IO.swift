import Foundation
import PipelineCore
import Synchronization

// Reading and writing single entries. Every function here blocks and runs on `pool`.
extension DiskCache {
    func entryPath(_ name: String) -> String { path + "/" + name }
    func infoPath(_ name: String) -> String { path + "/" + name + DiskFiles.infoSuffix }

    /// The largest entry file a read accepts: bigger ones cannot have been written under this
    /// cap (or are hostile) and are removed before anything is allocated.
    var maxEntryFileSize: Int { sizeLimit + DiskCacheEntry.maxLength }

    /// Reads `url`'s entry from file `name`: header checks, URL check, body length and CRC,
    /// then the sidecar's info if it applies. A damaged file, or anything but a regular file
    /// (``DiskFiles/openRegular(_:flags:)``), is removed; another URL's entry (a name collision)
    /// is left alone.
    func read(url: URL, name: String) -> CachedData? {
        guard let entry = openEntry(url: url, name: name) else { return nil }
        var body = Data(count: Int(entry.header.bodyLength))
        let ok = body.isEmpty || body.withUnsafeMutableBytes { entry.file.read(into: $0, at: entry.headerLength) }
        guard ok, CRC32.checksum(body) == entry.header.bodyCRC else {
            removeDamaged(name, status: entry.status)
            return nil
        }
        return CachedData(data: body, info: recordHit(entry, name: name))
    }

    /// The digest of `url`'s entry in file `name` from its header (and sidecar) alone: the body
    /// is neither read nor checked (a torn body is found by the next full ``read(url:name:)``).
    /// Counts as an access for LRU order, like a read. A header that does not match the file's
    /// length is damage: the file is removed, as by a read.
    func readDigest(url: URL, name: String) -> CachedDigest? {
        guard let entry = openEntry(url: url, name: name) else { return nil }
        let info = recordHit(entry, name: name)
        return CachedDigest(length: Int(entry.header.bodyLength), crc32: entry.header.bodyCRC, info: info)
    }

    /// An entry file opened for reading, with its header checked against the file's size.
    private struct OpenedEntry {
        let file: DiskFiles.Descriptor
        let status: stat
        let header: DiskCacheEntry
        let headerLength: Int
    }

    /// Opens file `name` when it holds `url`'s entry with a sound header. A damaged file is
    /// removed (as anything but a regular file is by the open); another URL's entry (a name
    /// collision) is left alone. `nil` in every such case.
    private func openEntry(url: URL, name: String) -> OpenedEntry? {
        guard let file = DiskFiles.openRegular(entryPath(name), flags: O_RDONLY) else { return nil }
        guard let status = file.status(), status.st_mode & S_IFMT == S_IFREG else { return nil }
        let fileSize = Int(status.st_size)
        guard fileSize <= maxEntryFileSize, let header = DiskCacheEntry.read(from: file, kind: .entry, fileSize: fileSize),
              UInt64(fileSize - header.length) == header.value.bodyLength else {
            removeDamaged(name, status: status)
            return nil
        }
        guard header.value.url == url.absoluteString else { return nil }  // a collision: not ours
        return OpenedEntry(file: file, status: status, header: header.value, headerLength: header.length)
    }

    /// Records a hit on `entry` for LRU order (writing its mtime when due) and returns its
    /// current info: the sidecar's if one applies, else the header's.
    private func recordHit(_ entry: OpenedEntry, name: String) -> CacheEntryInfo {
        var info = entry.header.info
        let sidecar = readInfo(name)
        if let sidecar, sidecar.header.applies(to: entry.header) { info = sidecar.header.info }
        let persist = index.withLock {
            $0.recordAccess(name, size: DiskFiles.allocatedSize(entry.status), sidecarSize: sidecar?.size ?? 0,
                            modified: DiskFiles.modificationTime(entry.status), persistInterval: accessPersistInterval)
        }
        if persist { futimens(entry.file.fd, nil) }  // the last access, for LRU order after a restart
        return info
    }

    /// Removes damaged entry file `name` if it is still the file `status` describes, and forgets
    /// it in the index (else its bytes would count against the cap until the next scan).
    private func removeDamaged(_ name: String, status: stat) {
        if DiskFiles.remove(entryPath(name), ifStill: status) {
            index.withLock { $0.recordRemoval(name) }
        }
    }

    /// The sidecar of entry `name` and the disk space it takes, if there is a sound one (a
    /// regular file: anything else is removed).
    func readInfo(_ name: String) -> (header: DiskCacheEntry, size: Int)? {
        guard let file = DiskFiles.openRegular(infoPath(name), flags: O_RDONLY),
              let status = file.status(), Int(status.st_size) <= DiskCacheEntry.maxLength,
              let header = DiskCacheEntry.read(from: file, kind: .info, fileSize: Int(status.st_size)),
              header.length == Int(status.st_size) else { return nil }
        return (header.value, DiskFiles.allocatedSize(status))
    }

    /// Writes a new entry (new generation) over file `name`. An old sidecar is removed first;
    /// even if it survived (a crash, a racing `updateInfo`), its generation no longer matches.
    /// When the bytes cannot be stored (over the cap, a URL too long, a failed write), the old
    /// entry is removed all the same: it no longer holds the URL's current bytes.
    func write(_ data: Data, info: CacheEntryInfo, url: URL, name: String) {
        guard data.count <= sizeLimit else { return remove(url: url, name: name) }
        let header = DiskCacheEntry(kind: .entry, generation: UInt64.random(in: 1...UInt64.max), url: url.absoluteString,
                                     info: info, bodyLength: UInt64(data.count), bodyCRC: CRC32.checksum(data))
        guard let headerBytes = header.encoded() else { return remove(url: url, name: name) }
        unlink(infoPath(name))
        guard let size = DiskFiles.writeAtomically(directory: path, name: name, parts: [Data(headerBytes), data],
                                                   sync: syncsWrites) else { return remove(url: url, name: name) }
        let passDue = index.withLock { index -> Bool in
            index.recordWrite(name, size: size)
            guard index.isLoaded else { return false }
            if index.totalSize > sizeLimit || index.records.count > countLimit { return true }
            // With an age limit, also when a tenth of it has passed since the last pass began:
            // in a long-running process no entry outlives the limit by more than that.
            guard let maxUnusedAge else { return false }
            return Date().timeIntervalSince1970 - index.lastScanStart >= maxUnusedAge / 10
        }
        if passDue { scheduleMaintenance() }
    }

    /// Writes the sidecar for `url`'s entry with `info`, bound to the entry's current generation.
    /// As RFC 9111 §4.3.4 selects stored responses for a 304 by validator, nothing is written
    /// when `info`'s ETag (or, without ETags, Last-Modified) differs from the stored one: the
    /// entry was replaced by other bytes since it was read.
    func writeInfo(_ info: CacheEntryInfo, url: URL, name: String) {
        guard let file = DiskFiles.openRegular(entryPath(name), flags: O_RDONLY),
              let status = file.status(),
              let header = DiskCacheEntry.read(from: file, kind: .entry, fileSize: Int(status.st_size))?.value,
              header.url == url.absoluteString else { return }
        var stored = header.info
        if let sidecar = readInfo(name)?.header, sidecar.applies(to: header) { stored = sidecar.info }
        if let new = info.etag, let old = stored.etag {
            guard new == old else { return }
        } else if info.etag == nil, stored.etag == nil, let new = info.lastModified, let old = stored.lastModified {
            guard new == old else { return }
        }
        var sidecar = header
        sidecar.kind = .info
        sidecar.info = info
        guard let bytes = sidecar.encoded(),
              let size = DiskFiles.writeAtomically(directory: path, name: name + DiskFiles.infoSuffix, parts: [Data(bytes)],
                                                   sync: syncsWrites) else { return }
        index.withLock { $0.recordSidecar(name, size: size) }
    }

    /// Removes file `name` and its sidecar if the entry is `url`'s (or unreadable).
    func remove(url: URL, name: String) {
        if let file = DiskFiles.openRegular(entryPath(name), flags: O_RDONLY), let status = file.status(),
           let header = DiskCacheEntry.read(from: file, kind: .entry, fileSize: Int(status.st_size))?.value,
           header.url != url.absoluteString {
            return  // another URL's entry under a colliding name
        }
        unlink(entryPath(name))
        unlink(infoPath(name))
        index.withLock { $0.recordRemoval(name) }
    }
}
