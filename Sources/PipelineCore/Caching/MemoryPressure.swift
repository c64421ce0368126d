import Foundation
import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// How hard memory pressure is, as a ``MemoryPressureWatcher`` reports it.
public enum MemoryPressureLevel: Int, Sendable, Comparable, CustomStringConvertible {
    /// Tasks stall on memory now and then: shed what is cheap to get back.
    case warning = 1
    /// Tasks stall on memory most of the time: shed everything that can go.
    case critical = 2

    /// Orders `warning` below `critical`.
    public static func < (lhs: Self, rhs: Self) -> Bool { lhs.rawValue < rhs.rawValue }

    /// `"warning"` or `"critical"`.
    public var description: String { self == .warning ? "warning" : "critical" }
}

/// A Linux PSI trigger: report `level` when tasks stalled on memory for `threshold` within a
/// `window` (written to a pressure file as `some 150000 1000000`, in microseconds).
public struct MemoryPressureTrigger: Sendable, Hashable, CustomStringConvertible {
    /// Which stall PSI measures.
    public enum Stall: String, Sendable, Hashable {
        /// At least one task stalled on memory.
        case some
        /// Every non-idle task stalled on memory at once.
        case full
    }

    /// The level reported when the trigger fires.
    public var level: MemoryPressureLevel
    /// `some` or `full` stall time.
    public var stall: Stall
    /// Stall time within ``window`` that fires the trigger; more than zero, at most ``window``.
    public var threshold: Duration
    /// The window the stall time is measured over; the kernel accepts 500 ms to 10 s.
    public var window: Duration

    /// Creates a trigger.
    public init(level: MemoryPressureLevel, stall: Stall, threshold: Duration, window: Duration) {
        self.level = level
        self.stall = stall
        self.threshold = threshold
        self.window = window
    }

    /// `some`: 150 ms stalled in a 1 s window (15%) is a warning.
    public static let warning = MemoryPressureTrigger(level: .warning, stall: .some, threshold: .milliseconds(150),
                                                      window: .seconds(1))
    /// `full`: every task stalled for 500 ms in a 1 s window (50%) is critical.
    public static let critical = MemoryPressureTrigger(level: .critical, stall: .full, threshold: .milliseconds(500),
                                                       window: .seconds(1))

    /// The text written to the pressure file, without the terminating NUL: `some 150000 1000000`.
    public var line: String { "\(stall.rawValue) \(Self.microseconds(threshold)) \(Self.microseconds(window))" }

    /// ``line``.
    public var description: String { line }

    /// The stall share that fires the trigger, in percent (as PSI's `avg10` reports it).
    public var percent: Double {
        let window = Self.microseconds(window)
        return window > 0 ? Double(Self.microseconds(threshold)) * 100 / Double(window) : 100
    }

    /// The trigger an unprivileged process may set (Linux 6.5 and later, without
    /// `CAP_SYS_RESOURCE`): the window rounded up to a multiple of 2 s, the threshold scaled by
    /// the same factor so the stall share stays the same. `self` when the window already is one.
    public var unprivileged: MemoryPressureTrigger {
        let window = Self.microseconds(window), step: Int64 = 2_000_000
        guard window > 0, window % step != 0 else { return self }
        let rounded = (window / step + 1) * step
        var copy = self
        copy.window = .microseconds(rounded)
        copy.threshold = .microseconds(Self.microseconds(threshold) * rounded / window)
        return copy
    }

    static func microseconds(_ duration: Duration) -> Int64 {
        let (seconds, attoseconds) = duration.components
        return seconds.multipliedReportingOverflow(by: 1_000_000).partialValue + attoseconds / 1_000_000_000_000
    }
}

/// PSI's ten-second averages of a pressure file: the share of time tasks stalled, in percent.
public struct MemoryPressureAverages: Sendable, Hashable {
    /// `some avg10`: at least one task stalled.
    public var some: Double
    /// `full avg10`: every non-idle task stalled (0 where the file has no `full` line).
    public var full: Double

