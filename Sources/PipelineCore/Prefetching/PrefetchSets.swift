import Synchronization

/// Every ``PrefetchSet`` of one pipeline: its own and those of the ``ImagePrefetcher``s made
/// from it (registered while they live), so that memory pressure
/// (``ImagePipeline/trimMemory(for:policy:)``) and ``ImagePipeline/waitForBackgroundWork()``
/// reach a screen's prefetches too.
final class PrefetchSets: Sendable {
    /// The pipeline's own, for ``ImagePipeline/prefetch(_:)``.
    let own = PrefetchSet()
    private let others = Mutex<[ObjectIdentifier: PrefetchSet]>([:])

    /// A prefetcher's set joins (until ``unregister(_:)``, from its `deinit`).
    func register(_ set: PrefetchSet) {
        others.withLock { $0[ObjectIdentifier(set)] = set }
    }

    /// A prefetcher's set leaves.
    func unregister(_ set: PrefetchSet) {
        _ = others.withLock { $0.removeValue(forKey: ObjectIdentifier(set)) }
    }

    private var all: [PrefetchSet] { [own] + others.withLock { Array($0.values) } }

    /// Stops every prefetch of every set; returns how many there were.
    func stopAll() -> Int {
        all.reduce(0) { $0 + $1.stopAll() }
    }

    /// One running prefetch's task in any set, or `nil` when none runs.
    var anyTask: Task<Void, Never>? {
        all.lazy.compactMap(\.anyTask).first
    }
}
