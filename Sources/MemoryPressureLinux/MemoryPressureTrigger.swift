import Foundation
import PipelineCore

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
