import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// Whether anyone opened or read a file, from the kernel (inotify `IN_OPEN | IN_ACCESS`): the
/// proof that a refused source was not read, whatever the server says.
final class ServeFileWatch {
    private let descriptor: Int32

    /// Watches `url` from now on.
    init(_ url: URL) throws {
        descriptor = inotify_init1(Int32(IN_NONBLOCK | IN_CLOEXEC))
        guard descriptor >= 0 else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
        guard inotify_add_watch(descriptor, url.path, UInt32(IN_OPEN | IN_ACCESS)) >= 0 else {
            let code = errno
            close(descriptor)
            throw POSIXError(POSIXErrorCode(rawValue: code) ?? .EIO)
        }
    }

    deinit { close(descriptor) }

    /// The events that arrived since the last call (it does not wait: the kernel queues an
    /// event when the open or read happens, before the reader gets its bytes).
    func events() -> Int {
        var count = 0
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let read = buffer.withUnsafeMutableBytes { Glibc.read(descriptor, $0.baseAddress, $0.count) }
            guard read > 0 else { return count }
            var offset = 0
            while offset + MemoryLayout<inotify_event>.size <= read {
                let length = buffer.withUnsafeBytes { $0.loadUnaligned(fromByteOffset: offset, as: inotify_event.self).len }
                count += 1
                offset += MemoryLayout<inotify_event>.size + Int(length)
            }
        }
    }
}
