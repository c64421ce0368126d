import Synchronization

/// A priority that can change while work waits: shared by a pipeline task and the loader or
/// decode pool that queues it, so a visible caller joining a prefetch moves it up the queue,
/// and back down when that caller leaves.
public final class PriorityHandle: Sendable {
    private let value: Mutex<ImagePriority>

    /// Creates a handle at `priority`.
    public init(_ priority: ImagePriority) {
        value = Mutex(priority)
    }

    /// The current priority.
    public var current: ImagePriority { value.withLock { $0 } }

    /// Raises the priority to `priority` if it is higher; never lowers it.
    public func raise(to priority: ImagePriority) {
        value.withLock { if priority > $0 { $0 = priority } }
    }

    /// Sets the priority, up or down (the visible caller of shared work left, and only
    /// prefetches still wait); `true` when it changed.
    @discardableResult
    public func set(_ priority: ImagePriority) -> Bool {
        value.withLock {
            guard $0 != priority else { return false }
            $0 = priority
            return true
        }
    }
}
