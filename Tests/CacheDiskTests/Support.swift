import CacheDisk
import Foundation
import PipelineCore
import PipelineTestSupport

extension TemporaryDirectory {
    /// The path of `url`'s entry file in this directory: `<xx>/<name>`, `xx` the name's first two digits.
    func entryPath(_ key: URL) -> String { entryPath(name: DiskCache.fileName(for: key)) }

    /// The path of entry file `name`.
    func entryPath(name: String) -> String {
        url.appendingPathComponent(String(name.prefix(2))).appendingPathComponent(name).path
    }

    /// The path of `url`'s entry in the flat layout before the index (`<directory>/<name>`),
    /// where the rebuild finds it and moves it into its folder.
    func flatEntryPath(_ key: URL) -> String { url.appendingPathComponent(DiskCache.fileName(for: key)).path }

    /// The paths of every file in the entry folders (entries and temporary files), as listed.
    var entryFolderFiles: [String] {
        names.filter { $0.utf8.count == 2 }.flatMap { folder in
            let folderURL = url.appendingPathComponent(folder)
            return ((try? FileManager.default.contentsOfDirectory(atPath: folderURL.path)) ?? [])
                .map { folderURL.appendingPathComponent($0).path }
        }
    }

    /// The names of the entry files (64 hex digits) in the entry folders.
    var entryNames: [String] {
        entryFolderFiles.map { ($0 as NSString).lastPathComponent }.filter { !$0.hasPrefix(".") }
    }

    /// The names of temporary files in the entry folders.
    var temporaryNames: [String] {
        entryFolderFiles.map { ($0 as NSString).lastPathComponent }.filter { $0.hasPrefix(".tmp.") }
    }
}

/// A test cache: every hit written to the index at once (exact LRU order) unless asked.
func makeCache(_ directory: TemporaryDirectory, sizeLimit: Int = 64 << 20, trimRatio: Double = 0.8,
               accessPersistInterval: TimeInterval = 0, maxUnusedAge: TimeInterval? = nil, countLimit: Int? = nil,
               fileName: @escaping @Sendable (URL) -> String = DiskCache.fileName(for:)) throws -> DiskCache {
    try DiskCache(directory: directory.url, sizeLimit: sizeLimit, syncsWrites: false, trimRatio: trimRatio,
                  accessPersistInterval: accessPersistInterval, maxUnusedAge: maxUnusedAge, countLimit: countLimit,
                  fileName: fileName)
}

/// The disk space the entry files in `directory` really take: the sum of their `st_blocks` ×
/// 512, measured here, not by the cache (the index database is outside the cap).
func allocatedBytes(in directory: TemporaryDirectory) -> Int {
    directory.entryFolderFiles.reduce(0) { total, path in
        var status = stat()
        guard lstat(path, &status) == 0 else { return total }
        return total + Int(status.st_blocks) * 512
    }
}

/// `stat` of `path`: inode, size and mtime, to show a file was not rewritten.
struct FileIdentity: Equatable {
    var inode: UInt64
    var size: Int64
    /// The disk space it takes, as the cache's caps count it: `st_blocks` × 512, at least its size.
    var allocated: Int
    var modified: Int
    var modifiedNanoseconds: Int

    init?(_ path: String) {
        var status = stat()
        guard stat(path, &status) == 0 else { return nil }
        inode = UInt64(status.st_ino)
        size = Int64(status.st_size)
        allocated = max(Int(status.st_blocks) * 512, Int(status.st_size))
        modified = status.st_mtim.tv_sec
        modifiedNanoseconds = status.st_mtim.tv_nsec
    }
}

/// Metadata for a response fresh for `maxAge` seconds, with an ETag.
func metadata(maxAge: TimeInterval?, etag: String? = nil) -> ResponseMetadata {
    ResponseMetadata(etag: etag, freshFor: maxAge, origin: .network)  // an HTTP origin's answer
}

/// The helper executable built beside the test bundle.
func helperExecutable(_ name: String) -> URL? {
    let candidates = [
        URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent(),
        Bundle.main.bundleURL.deletingLastPathComponent(),
        Bundle.main.bundleURL,
    ]
    return candidates.map { $0.appendingPathComponent(name) }
        .first { FileManager.default.isExecutableFile(atPath: $0.path) }
}

