import Synchronization

/// A count several tasks add to (progress callbacks, auth hooks), read by the test afterwards.
public final class Counter: Sendable {
    private let value = Mutex(0)

    /// A count at zero.
    public init() {}

    /// The count now.
    public var current: Int { value.withLock { $0 } }

    /// Adds one.
    public func increment() { value.withLock { $0 += 1 } }
}
