import Foundation
import Synchronization

/// One piece of shared work (a download or a decode) and the callers waiting for it.
///
/// Only ever touched on the ``ImagePipeline`` actor, which owns the tables that hold it.
final class InFlightWork<Value: Sendable> {
    let id: UInt64
    let priority: PriorityHandle
    /// `false` for work started by a `reloadIgnoringCaches` request: it never reads caches.
    let readsCaches: Bool
    /// `false` for work started by a `returnCacheDataDontLoad` request: it never starts a load.
    let mayLoad: Bool
    var waiters: [UInt64: CheckedContinuation<Value, any Error>] = [:]
    var task: Task<Void, Never>?
    /// The priority of the work this work waits on (a decode's download), raised together.
    var upstream: PriorityHandle?

    init(id: UInt64, priority: ImagePriority, cachePolicy: CachePolicy) {
        self.id = id
        self.priority = PriorityHandle(priority)
        self.readsCaches = cachePolicy != .reloadIgnoringCaches
        self.mayLoad = cachePolicy != .returnCacheDataDontLoad
    }

    /// Whether a request with `cachePolicy` may join this work: a reload joins only work that
    /// does not read caches, and a request that may load joins only work that may load too
    /// (a cache-only miss would answer it `notCached`).
    func canServe(_ cachePolicy: CachePolicy) -> Bool {
        (!readsCaches || cachePolicy != .reloadIgnoringCaches) && (mayLoad || cachePolicy == .returnCacheDataDontLoad)
    }

    func raise(to priority: ImagePriority) {
        self.priority.raise(to: priority)
        upstream?.raise(to: priority)
    }
}

/// Names one waiter of one piece of work, so a cancellation handler (which runs off the actor)
/// can find it again with only `Sendable` values.
struct WaiterToken: Sendable {
    enum Table: Sendable {
        case decode(ImageKey)
        case download(URL)
    }
    let table: Table
    let workID: UInt64
    let waiterID: UInt64
}

/// Compressed bytes and where they came from: the download table's value.
struct LoadedData: Sendable {
    let data: Data
    let source: ImageSource
    /// Bytes from a loader still to be written to the disk cache, by the first decode that succeeds.
    var pendingStore: PendingStore?
    /// The stored copy a revalidation's new bytes replace: decoded instead when those do not decode.
    var staleFallback: Data?

    init(data: Data, source: ImageSource) {
        self.data = data
        self.source = source
    }
}

/// Loaded bytes waiting to prove they decode before the disk cache keeps them. Several decodes
/// (keys) may share one download; the first that succeeds claims the store.
final class PendingStore: Sendable {
    let disk: any DataCaching
    let data: Data
    let info: CacheEntryInfo
    /// `true` after a revalidation: the bytes replace a stored copy whose decoded results in
    /// memory must go.
    let replacesStoredBytes: Bool
    private let claimed = Atomic<Bool>(false)

    init(disk: any DataCaching, data: Data, info: CacheEntryInfo, replacesStoredBytes: Bool) {
        self.disk = disk
        self.data = data
        self.info = info
        self.replacesStoredBytes = replacesStoredBytes
    }

    /// `true` exactly once: for the caller that stores the bytes.
    func claim() -> Bool {
        !claimed.exchange(true, ordering: .acquiringAndReleasing)
    }
}
