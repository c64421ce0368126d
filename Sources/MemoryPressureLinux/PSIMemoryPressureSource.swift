import Foundation
import PipelineCore

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Linux pressure stall information for memory: the cgroup's `memory.pressure` (cgroup v2, the
/// container's own pressure) if present, else the machine's `/proc/pressure/memory`.
public struct PSIMemoryPressureSource: MemoryPressureSource {
    /// The files tried, in order.
    public let paths: [String]
    /// The triggers set, one descriptor each.
    public let triggers: [MemoryPressureTrigger]

    /// Creates a source.
    /// - Parameters:
    ///   - cgroupRoot: where the cgroup v2 file system is mounted, as for
    ///     `ContainerMemory.limit(cgroupRoot:)`; a test passes a fake directory.
    ///   - systemPath: the machine-wide file.
    ///   - triggers: default ``MemoryPressureTrigger/warning`` and ``MemoryPressureTrigger/critical``.
    public init(cgroupRoot: String = "/sys/fs/cgroup", systemPath: String = "/proc/pressure/memory",
                triggers: [MemoryPressureTrigger] = [.warning, .critical]) {
        self.paths = [URL(fileURLWithPath: cgroupRoot).appendingPathComponent("memory.pressure").path, systemPath]
        self.triggers = triggers
    }

    /// Opens the first path that exists and takes every trigger; a trigger the kernel refuses
    /// for its window (`EINVAL`, unprivileged) is retried as ``MemoryPressureTrigger/unprivileged``.
    /// When a path fails, the next is tried; the first failure is thrown.
    public func openTriggers() throws(MemoryPressureUnavailable) -> (path: String, descriptors: [MemoryPressureDescriptor]) {
        var firstFailure: MemoryPressureUnavailable?
        for path in paths where access(path, F_OK) == 0 {
            do throws(MemoryPressureUnavailable) {
                return (path, try open(path))
            } catch {
                firstFailure = firstFailure ?? error
            }
        }
        throw firstFailure ?? .notFound(paths: paths)
    }

    /// The averages of the first path that reads and parses.
    public func averages() -> MemoryPressureAverages? {
        for path in paths {
            let fd = systemOpen(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC)  // a FIFO must not block the watcher
            guard fd >= 0 else { continue }
            defer { close(fd) }
            var buffer = [UInt8](repeating: 0, count: 512)  // two lines of ~70 bytes
            let count = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            guard count > 0, let averages = MemoryPressureAverages(parsing: String(decoding: buffer[..<count], as: UTF8.self))
            else { continue }
            return averages
        }
        return nil
    }

    private func open(_ path: String) throws(MemoryPressureUnavailable) -> [MemoryPressureDescriptor] {
        var opened: [MemoryPressureDescriptor] = []
        do throws(MemoryPressureUnavailable) {
            for trigger in triggers {
                opened.append(try open(path, trigger: trigger))
            }
            return opened
        } catch {
            for descriptor in opened { close(descriptor.fd) }
            throw error
        }
    }

    private func open(_ path: String, trigger: MemoryPressureTrigger) throws(MemoryPressureUnavailable) -> MemoryPressureDescriptor {
        let fd = systemOpen(path, O_RDWR | O_NONBLOCK | O_CLOEXEC)
        guard fd >= 0 else { throw .cannotOpen(path: path, errno: errno) }
        if let problem = Self.pressureFileProblem(fd, path: path) {
            close(fd)
            throw problem
        }
        var taken = trigger
        var result = Self.write(trigger.line, to: fd)
        if result == EINVAL, trigger.unprivileged != trigger {
            taken = trigger.unprivileged
            result = Self.write(taken.line, to: fd)
        }
        guard result == 0 else {
            close(fd)
            throw .triggerRejected(path: path, trigger: taken.line, errno: result)
        }
        return MemoryPressureDescriptor(fd: fd, trigger: taken, events: Int16(POLLPRI))
    }

    /// Writes `line` and its NUL (the kernel reads the text up to its last byte); 0 or `errno`.
    private static func write(_ line: String, to fd: Int32) -> Int32 {
        let bytes = Array(line.utf8) + [0]
        let written = bytes.withUnsafeBytes { systemWrite(fd, $0.baseAddress, $0.count) }
        return written == bytes.count ? 0 : written < 0 ? errno : EIO
    }

    /// Why `fd` is no usable kernel pressure file, or `nil` when it is one: a pseudo-file that
    /// reports size 0 yet reads as `some avg10=…`. A regular file either has a size or reads nothing.
    private static func pressureFileProblem(_ fd: Int32, path: String) -> MemoryPressureUnavailable? {
        var info = stat()
        guard fstat(fd, &info) == 0 else { return .cannotOpen(path: path, errno: errno) }
        guard info.st_size == 0 else { return .notAPressureFile(path: path) }
        var buffer = [UInt8](repeating: 0, count: 16)
        let count = buffer.withUnsafeMutableBytes { pread(fd, $0.baseAddress, $0.count, 0) }
        guard count >= 0 else { return .cannotOpen(path: path, errno: errno) }  // EOPNOTSUPP: PSI is off
        return buffer[..<count].starts(with: Array("some avg10=".utf8)) ? nil : .notAPressureFile(path: path)
    }
}

// `open` and `write` are also names in this file's types; these reach the C functions.
private func systemOpen(_ path: String, _ flags: Int32) -> Int32 { open(path, flags) }
private func systemWrite(_ fd: Int32, _ buffer: UnsafeRawPointer?, _ count: Int) -> Int { write(fd, buffer, count) }
