import Synchronization

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Prefetches in flight by memory key, each a task that loads its request at prefetch
/// priority and leaves the set when it ends: the pipeline's own (``ImagePipeline/prefetch(_:)``)
/// and each ``ImagePrefetcher``'s.
///
/// Synchronous and thread-safe (a `Mutex`), so that calls made one after the other from one
/// thread take effect in that order: a start then a stop ends stopped, because the start's task
/// exists (and is in the set) before ``start(_:in:)`` returns, and the stop cancels it before
/// ``stop(_:)`` returns. No user code runs under the lock: keys (which call the configuration's
/// URL builder and cache key) are computed before it is taken, and tasks are cancelled after it
/// is released (cancellation handlers run synchronously).
///
/// Each prefetch is one more waiter on the pipeline's shared work, so stopping it cancels only
/// what nobody else waits for: a visible caller that joined keeps its download and decode.
final class PrefetchSet: Sendable {
    private struct Entry {
        let id: UInt64
        let task: Task<Void, Never>
    }

    private struct State {
        var entries: [ImageKey: Entry] = [:]
        var lastID: UInt64 = 0
    }

    private let state = Mutex(State())

    /// Starts `requests` at prefetch priority through `pipeline`, except those whose key is in
    /// the memory cache or already prefetching here.
    func start(_ requests: [ImageRequest], in pipeline: ImagePipeline) {
        let wanted = requests.map { original -> (ImageKey, ImageRequest) in
            var request = original
            request.priority = .prefetch
            return (pipeline.key(for: request), request)
        }
        .filter { !pipeline.memoryCache.contains($0.0) }
        guard !wanted.isEmpty else { return }
        state.withLock { state in
            for (key, request) in wanted where state.entries[key] == nil {
                state.lastID &+= 1
                let id = state.lastID
                // Made under the lock, so the task's own `finished` (which takes it) cannot run
                // before its entry is in.
                let task = Task(priority: .low) { [self] in
                    _ = try? await pipeline.image(for: request)
                    finished(key, id: id)
                }
                state.entries[key] = Entry(id: id, task: task)
            }
        }
    }

    /// Stops the prefetches of `keys` (those not in the set are ignored).
    func stop(_ keys: [ImageKey]) {
        let tasks = state.withLock { state in keys.compactMap { state.entries.removeValue(forKey: $0)?.task } }
        for task in tasks { task.cancel() }
    }

    /// Stops every prefetch; returns how many there were.
    @discardableResult
    func stopAll() -> Int {
        let tasks = state.withLock { state in
            defer { state.entries.removeAll() }
            return state.entries.values.map(\.task)
        }
        for task in tasks { task.cancel() }
        return tasks.count
    }

    /// How many prefetches are in the set (started and not yet finished or stopped).
    var count: Int { state.withLock { $0.entries.count } }

    /// The keys prefetching now.
    var keys: Set<ImageKey> { state.withLock { Set($0.entries.keys) } }

    /// One running prefetch's task, to wait for, or `nil` when none runs.
    var anyTask: Task<Void, Never>? { state.withLock { $0.entries.values.first?.task } }

    /// A prefetch ended; it leaves the set unless it was stopped (and perhaps started again,
    /// as a new entry) meanwhile.
    private func finished(_ key: ImageKey, id: UInt64) {
        state.withLock { state in
            if state.entries[key]?.id == id { state.entries[key] = nil }
        }
    }
}
