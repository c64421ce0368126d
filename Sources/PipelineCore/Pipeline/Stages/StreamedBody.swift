import Foundation
import Synchronization

/// A download's body as it arrives, kept for the decodes that show previews of it
/// (``PreviewFeed``). It keeps bytes only once a decode that wants previews waits for the
/// download (``keepBytes()``), and drops them when the download ends: downloads without a
/// preview decode cost nothing here. The loader appends from its own thread.
final class StreamedBody: Sendable {
    private struct State {
        var keeps = false
        var finished = false
        var data = Data()
        var listeners: [UInt64: @Sendable () -> Void] = [:]
        var nextID: UInt64 = 0
    }
    private let state = Mutex(State())

    /// From now on, keep the body's bytes (a decode that shows previews waits for them).
    func keepBytes() {
        state.withLock { $0.keeps = true }
    }

    /// A piece of the body that starts at `offset`; a loader that starts over (a retry) starts
    /// again at 0. A piece that does not follow the bytes kept is dropped, and so are the
    /// bytes kept: what is kept is always the body's first bytes.
    func append(_ chunk: Data, at offset: Int64) {
        let listeners = state.withLock { state -> [@Sendable () -> Void] in
            guard state.keeps, !state.finished else { return [] }
            if offset == 0 { state.data = Data() }
            guard offset == Int64(state.data.count) else {
                state.data = Data()
                return []
            }
            state.data.append(chunk)
            return Array(state.listeners.values)
        }
        for listener in listeners { listener() }
    }

    /// The bytes received so far (a copy-on-write snapshot).
    var bytes: Data { state.withLock { $0.data } }

    /// Calls `listener` (off the actor, outside any lock) after each piece kept; returns its id.
    func listen(_ listener: @escaping @Sendable () -> Void) -> UInt64 {
        state.withLock { state in
            state.nextID += 1
            state.listeners[state.nextID] = listener
            return state.nextID
        }
    }

    /// Stops calling the listener `id`.
    func stopListening(_ id: UInt64) {
        _ = state.withLock { $0.listeners.removeValue(forKey: id) }
    }

    /// The download ended: the bytes go, and nothing more is kept or announced.
    func finish() {
        state.withLock { state in
            state.finished = true
            state.data = Data()
            state.listeners = [:]
        }
    }
}
