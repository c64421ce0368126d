/// How hard memory pressure is: what a host's signal reports and
/// ``ImagePipeline/trimMemory(for:policy:)`` sheds for. On Linux the `MemoryPressureLinux`
/// module's `MemoryPressureWatcher` reports it from PSI; elsewhere a host maps its own signal
/// (a memory warning, an orchestrator's hook) to a level.
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
