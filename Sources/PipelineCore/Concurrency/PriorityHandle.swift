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

    /// Every change of any handle's priority, counted: a queue that sorted its jobs by priority
    /// at one count needs no new look at them until the count moves (the HTTP loader's queue
    /// looked at every waiting job on every turn of its engine, under its lock, which under a
    /// flood of requests held the lock that new requests wait for).
    package static var changeCount: UInt64 { changes.load(ordering: .acquiring) }
    private static let changes = Atomic<UInt64>(0)

    /// Raises the priority to `priority` if it is higher; never lowers it.
    public func raise(to priority: ImagePriority) {
        let raised = value.withLock {
            guard priority > $0 else { return false }
            $0 = priority
            return true
        }
        if raised { Self.changes.add(1, ordering: .releasing) }
    }

    /// Sets the priority, up or down (the visible caller of shared work left, and only
    /// prefetches still wait); `true` when it changed.
    @discardableResult
    public func set(_ priority: ImagePriority) -> Bool {
        let changed = value.withLock {
            guard $0 != priority else { return false }
            $0 = priority
            return true
        }
        if changed { Self.changes.add(1, ordering: .releasing) }
        return changed
    }
}
