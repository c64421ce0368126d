import CacheDisk
import Foundation
import PipelineCore
import PipelineTestSupport
import Testing

/// Something other than a regular file, put where the cache keeps one of its own files.
enum OddNode: String, CaseIterable, Sendable, CustomTestStringConvertible {
    /// A named pipe: `open(O_RDONLY)` on it waits for a writer, forever.
    case fifo
    /// A symlink to a sound-looking file outside the cache directory.
    case symlinkToFile
    /// A symlink to a path that does not exist (an `O_CREAT` open would create it).
    case danglingSymlink
    /// A symlink to an endless device.
    case symlinkToDevZero
    case emptyDirectory
    /// A directory with a file, a subdirectory and a symlink to a directory outside.
    case directory
    /// A bound Unix domain socket.
    case socket

    var testDescription: String { rawValue }

    /// Makes the node at `path`; what it points to lives in `outside`.
    func make(at path: String, outside: Outside) throws {
        switch self {
        case .fifo: try check(mkfifo(path, 0o644), "mkfifo")
        case .symlinkToFile: try check(symlink(outside.target, path), "symlink")
        case .danglingSymlink: try check(symlink(outside.missing, path), "symlink")
        case .symlinkToDevZero: try check(symlink("/dev/zero", path), "symlink")
        case .emptyDirectory: try check(mkdir(path, 0o755), "mkdir")
        case .directory:
            try check(mkdir(path, 0o755), "mkdir")
            try check(mkdir(path + "/sub", 0o755), "mkdir")
            try Data("inside".utf8).write(to: URL(fileURLWithPath: path + "/sub/file"))
            try check(symlink(outside.keep, path + "/link"), "symlink")
        case .socket: try makeSocket(at: path)
        }
    }

    /// Binds a Unix socket at a short path (`sun_path` holds 108 bytes), then renames it into place.
    private func makeSocket(at path: String) throws {
        let short = FileManager.default.temporaryDirectory.path + "/s" + String(UInt32.random(in: 0...UInt32.max), radix: 36)
        let fd = Glibc.socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        try check(fd, "socket")
        defer { close(fd) }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(short.utf8)
        guard bytes.count < MemoryLayout.size(ofValue: address.sun_path) else { throw NodeError(call: "socket path") }
        withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: bytes) }
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        try check(bound, "bind")
        try check(rename(short, path), "rename")
    }

    private func check(_ result: Int32, _ call: String) throws {
        if result < 0 { throw NodeError(call: call + ": errno \(errno)") }
    }
}

struct NodeError: Error {
    let call: String
}

/// Files outside the cache directory that odd nodes point to; none may be touched.
struct Outside {
    let directory: TemporaryDirectory
    /// The content of ``target``.
    let targetBytes: Data

    var target: String { directory.url.path + "/target" }
    var missing: String { directory.url.path + "/missing" }
    var keep: String { directory.url.path + "/keep" }

    /// Outside files, `target` holding `targetBytes` (a file a symlink in the cache points to).
    init(targetBytes: Data) throws {
        directory = try TemporaryDirectory()
        self.targetBytes = targetBytes
        try targetBytes.write(to: URL(fileURLWithPath: target))
        try FileManager.default.createDirectory(atPath: keep, withIntermediateDirectories: true)
        try Data("precious".utf8).write(to: URL(fileURLWithPath: keep + "/precious"))
    }

    /// Whether everything outside is as it was: the target's bytes, the kept directory, and
    /// no file created at the dangling symlink's target.
    var isUntouched: Bool {
        FileManager.default.contents(atPath: target) == targetBytes
            && FileManager.default.contents(atPath: keep + "/precious") == Data("precious".utf8)
            && !exists(missing)
    }

    func remove() { directory.remove() }
}

/// Whether anything (even a dangling symlink) is at `path`.
func exists(_ path: String) -> Bool {
    var status = stat()
    return lstat(path, &status) == 0
}

/// Whether `path` is a regular file (not following a symlink).
func isRegularFile(_ path: String) -> Bool {
    var status = stat()
    return lstat(path, &status) == 0 && status.st_mode & S_IFMT == S_IFREG
}

/// If `path` is a FIFO, opens and closes its write end: a thread blocked opening it for reading
/// (a hang the test has already reported) gets end-of-file and moves on.
func releaseFIFO(_ path: String) {
    var status = stat()
    guard lstat(path, &status) == 0, status.st_mode & S_IFMT == S_IFIFO else { return }
    let fd = open(path, O_WRONLY | O_NONBLOCK | O_CLOEXEC)
    if fd >= 0 { close(fd) }
}

/// The bytes of a sound entry file for `url` with `body`, written by a cache elsewhere.
func soundEntryFile(for url: URL, body: Data) async throws -> Data {
    let elsewhere = try TemporaryDirectory()
    defer { elsewhere.remove() }
    await (try makeCache(elsewhere)).storeData(body, info: CacheEntryInfo(freshUntil: .distantFuture), for: url)
    return try Data(contentsOf: URL(fileURLWithPath: elsewhere.entryPath(url)))
}

@Suite("Disk cache: something other than a regular file at one of its paths", .timeLimit(.minutes(3)))
struct DiskCacheOddNodeTests {
    static let url = URL(string: "test://host/odd")!

