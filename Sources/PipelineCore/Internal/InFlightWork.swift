import Foundation
import Synchronization

/// One piece of shared work (a download or a decode) and the callers waiting for it.
///
/// Only ever touched on the ``ImagePipeline`` actor, which owns the tables that hold it.
final class InFlightWork<Value: Sendable> {
    /// One caller waiting, at the priority it asked for.
    struct Waiter {
        let continuation: CheckedContinuation<Value, any Error>
        var priority: ImagePriority
        /// Its subscription to ``InFlightWork/progress``, if it follows it.
        var progress: UInt64?
    }

    let id: UInt64
    /// The highest priority among the current waiters (the creator's until the first joins):
    /// shared with the loader's queue or the decode pool, which read it when they pick work.
    let priority: PriorityHandle
    /// `false` for work started by a `reloadIgnoringCaches` request: it never reads caches.
    let readsCaches: Bool
    /// `false` for work started by a `returnCacheDataDontLoad` request: it never starts a load.
    let mayLoad: Bool
    var waiters: [UInt64: Waiter] = [:]
    var task: Task<Void, Never>?
    /// This work's own place among the waiters of the work it waits on (a decode's, in its
    /// download): moved when this work's priority moves.
    var upstream: WaiterToken?
    /// The download progress of this work (a download's own; a decode's, forwarded from its
    /// download), for the waiters that follow it.
    let progress = ProgressRelay()
    /// A decode's disk policy: whether its result is stored as a rendition (decided by the
    /// request that created it; `nil` until then), and whether loaded bytes it decodes are kept
    /// as the original (when any request that joined wants them).
    var makesRendition: Bool?
    var storesOriginal = false

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

    /// Sets the priority to the highest of the current waiters' (unchanged with none left);
    /// `true` when it changed.
    func updatePriority() -> Bool {
        guard let highest = waiters.values.lazy.map(\.priority).max() else { return false }
        return priority.set(highest)
    }
}

/// The in-flight works of one stage, by key: a slot per key that new callers join, and every
/// running work by id (a reload can displace a work from its slot while it still has waiters
/// who may cancel). One type for downloads (by fetch URL) and decodes (by ``ImageKey``).
final class InFlightTable<Key: Hashable & Sendable, Value: Sendable> {
    private var joinable: [Key: InFlightWork<Value>] = [:]
    private var live: [UInt64: InFlightWork<Value>] = [:]
    /// Wraps a key into the token that finds this table again.
    let tokenTable: @Sendable (Key) -> WaiterToken.Table

    init(_ tokenTable: @escaping @Sendable (Key) -> WaiterToken.Table) {
        self.tokenTable = tokenTable
    }

    /// The work in the slot for `key`, if a request with `cachePolicy` may join it.
    func joinable(for key: Key, cachePolicy: CachePolicy) -> InFlightWork<Value>? {
        guard let existing = joinable[key], existing.canServe(cachePolicy) else { return nil }
        return existing
    }

    /// Puts `work` in the slot for `key` (displacing any other) and among the live works.
    func insert(_ work: InFlightWork<Value>, for key: Key) {
        joinable[key] = work
        live[work.id] = work
    }

    /// The live work with `id`.
    func work(id: UInt64) -> InFlightWork<Value>? { live[id] }

    /// Forgets `work`; its slot is cleared only if it still holds this same work.
    func remove(_ work: InFlightWork<Value>, for key: Key) {
        live[work.id] = nil
        if joinable[key] === work { joinable[key] = nil }
    }

    /// The number of callers waiting for the work in the slot for `key`.
    func waiterCount(for key: Key) -> Int { joinable[key]?.waiters.count ?? 0 }

    /// How many works are running.
    var count: Int { live.count }
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
    /// Bytes a loader delivered for this answer (0 from the disk cache or after a 304).
    var downloadedBytes = 0
    /// A stale disk copy, served while a background revalidation runs.
    var isStale = false
    /// The stored copy a revalidation's new bytes replace: decoded instead when those do not decode.
    var staleFallback: Data?
    /// The pipeline's count of replaced stored bytes when these were read: a decode of stored
    /// bytes that were replaced meanwhile is returned but not kept in memory.
    var generation: UInt64 = 0
    /// The bytes' validators and freshness, when they may be kept on disk (from the disk cache,
    /// or a loader's answer without `no-store`): what a rendition made from them carries.
    var info: CacheEntryInfo?

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
