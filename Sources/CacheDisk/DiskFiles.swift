import CDiskCacheShim
import PipelineCore

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

/// Blocking POSIX file operations for the disk cache. Every function here runs on the cache's
/// `WorkerPool` threads, never on an actor or the cooperative pool.
enum DiskFiles {
    /// An open file descriptor, closed when the value goes away.
    final class Descriptor {
        let fd: Int32

        init?(path: String, flags: Int32, mode: mode_t = 0o644) {
            let fd = open(path, flags | O_CLOEXEC, mode)
            guard fd >= 0 else { return nil }
            self.fd = fd
        }

        /// The `fstat` taken by ``DiskFiles/openRegular(_:flags:)``, so that callers do not repeat it.
        private var openedStatus: stat?

        /// Takes ownership of the open descriptor `fd`.
        init(fd: Int32) { self.fd = fd }

        deinit { close(fd) }

        /// The file's `stat` (the one taken at open by ``DiskFiles/openRegular(_:flags:)``), or `nil`.
        func status() -> stat? {
            if let openedStatus { return openedStatus }
            var status = stat()
            guard fstat(fd, &status) == 0 else { return nil }
            openedStatus = status
            return status
        }

        /// Whether reads may only take what the page cache holds (`preadv2` with `RWF_NOWAIT`):
        /// a read that would wait for the disk (or a file system that cannot tell) fails at once,
        /// and the caller retries on a thread that may wait.
        var noWait = false

        /// Fills `buffer` from `offset`; `false` on an error or a short file.
        func read(into buffer: UnsafeMutableRawBufferPointer, at offset: Int) -> Bool {
            guard let base = buffer.baseAddress else { return true }
            var done = 0
            while done < buffer.count {
                let n = noWait ? readNoWait(base + done, count: buffer.count - done, at: offset + done)
                    : pread(fd, base + done, buffer.count - done, off_t(offset + done))
                if n < 0 && errno == EINTR { continue }
                guard n > 0 else { return false }
                done += n
            }
            return true
        }

        private func readNoWait(_ base: UnsafeMutableRawPointer, count: Int, at offset: Int) -> Int {
            cachedisk_pread_nowait(fd, base, UInt(count), Int64(offset))
        }

        /// `count` bytes from `offset`, or `nil`.
        func read(count: Int, at offset: Int) -> [UInt8]? {
            var bytes = [UInt8](repeating: 0, count: count)
            let ok = count == 0 || bytes.withUnsafeMutableBytes { read(into: $0, at: offset) }
            return ok ? bytes : nil
        }

        /// Writes all of `bytes`; `false` on an error.
        func write(_ bytes: UnsafeRawBufferPointer) -> Bool {
            writeAll(bytes, to: fd) == nil
        }
    }

    /// Writes `parts` to `directory/name` atomically: a new temporary file in the same directory
    /// (so the rename cannot cross file systems), optionally `fsync`ed, then renamed over the
    /// old file. A reader sees the old file or the new one, never a mix; a crash leaves at most a
    /// stray temporary file, which ``isStaleTemporary(_:status:now:)`` lets the sweep remove.
    /// Returns the disk space the new file takes (``allocatedSize(_:)`` of its `fstat` once
    /// written), or `nil` when the write failed (nothing is left behind).
    static func writeAtomically(directory: String, name: String, parts: [Data], sync: Bool) -> Int? {
        let temporary = directory + "/" + temporaryPrefix + name + "." + String(UInt64.random(in: 0...UInt64.max), radix: 36)
        guard let file = Descriptor(path: temporary, flags: O_WRONLY | O_CREAT | O_EXCL) else { return nil }
        var ok = true
        var size = 0
        for part in parts where ok {
            ok = part.withUnsafeBytes { file.write($0) }
            size += part.count
        }
        if ok && sync { ok = fsync(file.fd) == 0 }
        var status = stat()
        let allocated = ok && fstat(file.fd, &status) == 0 ? allocatedSize(status) : size
        if ok { ok = rename(temporary, directory + "/" + name) == 0 }
        if !ok { unlink(temporary) }
        return ok ? max(allocated, size) : nil
    }

