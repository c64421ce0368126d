import Foundation

// Getting the bytes: the disk cache, the loader, revalidation.
extension ImagePipeline {
    /// The bytes for `url`: the disk cache (under `cacheURL`, the URL's cache identity) when it
    /// may be used, else the loader (storing the result on disk), reporting its progress to the
    /// work's ``InFlightWork/progress``. Runs as a download work's task.
    func performDownload(request: ImageRequest, url: URL, cacheURL: URL, work: InFlightWork<LoadedData>) async throws -> LoadedData {
        try Task.checkCancellation()
        let priority = work.priority
        let relay = work.progress
        let progress: @Sendable (Int64, Int64?) -> Void = { relay.send(ImageTask.Progress(completed: $0, total: $1)) }
        let disk = configuration.diskCachedSchemes.contains(url.scheme?.lowercased() ?? "") ? configuration.diskCache : nil
        if request.cachePolicy != .reloadIgnoringCaches, let disk, let cached = await disk.cachedData(for: cacheURL) {
            let fresh = cached.info.isFresh(at: configuration.now())
            emit(.diskHit(url, fresh: fresh))
            var stored = LoadedData(data: cached.data, source: .disk)
            stored.generation = replacements
            stored.info = cached.info
            if fresh || request.cachePolicy == .returnCacheDataDontLoad {
                return stored
            }
            if request.revalidation == .staleWhileRevalidate {
                revalidateInBackground(url: url, cacheURL: cacheURL, headers: request.headers)
                stored.isStale = true
                return stored
            }
            do {
                return try await revalidate(url: url, cacheURL: cacheURL, cached: cached, headers: request.headers,
                                            priority: priority, progress: progress)
            } catch is CancellationError {
                throw CancellationError()
            } catch {
                return stored  // offline: the stale copy still serves
            }
        }
        if request.cachePolicy == .returnCacheDataDontLoad { throw ImagePipelineError.notCached }
        try Task.checkCancellation()
        let loader = try configuration.loaders.requireLoader(for: url)
        let load = DataLoadRequest(url: url, priority: priority, headers: request.headers, progress: progress,
                                   cacheURL: cacheURL == url ? nil : cacheURL)
        switch try await loader.load(load) {
        case .data(let data, let metadata):
            emit(.loaded(url, bytes: data.count))
            var loaded = LoadedData(data: data, source: .network)
            loaded.downloadedBytes = data.count
            if let disk, !metadata.noStore {
                // Stored by the first decode that succeeds (``performDecode``), never before.
                let info = CacheEntryInfo(metadata, receivedAt: configuration.now())
                loaded.info = info
                loaded.pendingStore = PendingStore(disk: disk, data: data, info: info, replacesStoredBytes: false)
            } else if let disk, request.cachePolicy == .reloadIgnoringCaches {
                await disk.removeData(for: cacheURL)  // a reload may have skipped an entry these bytes replace
            }
            return loaded
        case .notModified:
            throw ImagePipelineError.unexpectedNotModified
        }
    }

    /// Asks the origin whether `cached` (stored under `cacheURL`) is current: 304 refreshes its
    /// info, new bytes replace it.
    private func revalidate(url: URL, cacheURL: URL, cached: CachedData, headers: [String: String],
                            priority: PriorityHandle,
                            progress: (@Sendable (Int64, Int64?) -> Void)? = nil) async throws -> LoadedData {
        let loader = try configuration.loaders.requireLoader(for: url)
        let load = DataLoadRequest(url: url, priority: priority, validator: cached.info.validator, headers: headers,
                                   progress: progress, cacheURL: cacheURL == url ? nil : cacheURL)
        let result = try await loader.load(load)
        let now = configuration.now()
        switch result {
        case .notModified(let metadata):
            var info = CacheEntryInfo(metadata, receivedAt: now)
            info.etag = info.etag ?? cached.info.etag
            info.lastModified = info.lastModified ?? cached.info.lastModified
            await configuration.diskCache?.updateInfo(info, for: cacheURL)
            emit(.revalidated(url, modified: false))
            var loaded = LoadedData(data: cached.data, source: .revalidated)
            loaded.info = info
            return loaded
        case .data(let data, let metadata):
            emit(.loaded(url, bytes: data.count))
            emit(.revalidated(url, modified: true))
            var loaded = LoadedData(data: data, source: .network)
            loaded.downloadedBytes = data.count
            loaded.staleFallback = cached.data
            if metadata.noStore {
                await configuration.diskCache?.removeData(for: cacheURL)
                dropDecodedCopies(of: cacheURL)
            } else if let disk = configuration.diskCache {
                // Replaces the stored bytes (and drops decoded copies of them) once it decodes.
                let info = CacheEntryInfo(metadata, receivedAt: now)
                loaded.info = info
                loaded.pendingStore = PendingStore(disk: disk, data: data, info: info, replacesStoredBytes: true)
            }
            return loaded
        }
    }

    /// Stale-while-revalidate: checks `url` with the origin in the background, once at a time per
    /// cache identity `cacheURL` (where the copy is stored). A failure (offline) keeps the stale
    /// copy. ``waitForBackgroundWork()`` waits for these.
    func revalidateInBackground(url: URL, cacheURL: URL, headers: [String: String]) {
        guard !revalidating.contains(cacheURL) else { return }
        revalidating.insert(cacheURL)
        let id = nextID()
        background[id] = Task {
            if let cached = await self.configuration.diskCache?.cachedData(for: cacheURL),
               let loaded = try? await self.revalidate(url: url, cacheURL: cacheURL, cached: cached, headers: headers,
                                                       priority: PriorityHandle(.prefetch)),
               let store = loaded.pendingStore {
                // Nobody decodes these bytes now: they replace the stored copy only once they decode.
                if await self.decodes(loaded.data), store.claim() {
                    self.dropDecodedCopies(of: cacheURL)
                    await store.disk.storeData(store.data, info: store.info, for: cacheURL)
                }
            }
            self.revalidating.remove(cacheURL)
            self.background[id] = nil
        }
    }

    /// Whether `data` decodes (a small decode on the decode pool, at prefetch priority): the
    /// check new bytes pass before they replace a stored copy nobody is waiting for.
    private func decodes(_ data: Data) async -> Bool {
        let decoders = configuration.decoders
        let options = DecodeOptions(targetSize: PixelSize(width: 64, height: 64), maxPixelCount: configuration.maxPixelCount)
        let decoded: Bool? = try? await decodePool.run(priority: PriorityHandle(.prefetch)) {
            _ = try decoders.requireDecoder(for: data).decode(data, options: options)
            return true
        }
        return decoded == true
    }
}
