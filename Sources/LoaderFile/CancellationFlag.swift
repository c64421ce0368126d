import Synchronization

/// Set by a task's cancellation handler, read by the pool thread doing the task's blocking
/// work between chunks (the thread cannot see the task's own cancellation).
final class CancellationFlag: Sendable {
    private let flag = Atomic<Bool>(false)

    /// Whether the task was cancelled.
    var isSet: Bool { flag.load(ordering: .acquiring) }

    /// Marks the task cancelled.
    func set() { flag.store(true, ordering: .releasing) }
}
