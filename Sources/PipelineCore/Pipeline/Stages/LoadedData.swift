import Synchronization

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Compressed bytes and where they came from: what the fetch stage hands the decode stage.
struct LoadedData: Sendable {
    let data: Data
    let source: ImageSource
    /// The ledger's count when these stored bytes were read (``ReplacementLedger/isCurrent(_:since:)``),
    /// `nil` for bytes fresh from the origin: a decode of stored bytes replaced meanwhile is
    /// returned but not kept.
    let generation: UInt64?
    /// Bytes from a loader (or from a farther level of the disk cache, to promote) still to be
    /// written to the disk cache, by the first decode that succeeds.
    var pendingStore: PendingStore?
    /// Bytes a loader delivered for this answer (0 from the disk cache or after a 304).
    var downloadedBytes = 0
    /// A stale disk copy, served while a background revalidation runs.
    var isStale = false
    /// The stored copy a revalidation's new bytes replace: decoded instead when those do not
    /// decode. `generation` as for ``generation``.
    var staleFallback: (data: Data, generation: UInt64?)?
    /// The bytes' validators and freshness, when they may be kept on disk (from the disk cache,
    /// or a loader's answer without `no-store`): what a rendition made from them carries.
    var info: CacheEntryInfo?

    init(data: Data, source: ImageSource, generation: UInt64?) {
        self.data = data
        self.source = source
        self.generation = generation
    }
}

/// Loaded bytes waiting to prove they decode before the disk cache keeps them. Several decodes
/// (keys) may share one download; the first that succeeds claims the store.
final class PendingStore: Sendable {
    let disk: any DataCaching
    /// Where the bytes go: an original's cache identity, or a rendition's key.
    let url: URL
    let data: Data
    let info: CacheEntryInfo
    /// `true` after a revalidation: the bytes replace a stored copy whose decoded results in
    /// memory must go.
    let replacesStoredBytes: Bool
    /// The bytes came from the disk cache itself, marked ``CachedData/promotesAfterDecode``:
    /// they go back through ``DataCaching/promoteData(_:info:for:)``, not a store.
    let promotes: Bool
    /// Who stores: nobody yet, the first claimant while it writes (with the callers that wait
    /// for its write), or done.
    private enum StoreState {
        case unclaimed
        case storing(waiters: [UInt64: CheckedContinuation<Void, Never>])
        case stored
    }

    private let state = Mutex<(store: StoreState, nextWaiter: UInt64)>((.unclaimed, 0))

    init(disk: any DataCaching, url: URL, data: Data, info: CacheEntryInfo, replacesStoredBytes: Bool, promotes: Bool = false) {
        self.disk = disk
        self.url = url
        self.data = data
        self.info = info
        self.replacesStoredBytes = replacesStoredBytes
        self.promotes = promotes
    }

    /// The promotion of `cached`, read from `disk` under `url`, when the cache asks for one.
    static func promotion(of cached: CachedData, from disk: any DataCaching, url: URL) -> PendingStore? {
        guard cached.promotesAfterDecode else { return nil }
        return PendingStore(disk: disk, url: url, data: cached.data, info: cached.info, replacesStoredBytes: false, promotes: true)
    }

    /// Stores the bytes if nobody has yet: they decoded, so they are a complete answer. With
    /// the `placeholder` of the picture they decoded to, kept in the entry's info; or, when
    /// given, `write` does the writing (for the caller that claims only).
    ///
    /// Returns once the bytes are in the cache, whoever wrote them: a caller that decoded them
    /// too waits for the first one's write, so a request made after it answers (another size
    /// of the same download) finds the entry instead of loading the bytes again.
    func storeOnce(placeholder: ThumbHash? = nil, write: (@Sendable (PendingStore) async -> Void)? = nil) async {
        let claimed = state.withLock { state -> Bool in
            guard case .unclaimed = state.store else { return false }
            state.store = .storing(waiters: [:])
            return true
        }
        guard claimed else { return await waitForStore() }
        defer { finishStore() }
        if let write { return await write(self) }
        var info = info
        info.placeholder = placeholder ?? info.placeholder
        if promotes {
            await disk.promoteData(data, info: info, for: url)
        } else {
            await disk.storeData(data, info: info, for: url)
        }
    }

    /// Waits until the claimant's write ends (or this task is cancelled).
    private func waitForStore() async {
        let id = state.withLock { state -> UInt64 in
            state.nextWaiter += 1
            return state.nextWaiter
        }
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let waits = state.withLock { state -> Bool in
                    guard case .storing(var waiters) = state.store, !Task.isCancelled else { return false }
                    waiters[id] = continuation
                    state.store = .storing(waiters: waiters)
                    return true
                }
                if !waits { continuation.resume() }
            }
        } onCancel: {
            let waiter = state.withLock { state -> CheckedContinuation<Void, Never>? in
                guard case .storing(var waiters) = state.store, let waiter = waiters.removeValue(forKey: id) else { return nil }
                state.store = .storing(waiters: waiters)
                return waiter
            }
            waiter?.resume()
        }
    }

    private func finishStore() {
        let waiters = state.withLock { state -> [CheckedContinuation<Void, Never>] in
            defer { state.store = .stored }
            guard case .storing(let waiters) = state.store else { return [] }
            return Array(waiters.values)
        }
        for waiter in waiters { waiter.resume() }
    }

    /// Tells the disk cache a loader's bytes will not be stored (they did not decode); bytes
    /// to promote are simply not promoted.
    func abandon() async {
        guard !promotes else { return }
        await disk.abandonStore(for: url)
    }
}
