import PipelineCore

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Loads `file` URLs from the local file system.
///
/// Reads run on a `WorkerPool` of dedicated threads, never on the cooperative pool, in
/// chunks; cancellation is checked between chunks. The file's modification time and size are
/// reported as an opaque validator, `ResponseMetadata.etag` (`"<mtime>-<size>"`, as web servers
/// make theirs). A missing file is `ImagePipelineError.notFound(_:status:)`; directories, other
/// non-regular files and permission errors are `ImagePipelineError.fileUnreadable(path:reason:)`.
public struct FileDataLoader: DataLoading {
    /// The largest file accepted, in bytes. Default 50 MB.
    public let maxBodyBytes: Int64
    /// How much is read between cancellation checks, in bytes. Default 256 KB.
    public let chunkSize: Int
    /// Files at least this large are memory-mapped instead of read, in bytes; `nil` (the
    /// default) never maps. Mapping skips the copy into the heap and lets a streaming decoder
    /// keep little resident, but a file truncated by another process while mapped makes the
    /// process crash with SIGBUS when the missing pages are touched: map only files you own
    /// (a command-line tool's inputs), never a shared or untrusted directory.
    public let memoryMapThreshold: Int64?
    private let pool: WorkerPool

    /// `["file"]`.
    public var schemes: Set<String> { ["file"] }

    /// Creates a loader reading on `pool` (by default a pool of two threads of its own).
    public init(maxBodyBytes: Int64 = 50_000_000, chunkSize: Int = 256 * 1024, memoryMapThreshold: Int64? = nil,
                pool: WorkerPool = WorkerPool(maxConcurrent: 2, name: "FileDataLoader")) {
        self.maxBodyBytes = maxBodyBytes
        self.chunkSize = max(1, chunkSize)
        self.memoryMapThreshold = memoryMapThreshold
        self.pool = pool
    }

    /// Reads the whole file at `request.url`, reporting progress after each chunk.
    /// - Throws: `ImagePipelineError.notFound(_:status:)`, `ImagePipelineError.fileUnreadable(path:reason:)`,
    ///   `ImagePipelineError.tooLarge(limit:actual:)`, or `CancellationError`.
    public func load(_ request: DataLoadRequest) async throws -> DataLoadResult {
        guard request.url.isFileURL else {
            throw ImagePipelineError.fileUnreadable(path: request.url.absoluteString, reason: "not a file URL")
        }
        let path = request.url.path
        let limit = maxBodyBytes
        let chunkSize = chunkSize
        let mapThreshold = memoryMapThreshold
        let progress = request.progress
        let cancelled = CancellationFlag()
        return try await withTaskCancellationHandler {
            try await pool.run(priority: request.priority) {
                try Self.readFile(path: path, limit: limit, chunkSize: chunkSize, mapThreshold: mapThreshold,
                                  progress: progress, cancelled: cancelled)
            }
        } onCancel: {
            cancelled.set()
        }
    }

    /// Opens, checks and reads `path` on the calling (pool) thread.
    static func readFile(path: String, limit: Int64, chunkSize: Int, mapThreshold: Int64? = nil,
                         progress: (@Sendable (Int64, Int64?) -> Void)?, cancelled: CancellationFlag) throws -> DataLoadResult {
        // O_NONBLOCK: opening a FIFO for reading would otherwise wait for a writer, forever.
        // (It has no effect on the reads of a regular file, the only kind read below.)
        let descriptor = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK)
        guard descriptor >= 0 else { throw unreadable(path, errno) }
        defer { close(descriptor) }
        var status = stat()
        guard fstat(descriptor, &status) == 0 else { throw unreadable(path, errno) }
        if (status.st_mode & S_IFMT) == S_IFDIR { throw unreadable(path, EISDIR) }
        guard (status.st_mode & S_IFMT) == S_IFREG else {
            throw ImagePipelineError.fileUnreadable(path: path, reason: "not a regular file")
        }
        _ = fcntl(descriptor, F_SETFL, fcntl(descriptor, F_GETFL) & ~O_NONBLOCK)
        let size = Int64(status.st_size)
        guard size <= limit else { throw ImagePipelineError.tooLarge(limit: limit, actual: size) }
        #if canImport(Darwin)
        let modified = status.st_mtimespec
        #else
        let modified = status.st_mtim
        #endif
        let etag = "\"\(String(modified.tv_sec, radix: 16)).\(String(modified.tv_nsec, radix: 16))-\(String(size, radix: 16))\""
        let metadata = ResponseMetadata(etag: etag, contentLength: size, origin: .local)
        if let mapThreshold, size >= mapThreshold, size > 0 {
            do {
                let data = try Data(contentsOf: URL(fileURLWithPath: path), options: .alwaysMapped)
                progress?(Int64(data.count), size)
                return .data(data, metadata)
            } catch {
                throw ImagePipelineError.fileUnreadable(path: path, reason: "cannot map: \(localizedDescription(of: error))")
            }
        }

        var data = Data(count: Int(size))
        var offset = 0
        while offset < Int(size) {
            if cancelled.isSet { throw CancellationError() }
            let wanted = min(chunkSize, Int(size) - offset)
            let count = data.withUnsafeMutableBytes { buffer -> Int in
                guard let base = buffer.baseAddress else { return 0 }
                return read(descriptor, base + offset, wanted)
            }
            if count < 0 {
                if errno == EINTR { continue }
                throw unreadable(path, errno)
            }
            if count == 0 { break }  // the file shrank while we read it
            offset += count
            progress?(Int64(offset), size)
        }
        if cancelled.isSet { throw CancellationError() }
        data.count = offset
        return .data(data, metadata)
    }

    private static func unreadable(_ path: String, _ code: Int32) -> ImagePipelineError {
        let reason: String
        switch code {
        case ENOENT, ENOTDIR: return .notFound(URL(fileURLWithPath: path))
        case EISDIR: reason = "is a directory"
        case EACCES, EPERM: reason = "permission denied"
        default: reason = String(cString: strerror(code))
        }
        return .fileUnreadable(path: path, reason: reason)
    }
}
