import Synchronization

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Revalidation: asks the origin whether stored bytes are current, with the validators they
/// were stored with (`If-None-Match`, `If-Modified-Since`). One path for originals (their
/// disk entry) and standalone renditions (the validators of the original they were made
/// from); each caller keeps what the answer means for its own entry. Also runs
/// stale-while-revalidate checks in the background, once at a time per cache identity.
/// Part of the fetching stage: it knows the loaders and the disk cache.
final class Revalidator: Sendable {
    /// What the origin answered.
    enum Answer {
        /// 304: the stored bytes are current; `info` is the answer's freshness and validators
        /// (each validator the answer lacks is `nil`: keep the stored one).
        case notModified(CacheEntryInfo)
        /// New bytes (from the network; `info` set unless the answer was `no-store`).
        case modified(LoadedData, noStore: Bool)
    }

    private struct State {
        /// Background revalidations, by id.
        var background: [UInt64: Task<Void, Never>] = [:]
        /// Cache identities being revalidated in the background.
        var revalidating: Set<URL> = []
    }

    private let state = Mutex(State())
    private let configuration: ImagePipeline.Configuration
    private let ledger: ReplacementLedger
    private let decoder: PoolDecoder

    init(configuration: ImagePipeline.Configuration, ledger: ReplacementLedger, decoder: PoolDecoder) {
        self.configuration = configuration
        self.ledger = ledger
        self.decoder = decoder
    }

    /// A background revalidation still running, if any (``ImagePipeline/waitForBackgroundWork()``).
    var anyBackgroundTask: Task<Void, Never>? { state.withLock { $0.background.values.first } }

    /// Sends `resolved`'s conditional request with `validator`.
    func ask(_ resolved: ResolvedRequest, validator: CacheValidator?, priority: PriorityHandle,
             progress: (@Sendable (Int64, Int64?) -> Void)? = nil) async throws -> Answer {
        let loader = try configuration.loaders.requireLoader(for: resolved.fetchURL)
        let result = try await loader.load(resolved.loadRequest(priority: priority, validator: validator, progress: progress))
        let now = configuration.now(), freshness = resolved.freshnessPolicy(in: configuration)
        switch result {
        case .notModified(let metadata):
            configuration.emit(.revalidated(resolved.fetchURL, modified: false))
            return .notModified(CacheEntryInfo(metadata, receivedAt: now, freshness: freshness))
        case .data(let data, let metadata):
            configuration.emit(.loaded(resolved.fetchURL, bytes: data.count))
            configuration.emit(.revalidated(resolved.fetchURL, modified: true))
            var loaded = LoadedData(data: data, source: ImageSource(metadata.origin), generation: nil)
            loaded.downloadedBytes = data.count
            if !metadata.noStore { loaded.info = CacheEntryInfo(metadata, receivedAt: now, freshness: freshness) }
            return .modified(loaded, noStore: metadata.noStore)
        }
    }

    /// Revalidates the original `cached` (stored under `resolved.cacheURL`): a 304 refreshes its
    /// info on disk and serves it; new bytes come back to replace it once they decode (dropping
    /// decoded copies of the old bytes then), or, `no-store`, replace it at once.
    func revalidateOriginal(_ cached: CachedData, for resolved: ResolvedRequest, disk: any DataCaching,
                            priority: PriorityHandle, progress: (@Sendable (Int64, Int64?) -> Void)? = nil) async throws -> LoadedData {
        let read = ledger.current
        switch try await ask(resolved, validator: cached.info.validator, priority: priority, progress: progress) {
        case .notModified(var info):
            info.etag = info.etag ?? cached.info.etag
            info.lastModified = info.lastModified ?? cached.info.lastModified
            info.placeholder = cached.info.placeholder  // the same bytes: the same picture
            await disk.updateInfo(info, for: resolved.cacheURL)
            var loaded = LoadedData(data: cached.data, source: .revalidated, generation: read)
            loaded.info = info
            // A farther level's bytes, still to prove they decode: promoted with the new info.
            loaded.pendingStore = PendingStore.promotion(of: CachedData(data: cached.data, info: info,
                                                                        promotesAfterDecode: cached.promotesAfterDecode),
                                                         from: disk, url: resolved.cacheURL)
            return loaded
        case .modified(var loaded, let noStore):
            loaded.staleFallback = (cached.data, read)
            if noStore {
                await disk.removeData(for: resolved.cacheURL)
                ledger.replace(resolved.cacheURL)
            } else if let info = loaded.info {
                loaded.pendingStore = PendingStore(disk: disk, url: resolved.cacheURL, data: loaded.data, info: info,
                                                   replacesStoredBytes: true)
            }
            return loaded
        }
    }

    /// Stale-while-revalidate: checks `resolved` with the origin in the background, once at a
    /// time per cache identity. A failure (offline) keeps the stale copy; new bytes replace it
    /// only once they decode (nobody waits for them, so a small check decode on the pool).
    func revalidateInBackground(_ resolved: ResolvedRequest, disk: any DataCaching) {
        let cacheURL = resolved.cacheURL, id = nextStageID()
        state.withLock { state in
            guard state.revalidating.insert(cacheURL).inserted else { return }
            state.background[id] = Task {
                await self.revalidateQuietly(resolved, disk: disk)
                self.state.withLock { state in
                    state.revalidating.remove(cacheURL)
                    state.background[id] = nil
                }
            }
        }
    }

    private func revalidateQuietly(_ resolved: ResolvedRequest, disk: any DataCaching) async {
        guard let cached = await disk.cachedData(for: resolved.cacheURL),
              let loaded = try? await revalidateOriginal(cached, for: resolved, disk: disk, priority: PriorityHandle(.prefetch)),
              let store = loaded.pendingStore else { return }
        if await decoder.decodes(loaded.data) {
            let ledger = ledger
            await store.storeOnce { store in
                ledger.replace(resolved.cacheURL)
                await disk.storeData(store.data, info: store.info, for: resolved.cacheURL)
            }
        }
    }

    /// Cancels every background revalidation.
    func cancelAll() {
        for task in state.withLock({ Array($0.background.values) }) { task.cancel() }
    }
}
