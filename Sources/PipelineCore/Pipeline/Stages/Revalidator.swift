import Foundation

/// Revalidation: asks the origin whether stored bytes are current, with the validators they
/// were stored with (`If-None-Match`, `If-Modified-Since`). One path for originals (their
/// disk entry) and standalone renditions (the validators of the original they were made
/// from); each caller keeps what the answer means for its own entry. Also runs
/// stale-while-revalidate checks in the background, once at a time per cache identity.
///
/// Runs on the pipeline actor; the background tasks are this type's state.
final class Revalidator {
    /// What the origin answered.
    enum Answer {
        /// 304: the stored bytes are current; `info` is the answer's freshness and validators
        /// (each validator the answer lacks is `nil`: keep the stored one).
        case notModified(CacheEntryInfo)
        /// New bytes (from the network; `info` set unless the answer was `no-store`).
        case modified(LoadedData, noStore: Bool)
    }

    /// Background revalidations (and, in the pipeline, prefetches) that
    /// ``ImagePipeline/waitForBackgroundWork()`` waits for, by id.
    private(set) var background: [UInt64: Task<Void, Never>] = [:]
    /// Cache identities being revalidated in the background.
    private var revalidating: Set<URL> = []

    /// Sends `resolved`'s conditional request with `validator`.
    func ask(_ resolved: ResolvedRequest, validator: CacheValidator?, priority: PriorityHandle,
             progress: (@Sendable (Int64, Int64?) -> Void)? = nil, in pipeline: isolated ImagePipeline) async throws -> Answer {
        let configuration = pipeline.configuration
        let loader = try configuration.loaders.requireLoader(for: resolved.fetchURL)
        let result = try await loader.load(resolved.loadRequest(priority: priority, validator: validator, progress: progress))
        let now = configuration.now(), freshness = resolved.freshnessPolicy(in: configuration)
        switch result {
        case .notModified(let metadata):
            pipeline.emit(.revalidated(resolved.fetchURL, modified: false))
            return .notModified(CacheEntryInfo(metadata, receivedAt: now, freshness: freshness))
        case .data(let data, let metadata):
            pipeline.emit(.loaded(resolved.fetchURL, bytes: data.count))
            pipeline.emit(.revalidated(resolved.fetchURL, modified: true))
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
                            priority: PriorityHandle, progress: (@Sendable (Int64, Int64?) -> Void)? = nil,
                            in pipeline: isolated ImagePipeline) async throws -> LoadedData {
        let read = pipeline.ledger.current
        switch try await ask(resolved, validator: cached.info.validator, priority: priority, progress: progress, in: pipeline) {
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
                pipeline.dropDecodedCopies(of: resolved.cacheURL)
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
    func revalidateInBackground(_ resolved: ResolvedRequest, disk: any DataCaching, in pipeline: isolated ImagePipeline) {
        let cacheURL = resolved.cacheURL
        guard !revalidating.contains(cacheURL) else { return }
        revalidating.insert(cacheURL)
        let id = pipeline.nextID()
        background[id] = Task {
            await self.revalidateQuietly(resolved, disk: disk, in: pipeline)
            self.revalidating.remove(cacheURL)
            self.background[id] = nil
        }
    }

    private func revalidateQuietly(_ resolved: ResolvedRequest, disk: any DataCaching, in pipeline: isolated ImagePipeline) async {
        guard let cached = await disk.cachedData(for: resolved.cacheURL),
              let loaded = try? await revalidateOriginal(cached, for: resolved, disk: disk,
                                                         priority: PriorityHandle(.prefetch), in: pipeline),
              let store = loaded.pendingStore else { return }
        if await pipeline.decoder.decodes(loaded.data), store.claim() {
            pipeline.dropDecodedCopies(of: resolved.cacheURL)
            await disk.storeData(store.data, info: store.info, for: resolved.cacheURL)
        }
    }

    /// Cancels every background revalidation.
    func cancelAll() {
        for task in background.values { task.cancel() }
    }
}
