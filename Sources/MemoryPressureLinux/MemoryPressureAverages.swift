import PipelineCore

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
