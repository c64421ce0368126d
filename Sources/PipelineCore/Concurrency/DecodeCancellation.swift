import Synchronization

/// The cancellation of the decode pool job running on this thread, for a decoder that can stop
/// work it handed elsewhere (`SVGDecoder` kills its worker process).
///
/// A pool job runs on a thread of its own, which cannot see its caller's task being cancelled:
/// ``WorkerPool`` binds one of these to ``current`` while the job runs and cancels it when the
/// caller's task is cancelled (for a shared decode, when its last waiter left). Outside a pool
/// job ``current`` is `nil`.
public final class DecodeCancellation: Sendable {
    private struct State {
        var isCancelled = false
        var handlers: [UInt64: @Sendable () -> Void] = [:]
        var nextID: UInt64 = 0
    }

    private let state = Mutex(State())

    /// The cancellation of the pool job running on this thread, or `nil` outside one.
    @TaskLocal public static var current: DecodeCancellation?

    /// Creates a cancellation that is not cancelled.
    public init() {}

    /// Whether ``cancel()`` was called.
    public var isCancelled: Bool { state.withLock { $0.isCancelled } }

    /// Marks the job cancelled and runs every registered handler once (outside the lock).
    public func cancel() {
        let handlers = state.withLock { state -> [@Sendable () -> Void] in
            guard !state.isCancelled else { return [] }
            state.isCancelled = true
            defer { state.handlers = [:] }
            return Array(state.handlers.values)
        }
        handlers.forEach { $0() }
    }

    /// Runs `body` with `handler` registered: called once, on the cancelling thread, if the job
    /// is cancelled while `body` runs (at once, before `body`, when it already was).
    public func whileRunning<R>(onCancel handler: @escaping @Sendable () -> Void, _ body: () throws -> R) rethrows -> R {
        let id = state.withLock { state -> UInt64? in
            guard !state.isCancelled else { return nil }
            state.nextID += 1
            state.handlers[state.nextID] = handler
            return state.nextID
        }
        if id == nil { handler() }
        defer { if let id { _ = state.withLock { $0.handlers.removeValue(forKey: id) } } }
        return try body()
    }
}