    /// Every call that opens an entry file answers at once with a miss and removes the node; a
    /// symlink to a sound entry elsewhere is not served. Then the path stores and reads again.
    @Test(arguments: OddNode.allCases)
    func anOddNodeAtAnEntryPathIsAMissAndIsRemoved(node: OddNode) async throws {
        let directory = try TemporaryDirectory()
        let outside = try Outside(targetBytes: try await soundEntryFile(for: Self.url, body: Data("elsewhere".utf8)))
        defer { directory.remove(); outside.remove() }
        let cache = try makeCache(directory)
        try await withDeadline { await cache.waitForMaintenance() }  // its first scan would remove the nodes too
        let url = Self.url, path = directory.entryPath(url)
        for call in ["cachedData", "updateInfo", "removeData"] {
            try node.make(at: path, outside: outside)
            defer { releaseFIFO(path) }
            let found = try await withDeadline { () -> CachedData? in
                switch call {
                case "cachedData": return await cache.cachedData(for: url)
                case "updateInfo": await cache.updateInfo(CacheEntryInfo(etag: "\"x\""), for: url)
                default: await cache.removeData(for: url)
                }
                return nil
            }
            #expect(found == nil, "\(call) served \(node)")
            #expect(!exists(path), "\(call) left \(node) in place")
            #expect(!exists(path + ".info"), "\(call) wrote a sidecar for \(node)")
            #expect(outside.isUntouched)
        }
        await cache.storeData(Data("body".utf8), info: CacheEntryInfo(), for: url)
        #expect(await cache.cachedData(for: url)?.data == Data("body".utf8))
    }

    /// A sidecar that is no regular file is ignored (the entry's own info is served) and removed,
    /// even a symlink to a sidecar that would apply; a later 304 writes a real one.
    @Test(arguments: OddNode.allCases)
    func anOddNodeAtASidecarPathIsIgnoredAndRemoved(node: OddNode) async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let cache = try makeCache(directory)
        try await withDeadline { await cache.waitForMaintenance() }
        let url = Self.url, body = Data("the body".utf8), sidecar = directory.entryPath(url) + ".info"
        let stored = CacheEntryInfo(etag: "\"v1\"")
        await cache.storeData(body, info: stored, for: url)
        // A sidecar for this very entry, moved outside: the symlink would make it apply.
        await cache.updateInfo(CacheEntryInfo(etag: "\"v1\"", freshUntil: .distantFuture), for: url)
        let outside = try Outside(targetBytes: try Data(contentsOf: URL(fileURLWithPath: sidecar)))
        defer { outside.remove() }
        unlink(sidecar)

        try node.make(at: sidecar, outside: outside)
        do {
            defer { releaseFIFO(sidecar) }
            let entry = try await withDeadline { await cache.cachedData(for: url) }
            #expect(entry?.data == body && entry?.info == stored)
            #expect(!exists(sidecar), "a read left \(node) in place")
        }

        try node.make(at: sidecar, outside: outside)
        defer { releaseFIFO(sidecar) }
        let refreshed = CacheEntryInfo(etag: "\"v1\"", freshUntil: Date(timeIntervalSince1970: 2_000_000_000))
        try await withDeadline { await cache.updateInfo(refreshed, for: url) }
        #expect(isRegularFile(sidecar))
        #expect(try await withDeadline { await cache.cachedData(for: url) }?.info == refreshed)
        #expect(outside.isUntouched)
    }

    /// A lock file that is no regular file is removed and made anew (never followed, never
    /// created outside), so eviction still runs under the lock.
    @Test(arguments: OddNode.allCases)
    func anOddNodeAtTheLockPathIsReplacedAndEvictionStillRuns(node: OddNode) async throws {
        let directory = try TemporaryDirectory()
        let outside = try Outside(targetBytes: Data("not a lock".utf8))
        defer { directory.remove(); outside.remove() }
        let lock = directory.url.path + "/.lock"
        try node.make(at: lock, outside: outside)
        defer { releaseFIFO(lock) }
        let cache = try makeCache(directory, sizeLimit: 4000, trimRatio: 0.5)
        try await withDeadline { await cache.waitForMaintenance() }
        for i in 0..<6 {
            await cache.storeData(Data(count: 1000), info: CacheEntryInfo(), for: URL(string: "test://lock/\(i)")!)
        }
        try await withDeadline { await cache.trim() }
        // 6 entries of about 1070 bytes: without the lock nothing is evicted and all 6 stay.
        #expect(directory.entryNames.count <= 3)
        #expect(try await withDeadline { await cache.totalSize } <= 4000)
        #expect(isRegularFile(lock))
        #expect(outside.isUntouched)
    }

    /// The background scan removes odd nodes under entry and sidecar names (beside a real entry
    /// or orphaned) and counts only real entries.
    @Test func aScanRemovesOddNodesUnderEntryAndSidecarNames() async throws {
        let directory = try TemporaryDirectory()
        let outside = try Outside(targetBytes: Data("outside".utf8))
        defer { directory.remove(); outside.remove() }
        let cache = try makeCache(directory)
        try await withDeadline { await cache.waitForMaintenance() }
        let url = Self.url, name = DiskCache.fileName(for: url)
        await cache.storeData(Data("kept".utf8), info: CacheEntryInfo(), for: url)
        var paths = [directory.entryPath(url) + ".info"]
        try OddNode.fifo.make(at: paths[0], outside: outside)
        for (i, node) in OddNode.allCases.enumerated() {
            let odd = directory.url.path + "/" + String(repeating: "0", count: 63) + String(i)
            try node.make(at: odd, outside: outside)
            try node.make(at: odd.replacingOccurrences(of: "/000", with: "/fff") + ".info", outside: outside)
            paths += [odd, odd.replacingOccurrences(of: "/000", with: "/fff") + ".info"]
        }
        defer { paths.forEach(releaseFIFO) }
        try await withDeadline { await cache.trim() }
        #expect(directory.entryNames == [name])
        #expect(try await withDeadline { await cache.entryCount } == 1)
        #expect(try await withDeadline { await cache.cachedData(for: url) }?.data == Data("kept".utf8))
        #expect(outside.isUntouched)
    }
}
