#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// The first `count` bytes of the file at `path` (fewer if it is shorter), or `nil` if it cannot
/// be opened or read: `FileHandle(forReadingAtPath:)` and `read(upToCount:)` without full
/// Foundation, for small files such as cgroup limits and a picture's leading bytes.
package func readPrefix(of path: String, upTo count: Int) -> [UInt8]? {
    readFile(path, limit: max(count, 0))
}

/// The whole file at `path`, read to its end, or `nil` if it cannot be opened or read. For
/// `/proc` files, which report a size of 0 (so a read of "the file's size" stops early).
package func readWholeFile(_ path: String) -> [UInt8]? {
    readFile(path, limit: nil)
}

/// Up to `limit` bytes of `path` (all of it when `nil`), read in chunks, retrying `EINTR`.
private func readFile(_ path: String, limit: Int?) -> [UInt8]? {
    let fd = open(path, O_RDONLY | O_CLOEXEC)
    guard fd >= 0 else { return nil }
    defer { close(fd) }
    var bytes: [UInt8] = []
    var chunk = [UInt8](repeating: 0, count: min(limit ?? 65_536, 65_536))
    while bytes.count < (limit ?? Int.max) {
        let wanted = min(chunk.count, (limit ?? Int.max) - bytes.count)
        let got = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, wanted) }
        if got < 0 && errno == EINTR { continue }
        guard got >= 0 else { return nil }
        if got == 0 { break }
        bytes += chunk[..<got]
    }
    return bytes
}

/// Writes `bytes` to the existing file at `path` (not created, not truncated); the `errno` of a failure.
@discardableResult
package func writeAll(_ bytes: some Sequence<UInt8>, toFileAt path: String) -> Int32? {
    let fd = open(path, O_WRONLY | O_CLOEXEC)
    guard fd >= 0 else { return errno }
    defer { close(fd) }
    return writeAll(bytes, to: fd)
}

/// Writes all of `bytes` to `fd`, retrying short writes and `EINTR`; the `errno` of a failure.
@discardableResult
package func writeAll(_ bytes: some Sequence<UInt8>, to fd: Int32) -> Int32? {
    Array(bytes).withUnsafeBytes { writeAll($0, to: fd) }
}

/// Writes all of `bytes` to `fd`, retrying short writes and `EINTR`; the `errno` of a failure
/// (`EIO` for a write that wrote nothing).
@discardableResult
package func writeAll(_ bytes: UnsafeRawBufferPointer, to fd: Int32) -> Int32? {
    guard let base = bytes.baseAddress else { return nil }
    var written = 0
    while written < bytes.count {
        let wrote = write(fd, base + written, bytes.count - written)
        if wrote < 0 && errno == EINTR { continue }
        guard wrote > 0 else { return wrote < 0 ? errno : EIO }
        written += wrote
    }
    return nil
}