    /// Creates averages.
    public init(some: Double, full: Double) {
        self.some = some
        self.full = full
    }

    /// Parses a pressure file's text (`some avg10=1.50 avg60=… total=…` and a `full` line);
    /// `nil` without a `some` line.
    public init?(parsing text: String) {
        var some: Double?, full: Double?
        for line in text.split(separator: "\n") {
            let fields = line.split(separator: " ")
            guard let kind = fields.first,
                  let avg = fields.first(where: { $0.hasPrefix("avg10=") }),
                  let value = Double(avg.dropFirst(6)), value.isFinite, value >= 0 else { continue }
            if kind == "some" { some = value } else if kind == "full" { full = value }
        }
        guard let some else { return nil }
        self.init(some: some, full: full ?? 0)
    }

    /// The highest level among `triggers` whose stall share these averages reach, or `nil`.
    public func level(for triggers: [MemoryPressureTrigger]) -> MemoryPressureLevel? {
        triggers.filter { ($0.stall == .some ? some : full) >= $0.percent }.map(\.level).max()
    }
}

/// Why a ``MemoryPressureWatcher`` cannot use PSI triggers (and, when the averages cannot be
/// read either, cannot watch at all).
public enum MemoryPressureUnavailable: Error, Sendable, Hashable {
    /// None of `paths` exists: not Linux, or a kernel without PSI (`CONFIG_PSI`).
    case notFound(paths: [String])
    /// The pressure file could not be opened for writing (a read-only mount, or a kernel before
    /// 6.5, which lets only `CAP_SYS_RESOURCE` set triggers) or read (`EOPNOTSUPP`: PSI is off, `psi=0`).
    case cannotOpen(path: String, errno: Int32)
    /// The kernel refused the trigger text (`EINVAL` for a window it does not take).
    case triggerRejected(path: String, trigger: String, errno: Int32)
    /// The file is no kernel pressure file (a regular file has a size, or reads nothing), so a
    /// trigger on it would never fire; nothing was written to it.
    case notAPressureFile(path: String)
    /// Setting up the watcher failed (`call` returned `errno`).
    case systemError(call: String, errno: Int32)
}

/// One event descriptor a ``MemoryPressureSource`` opened: `fd` becomes ready for `events`
/// when `trigger` fires. The watcher owns it and closes it.
public struct MemoryPressureDescriptor: Sendable, Hashable {
    /// The descriptor to poll.
    public var fd: Int32
    /// The trigger it stands for.
    public var trigger: MemoryPressureTrigger
    /// The `poll` events that mean "fired": `POLLPRI` for a PSI file; `POLLIN` for a stand-in
    /// (a pipe, an eventfd), which the watcher then reads empty.
    public var events: Int16

    /// Creates a descriptor.
    public init(fd: Int32, trigger: MemoryPressureTrigger, events: Int16) {
        self.fd = fd
        self.trigger = trigger
        self.events = events
    }
}

/// Where a ``MemoryPressureWatcher`` gets pressure events: ``PSIMemoryPressureSource`` on
/// Linux; a test passes one whose descriptors it can make ready itself, or one that fails.
public protocol MemoryPressureSource: Sendable {
    /// The triggers this source sets, highest level wins; also the thresholds of the polling
    /// fallback.
    var triggers: [MemoryPressureTrigger] { get }
    /// Opens one descriptor per trigger; the caller owns and closes them. On failure closes
    /// whatever it opened and throws the reason.
    func openTriggers() throws(MemoryPressureUnavailable) -> (path: String, descriptors: [MemoryPressureDescriptor])
    /// The current averages, for the polling fallback; `nil` when they cannot be read.
    func averages() -> MemoryPressureAverages?
}

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
    ///     ``MemoryCache/containerMemoryLimit(cgroupRoot:)``; a test passes a fake directory.
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
