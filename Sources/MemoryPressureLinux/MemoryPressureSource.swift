import PipelineCore

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