    /// The disk space a file takes: its allocated blocks (`st_blocks`, in 512-byte units on
    /// Linux whatever the file system's block size), but never less than its length (a file
    /// system that keeps small files inside the inode reports no blocks for them). This is
    /// what the size cap counts: a 200-byte entry on a file system of 4 KiB blocks takes
    /// 4 KiB. Taken from a `stat` the cache makes anyway (the sweep's `lstat`, a read's
    /// `fstat`), plus one `fstat` per write; rounding lengths up to `statvfs`'s block size
    /// instead would miss indirect blocks and get inline or compressed files wrong. Delayed
    /// allocation (ext4, XFS, btrfs) already counts in `st_blocks` before the data reaches
    /// the disk.
    static func allocatedSize(_ status: stat) -> Int {
        max(Int(status.st_blocks) * 512, Int(status.st_size))
    }

    /// The prefix of temporary files.
    static let temporaryPrefix = ".tmp."
    /// How old a temporary file must be before the sweep treats it as left by a crash, in seconds.
    static let temporaryLifetime: TimeInterval = 600

    /// Whether `name` is a temporary file old enough to be a crash's leftover.
    static func isStaleTemporary(_ name: String, status: stat, now: Date) -> Bool {
        name.hasPrefix(temporaryPrefix) && now.timeIntervalSince1970 - modificationTime(status) > temporaryLifetime
    }

    /// Removes `path` only if it is still the node `status` describes (same device and inode, by
    /// `lstat`): a damaged entry is deleted without racing away a good one another writer just
    /// renamed in. A symlink is removed, not its target; a directory goes with its contents
    /// (Foundation removes a tree without following symlinks or entering other file systems).
    /// Returns whether it removed it.
    @discardableResult
    static func remove(_ path: String, ifStill status: stat) -> Bool {
        var current = stat()
        guard lstat(path, &current) == 0, current.st_ino == status.st_ino, current.st_dev == status.st_dev else { return false }
        if current.st_mode & S_IFMT == S_IFDIR {
            return rmdir(path) == 0 || (try? FileManager.default.removeItem(atPath: path)) != nil
        }
        return unlink(path) == 0
    }

    /// Opens `path` only if it is a regular file, as every file the cache writes is. The open
    /// never follows a symlink (`O_NOFOLLOW`) and never waits (`O_NONBLOCK`: a FIFO opens at once
    /// instead of blocking until a writer comes; `O_NOCTTY`: a terminal does not become the
    /// controlling one); then `fstat` checks the type. Anything else at `path` (a symlink, FIFO,
    /// socket, device or directory: damage, or planted) is removed and `nil` returned, as when
    /// nothing is there. `O_NONBLOCK` changes nothing for reads of a regular file.
    static func openRegular(_ path: String, flags: Int32) -> Descriptor? {
        let fd = open(path, flags | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY, 0o644)
        guard fd >= 0 else {
            let error = errno
            // ENOENT: nothing there. ELOOP: a symlink; ENXIO: a socket; EISDIR: a directory
            // opened for writing; other errors may come from a device.
            var status = stat()
            if error != ENOENT, lstat(path, &status) == 0, status.st_mode & S_IFMT != S_IFREG {
                remove(path, ifStill: status)
            }
            return nil
        }
        let file = Descriptor(fd: fd)
        guard let status = file.status() else { return nil }
        guard status.st_mode & S_IFMT == S_IFREG else {
            remove(path, ifStill: status)
            return nil
        }
        return file
    }

    /// `st_mtim` in seconds since 1970.
    static func modificationTime(_ status: stat) -> TimeInterval {
        TimeInterval(status.st_mtim.tv_sec) + TimeInterval(status.st_mtim.tv_nsec) / 1e9
    }

    /// The names in `directory` (without `.` and `..`), or `nil` when it cannot be read.
    static func names(in directory: String) -> [String]? {
        guard let dir = opendir(directory) else { return nil }
        defer { closedir(dir) }
        var names: [String] = []
        while let entry = readdir(dir) {
            let name = withUnsafePointer(to: &entry.pointee.d_name) {
                $0.withMemoryRebound(to: CChar.self, capacity: 256) { String(cString: $0) }
            }
            if name != "." && name != ".." { names.append(name) }
        }
        return names
    }

    /// `lstat` of `name` in `directory`.
    static func status(of name: String, in directory: String) -> stat? {
        var status = stat()
        return lstat(directory + "/" + name, &status) == 0 ? status : nil
    }

    /// Whether `name` is an entry file name: 64 lower-case hex digits.
    static func isEntryName<S: StringProtocol>(_ name: S) -> Bool {
        name.utf8.count == 64 && name.utf8.allSatisfy { ($0 >= 0x30 && $0 <= 0x39) || ($0 >= 0x61 && $0 <= 0x66) }
    }

    /// The suffix of the flat layout's info sidecars (read once by the migration).
    static let infoSuffix = ".info"
}
