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
    /// A symlink to a directory outside (one with files in it).
    case symlinkToDirectory
    case emptyDirectory
    /// A directory with a file, a subdirectory and a symlink to a directory outside.
    case directory
    /// A bound Unix domain socket.
    case socket

    var testDescription: String { rawValue }

    /// Whether the node is a real directory (which is what belongs at a folder's path).
    var isDirectory: Bool { self == .emptyDirectory || self == .directory }

    /// Makes the node at `path`; what it points to lives in `outside`.
    func make(at path: String, outside: Outside) throws {
        switch self {
        case .fifo: try check(mkfifo(path, 0o644), "mkfifo")
        case .symlinkToFile: try check(symlink(outside.target, path), "symlink")
        case .danglingSymlink: try check(symlink(outside.missing, path), "symlink")
        case .symlinkToDevZero: try check(symlink("/dev/zero", path), "symlink")
        case .symlinkToDirectory: try check(symlink(outside.keep, path), "symlink")
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

/// What the tree at `root` holds, never following a symlink: each path under it with a regular
/// file's bytes, a symlink's destination, or the type of anything else. Equal snapshots: nothing
/// in the tree was written, removed or added.
func snapshot(of root: String) -> [String: String] {
    var tree: [String: String] = [:]
    for name in (try? FileManager.default.contentsOfDirectory(atPath: root)) ?? [] {
        let path = root + "/" + name
        var status = stat()
        guard lstat(path, &status) == 0 else { continue }
        switch status.st_mode & S_IFMT {
        case S_IFREG: tree[path] = "file " + ((FileManager.default.contents(atPath: path)?.base64EncodedString()) ?? "?")
        case S_IFLNK: tree[path] = "link " + ((try? FileManager.default.destinationOfSymbolicLink(atPath: path)) ?? "?")
        case S_IFDIR:
            tree[path] = "directory"
            tree.merge(snapshot(of: path)) { old, _ in old }
        default: tree[path] = "mode \(status.st_mode & S_IFMT)"
        }
    }
    return tree
}

/// Sets the modification time of `path` (never following a symlink) `age` seconds back.
func age(_ path: String, by age: TimeInterval) {
    let time = timespec(tv_sec: Int(Date().timeIntervalSince1970 - age), tv_nsec: 0)
    _ = utimensat(AT_FDCWD, path, [time, time], AT_SYMLINK_NOFOLLOW)
}

/// A call that reaches an entry's path: a lookup, a 304, a removal, or maintenance.
enum EntryCall: String, CaseIterable, Sendable, CustomTestStringConvertible {
    case cachedData, cachedDigest, updateInfo, removeData, removeAll
    /// A pass of another instance under which every row is past its age (`maxUnusedAge` 0).
    case evict
    /// 256 maintenance passes: the sweep, one folder per pass, visits every folder once.
    case sweep

    var testDescription: String { rawValue }

    /// The ETag the tests store, which a 304 must name to be applied.
    static let etag = "\"e\""

    /// Makes the call for `url` on `cache` (on `directory`); whether it served anything.
    func run(on cache: DiskCache, in directory: TemporaryDirectory, for url: URL) async throws -> Bool {
        switch self {
        case .cachedData: return await cache.cachedData(for: url) != nil
        case .cachedDigest: return await cache.cachedDigest(for: url) != nil
        case .updateInfo: await cache.updateInfo(CacheEntryInfo(etag: Self.etag, freshUntil: .distantFuture), for: url)
        case .removeData: await cache.removeData(for: url)
        case .removeAll: await cache.removeAll()
        case .evict: await (try makeCache(directory, maxUnusedAge: 0)).trim()
        case .sweep: for _ in 0..<256 { await cache.trim() }
        }
        return false
    }
}

@Suite("Disk cache: something other than a regular file at one of its paths", .timeLimit(.minutes(3)))
struct DiskCacheOddNodeTests {
    static let url = URL(string: "test://host/odd")!

    /// An indexed entry's file replaced by the node: every call that opens it answers at once
    /// with a miss and removes the node, writing nothing in its place; a symlink to a sound
    /// entry elsewhere is not served. Without a row, a lookup does not open the path at all
    /// (the node stays, a FIFO is not waited on); a store replaces the node, never writing
    /// through it.
    @Test(arguments: OddNode.allCases)
    func anOddNodeAtAnEntryPathIsAMissAndIsRemoved(node: OddNode) async throws {
        let directory = try TemporaryDirectory()
        let outside = try Outside(targetBytes: try await soundEntryFile(for: Self.url, body: Data("elsewhere".utf8)))
        defer { directory.remove(); outside.remove() }
        let cache = try makeCache(directory)
        try await withDeadline { await cache.waitForMaintenance() }  // the index is built: no row, no file read
        let url = Self.url, path = directory.entryPath(url), body = Data("body".utf8)
        for call in EntryCall.allCases {
            await cache.storeData(body, info: CacheEntryInfo(etag: EntryCall.etag), for: url)
            unlink(path)
            try node.make(at: path, outside: outside)
            defer { releaseFIFO(path) }
            let served = try await withDeadline { try await call.run(on: cache, in: directory, for: url) }
            #expect(!served, "\(call) served \(node)")
            #expect(!exists(path), "\(call) left \(node) in place")
            #expect(directory.entryFolderFiles.isEmpty, "\(call) wrote a file for \(node)")
            #expect(outside.isUntouched)
        }

        let unindexed = URL(string: "test://host/unindexed")!, other = directory.entryPath(unindexed)
        try FileManager.default.createDirectory(atPath: (other as NSString).deletingLastPathComponent,
                                                withIntermediateDirectories: true)
        try node.make(at: other, outside: outside)
        defer { releaseFIFO(other) }
        #expect(try await withDeadline { await cache.cachedData(for: unindexed) } == nil)
        #expect(try await withDeadline { await cache.cachedDigest(for: unindexed) } == nil)
        try await withDeadline { await cache.updateInfo(CacheEntryInfo(etag: "\"x\""), for: unindexed) }
        #expect(exists(other), "a lookup without a row opened \(node)")
        // A rename cannot replace a directory: that store removes it and stores nothing.
        try await withDeadline { await cache.storeData(Data("new".utf8), info: CacheEntryInfo(), for: unindexed) }
        #expect(isRegularFile(other) || (node.isDirectory && !exists(other)), "a store left \(node) in place")
        #expect(outside.isUntouched)
        await cache.storeData(Data("new".utf8), info: CacheEntryInfo(), for: unindexed)
        #expect(await cache.cachedData(for: unindexed)?.data == Data("new".utf8))
        await cache.storeData(body, info: CacheEntryInfo(), for: url)
        #expect(await cache.cachedData(for: url)?.data == body)
        #expect(outside.isUntouched)
    }

    /// Something other than a directory at an entry folder's path (`<dir>/<xx>`), where a
    /// symlink leads to a directory holding a sound entry for the URL under its name: planted
    /// before the cache first opens, the rebuild does not index through it; planted again
    /// under an indexed entry, no call reads or writes through it. A store replaces it with a
    /// real directory.
    @Test(arguments: OddNode.allCases.filter { !$0.isDirectory })
    func anOddNodeAtAFolderPathIsNeverFollowed(node: OddNode) async throws {
        let directory = try TemporaryDirectory()
        let url = Self.url, name = DiskCache.fileName(for: url)
        let outside = try Outside(targetBytes: try await soundEntryFile(for: url, body: Data("elsewhere".utf8)))
        defer { directory.remove(); outside.remove() }
        try outside.targetBytes.write(to: URL(fileURLWithPath: outside.keep + "/" + name))
        let before = snapshot(of: outside.directory.url.path)
        let folder = directory.url.path + "/" + name.prefix(2)
        try node.make(at: folder, outside: outside)
        defer { releaseFIFO(folder) }
        let cache = try await withDeadline { try makeCache(directory) }
        try await withDeadline { await cache.waitForMaintenance() }
        #expect(try await withDeadline { await cache.cachedData(for: url) } == nil, "the rebuild indexed through \(node)")
        #expect(await cache.entryCount == 0)
        #expect(snapshot(of: outside.directory.url.path) == before)

        let body = Data("inside".utf8)
        await cache.storeData(body, info: CacheEntryInfo(etag: "\"i\""), for: url)
        var status = stat()
        #expect(lstat(folder, &status) == 0 && status.st_mode & S_IFMT == S_IFDIR, "a store kept \(node)")
        #expect(isRegularFile(directory.entryPath(url)))
        #expect(await cache.cachedData(for: url)?.data == body)
        #expect(snapshot(of: outside.directory.url.path) == before)

        for call in EntryCall.allCases {
            await cache.storeData(body, info: CacheEntryInfo(etag: EntryCall.etag), for: url)
            try FileManager.default.removeItem(atPath: folder)
            try node.make(at: folder, outside: outside)
            let served = try await withDeadline { try await call.run(on: cache, in: directory, for: url) }
            releaseFIFO(folder)
            #expect(!served, "\(call) served through \(node)")
            #expect(snapshot(of: outside.directory.url.path) == before, "\(call) wrote through \(node)")
        }
        await cache.storeData(body, info: CacheEntryInfo(), for: url)
        #expect(await cache.cachedData(for: url)?.data == body)
        #expect(snapshot(of: outside.directory.url.path) == before)
    }

    /// An entry's folder moved out of the cache whole and a symlink left in its place (the
    /// files behind it are the cache's own, with the generations the index names, beside what
    /// a sweep would remove: a file without a row past the sweep's grace, a FIFO under an entry
    /// name, a stale temporary file). No lookup serves through it, and no 304, removal,
    /// eviction, sweep or `removeAll` changes anything behind it.
    @Test func aFolderSymlinkedOutOfTheCacheIsNeverReadOrWrittenThrough() async throws {
        let directory = try TemporaryDirectory(), outside = try TemporaryDirectory()
        defer { directory.remove(); outside.remove() }
        let cache = try makeCache(directory)
        try await withDeadline { await cache.waitForMaintenance() }
        let url = Self.url, name = DiskCache.fileName(for: url), folder = directory.url.path + "/" + name.prefix(2)
        let body = Data("moved".utf8)
        for (round, call) in EntryCall.allCases.enumerated() {
            await cache.storeData(body, info: CacheEntryInfo(etag: EntryCall.etag), for: url)
            let moved = outside.url.path + "/moved\(round)"
            #expect(rename(folder, moved) == 0 && symlink(moved, folder) == 0)
            let orphan = moved + "/" + name.prefix(2) + String(repeating: "0", count: 62)
            let fifo = moved + "/" + name.prefix(2) + String(repeating: "1", count: 62)
            let temporary = moved + "/.tmp." + name + ".x"
            try Data("orphan".utf8).write(to: URL(fileURLWithPath: orphan))
            try Data("temporary".utf8).write(to: URL(fileURLWithPath: temporary))
            #expect(mkfifo(fifo, 0o644) == 0)
            defer { releaseFIFO(fifo) }
            for path in [orphan, temporary, fifo] { age(path, by: 86_400) }
            let before = snapshot(of: moved)
            let served = try await withDeadline { try await call.run(on: cache, in: directory, for: url) }
            #expect(!served, "\(call) served through the symlink")
            #expect(snapshot(of: moved) == before, "\(call) changed the files behind the symlink")
        }
        await cache.storeData(body, info: CacheEntryInfo(), for: url)
        #expect(await cache.cachedData(for: url)?.data == body)
    }

    /// A node at the index's paths (`index.sqlite`, `-wal`, `-shm`) is removed before the
    /// database opens (a symlink is never followed, a FIFO never waited on), so a real database
    /// is made: it is rebuilt from the entry file already there, drives eviction and is shared
    /// with another instance.
    @Test(arguments: OddNode.allCases, ["", "-wal", "-shm"])
    func anOddNodeAtAnIndexPathIsRemovedBeforeOpening(node: OddNode, suffix: String) async throws {
        let directory = try TemporaryDirectory()
        let outside = try Outside(targetBytes: Data("not a database".utf8))
        defer { directory.remove(); outside.remove() }
        let kept = URL(string: "test://index/kept")!, keptBody = Data("kept".utf8)
        let keptPath = directory.entryPath(kept)
        try FileManager.default.createDirectory(atPath: (keptPath as NSString).deletingLastPathComponent,
                                                withIntermediateDirectories: true)
        try await soundEntryFile(for: kept, body: keptBody).write(to: URL(fileURLWithPath: keptPath))
        let database = directory.url.path + "/index.sqlite", path = database + suffix
        try node.make(at: path, outside: outside)
        defer { releaseFIFO(path) }
        let cache = try await withDeadline { try makeCache(directory, trimRatio: 0.5, countLimit: 4) }
        try await withDeadline { await cache.waitForMaintenance() }
        #expect(isRegularFile(database))
        #expect(!exists(path) || isRegularFile(path), "\(node) left at index.sqlite\(suffix)")
        #expect(outside.isUntouched)
        #expect(try await withDeadline { await cache.cachedData(for: kept) }?.data == keptBody)
        #expect(await cache.entryCount == 1)
        for i in 0..<6 {
            await cache.storeData(Data(count: 1000), info: CacheEntryInfo(), for: URL(string: "test://index/\(i)")!)
        }
        try await withDeadline { await cache.trim() }
        // 7 entries under a cap of 4: without a working index nothing is evicted.
        #expect(directory.entryNames.count <= 4)
        #expect(await cache.entryCount == directory.entryNames.count)
        let second = try makeCache(directory)
        #expect(await second.entryCount == directory.entryNames.count)
        #expect(outside.isUntouched)
    }

    /// Maintenance sweeps one folder per pass (a whole round in 256): nodes under entry names in
    /// a folder, beside a real entry, are removed without being followed, and only the real
    /// entry is counted.
    @Test func theSweepRemovesOddNodesUnderEntryNames() async throws {
        let directory = try TemporaryDirectory()
        let outside = try Outside(targetBytes: Data("outside".utf8))
        defer { directory.remove(); outside.remove() }
        let cache = try makeCache(directory)
        try await withDeadline { await cache.waitForMaintenance() }
        let url = Self.url, name = DiskCache.fileName(for: url)
        await cache.storeData(Data("kept".utf8), info: CacheEntryInfo(), for: url)
        let paths = OddNode.allCases.enumerated().map { i, _ in
            directory.entryPath(name: String(name.prefix(2)) + String(repeating: "0", count: 61) + String(i, radix: 16))
        }
        for (node, path) in zip(OddNode.allCases, paths) { try node.make(at: path, outside: outside) }
        defer { paths.forEach(releaseFIFO) }
        var passes = 0
        while paths.contains(where: exists) && passes < 256 {
            try await withDeadline { await cache.trim() }
            passes += 1
        }
        #expect(!paths.contains(where: exists), "left after \(passes) passes")
        #expect(directory.entryNames == [name])
        #expect(try await withDeadline { await cache.entryCount } == 1)
        #expect(try await withDeadline { await cache.cachedData(for: url) }?.data == Data("kept".utf8))
        #expect(outside.isUntouched)
    }

    /// Nodes where the flat layout kept its files (entries at `<dir>/<name>`, sidecars, the old
    /// `.lock`), found when the cache first opens the directory: the migration removes them all
    /// without following one, and a sound flat entry beside them moves into its folder.
    @Test func theMigrationRemovesOddNodesOfTheFlatLayout() async throws {
        let directory = try TemporaryDirectory()
        let outside = try Outside(targetBytes: Data("outside".utf8))
        defer { directory.remove(); outside.remove() }
        let url = Self.url, name = DiskCache.fileName(for: url), root = directory.url.path
        try await soundEntryFile(for: url, body: Data("flat".utf8)).write(to: URL(fileURLWithPath: root + "/" + name))
        var paths = [root + "/" + name + ".info"]
        try OddNode.fifo.make(at: paths[0], outside: outside)
        for (i, node) in OddNode.allCases.enumerated() {
            let odd = root + "/" + String(repeating: "0", count: 63) + String(i, radix: 16)
            let orphanSidecar = root + "/" + String(repeating: "f", count: 63) + String(i, radix: 16) + ".info"
            try node.make(at: odd, outside: outside)
            try node.make(at: orphanSidecar, outside: outside)
            paths += [odd, orphanSidecar]
        }
        try OddNode.directory.make(at: root + "/.lock", outside: outside)
        paths.append(root + "/.lock")
        defer { paths.forEach(releaseFIFO) }
        let cache = try await withDeadline { try makeCache(directory) }
        try await withDeadline { await cache.waitForMaintenance() }
        #expect(paths.filter(exists) == [])
        #expect(directory.entryNames == [name])
        #expect(try await withDeadline { await cache.cachedData(for: url) }?.data == Data("flat".utf8))
        #expect(outside.isUntouched)
    }
}
