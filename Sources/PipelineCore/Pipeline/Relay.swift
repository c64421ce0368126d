import Synchronization

/// Values fanned out to subscribers, keeping the latest for late ones: a download's progress
/// and a decode's previews. Shared by a piece of work in flight (a download's loader reports
/// its progress into one; a decode forwards its download's, and sends its own previews) and an
/// ``ImageTask`` (whose streams subscribe). Values are delivered under the lock, so every
/// subscriber sees them in order (a late subscriber's first value is never older than the next
/// one it gets); subscribers only ever forward downstream, so no cycle.
final class Relay<Value: Sendable>: Sendable {
    private struct Subscriber {
        let send: @Sendable (Value) -> Void
        let finish: (@Sendable () -> Void)?
    }
    private struct State {
        var latest: Value?
        var subscribers: [UInt64: Subscriber] = [:]
        var nextID: UInt64 = 0
        var finished = false
    }
    private let state = Mutex(State())

    /// The latest value.
    var latest: Value? { state.withLock { $0.latest } }

    /// Delivers `progress` to every subscriber and keeps it as the latest.
    func send(_ progress: Value) {
        state.withLock { state in
            guard !state.finished else { return }
            state.latest = progress
            for subscriber in state.subscribers.values { subscriber.send(progress) }
        }
    }

    /// Adds a subscriber, which gets the latest value at once (and `finish` at once when the
    /// relay has finished); returns its id.
    @discardableResult
    func subscribe(send: @escaping @Sendable (Value) -> Void,
                   finish: (@Sendable () -> Void)? = nil) -> UInt64 {
        let (id, finished) = state.withLock { state in
            state.nextID += 1
            if let latest = state.latest { send(latest) }
            if !state.finished { state.subscribers[state.nextID] = Subscriber(send: send, finish: finish) }
            return (state.nextID, state.finished)
        }
        if finished { finish?() }
        return id
    }

    /// Removes a subscriber.
    func unsubscribe(_ id: UInt64) {
        _ = state.withLock { $0.subscribers.removeValue(forKey: id) }
    }

    /// Finishes every subscriber; later values are dropped. The latest value stays for
    /// ``latest`` (a task's last progress) unless `keepingLatest` is `false` (a preview's
    /// bitmap, which nothing needs once the picture is there). The finish calls run outside the
    /// lock: a stream's termination handler unsubscribes.
    func finish(keepingLatest: Bool = true) {
        let subscribers = state.withLock { state in
            state.finished = true
            if !keepingLatest { state.latest = nil }
            defer { state.subscribers = [:] }
            return Array(state.subscribers.values)
        }
        for subscriber in subscribers { subscriber.finish?() }
    }
}
