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

/// A file descriptor imgpipe writes its output to: `FileHandle`'s writing without full
/// Foundation. A failed write throws the error `FileHandle` threw on Linux (a `CocoaError` for
/// the `errno`, the `POSIXError` as its underlying error), so messages read the same.
final class FileOutput: Sendable {
    let fileDescriptor: Int32
    private let closesOnDeinit: Bool

    init(fileDescriptor: Int32, closeOnDealloc: Bool) {
        self.fileDescriptor = fileDescriptor
        closesOnDeinit = closeOnDealloc
    }

    deinit {
        if closesOnDeinit { close(fileDescriptor) }
    }

    static let standardOutput = FileOutput(fileDescriptor: STDOUT_FILENO, closeOnDealloc: false)

    /// Writes all of `data`.
    func write(contentsOf data: Data) throws {
        try data.withUnsafeBytes { try write(contentsOf: $0) }
    }

    /// Writes all of `bytes`.
    func write(contentsOf bytes: UnsafeRawBufferPointer) throws {
        if let code = writeAll(bytes, to: fileDescriptor) { throw Self.writeError(code) }
    }

    /// Writes `data`, ignoring a failure (imgpipe's messages on stderr).
    func write(_ data: Data) {
        try? write(contentsOf: data)
    }

    /// swift-corelibs-foundation's `_NSErrorWithErrno(code, reading: false)`.
    private static func writeError(_ code: Int32) -> CocoaError {
        let kind: CocoaError.Code
        switch code {
        case ENOENT: kind = .fileNoSuchFile
        case EPERM, EACCES: kind = .fileWriteNoPermission
        case ENAMETOOLONG: kind = .fileWriteInvalidFileName
        case EDQUOT, ENOSPC: kind = .fileWriteOutOfSpace
        case EROFS: kind = .fileWriteVolumeReadOnly
        case EEXIST: kind = .fileWriteFileExists
        default: kind = .fileWriteUnknown
        }
        let underlying = POSIXErrorCode(rawValue: code).map { POSIXError($0) }
        return CocoaError(kind, userInfo: underlying.map { ["NSUnderlyingError": $0] } ?? [:])
    }
}

/// Whether `path` names a folder (following symbolic links), `nil` if nothing is there:
/// `FileManager.fileExists(atPath:isDirectory:)`, whose flag is an `ObjCBool` on Apple platforms.
func folderStatus(_ path: String) -> Bool? {
    var status = stat()
    guard stat(path, &status) == 0 else { return nil }
    return status.st_mode & S_IFMT == S_IFDIR
}

/// What `path` itself is (not what a link points to): its `S_IFMT` bits (`S_IFREG`, `S_IFDIR`,
/// `S_IFLNK`, `S_IFIFO`, …), `nil` if nothing is there.
func fileKind(_ path: String) -> mode_t? {
    var status = stat()
    return lstat(path, &status) == 0 ? status.st_mode & S_IFMT : nil
}

/// Whether `path` is a regular file itself (not a link to one): `URLResourceValues.isRegularFile`.
func isRegularFile(_ path: String) -> Bool {
    fileKind(path) == S_IFREG
}
