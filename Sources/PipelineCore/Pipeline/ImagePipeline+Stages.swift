import Foundation

// The stages of one load: data (disk cache or loader), then decode and resample off the actor.
extension ImagePipeline {
    /// Gets the bytes (joining the download for the fetch URL), then decodes and resamples on
    /// the decode pool, stores the result in memory and returns it. Runs as a decode work's task.
    /// A permanent failure is remembered in the negative cache: a download's (404) for the fetch
    /// URL (by the download work), a decode's (undecodable bytes) for this key only.
    func performDecode(request: ImageRequest, key: ImageKey, work: InFlightWork<ImageResponse>) async throws -> ImageResponse {
        try Task.checkCancellation()
        let download = downloadWork(for: request, url: key.fetchURL)
        download.raise(to: work.priority.current)
        work.upstream = download.priority
        let loaded = try await wait(on: download, table: .download(key.fetchURL))
        try Task.checkCancellation()
        let priority = work.priority

        let decoders = configuration.decoders
        let maxPixels = configuration.maxPixelCount
        let clock = configuration.now
        let response: ImageResponse, seconds: TimeInterval
        do {
            (response, seconds) = try await decodePool.run(priority: priority) {
                let start = clock()
                let response = try Self.decode(loaded, key: key, decoders: decoders, maxPixelCount: maxPixels)
                return (response, clock().timeIntervalSince(start))
            }
        } catch let error as ImagePipelineError {
            if let until = failureLifetime(error) { decodeFailures[key] = (until, error) }
            throw error
        }
        decodeFailures[key] = nil
        emit(.decoded(key, seconds: seconds))
        memoryCache.insert(response, for: key, cost: response.bitmap.cost)
        return response
    }

    /// Decodes `loaded` to the size `key` asks for. Runs on the decode pool.
    static func decode(_ loaded: LoadedData, key: ImageKey, decoders: DecoderRegistry,
                       maxPixelCount: Int) throws -> ImageResponse {
        let decoder = try decoders.requireDecoder(for: loaded.data)
        let info = try decoder.readInfo(loaded.data)
        var options = DecodeOptions(appliesOrientation: key.processing.appliesOrientation,
                                    strict: key.processing.strictDecoding, maxPixelCount: maxPixelCount)
        try options.checkPixelLimit(info)
        let upright = options.appliesOrientation ? info.uprightSize : info.size
        let plan = ResizePlan(source: upright, target: key.targetSize, contentMode: key.contentMode,
                              allowsUpscaling: key.processing.allowsUpscaling)
        options.targetSize = plan.scaledSize == upright ? nil : plan.scaledSize
        let decoded = try decoder.decode(loaded.data, options: options)
        let bitmap = decoded.bitmap.size == plan.outputSize && plan.crop == PixelRect(upright)
            ? decoded.bitmap
            : Resampler.resample(decoded.bitmap, plan: plan)
        return ImageResponse(bitmap: bitmap, source: loaded.source, originalSize: upright, format: info.format,
                             warnings: decoded.warnings)
    }

    /// Remembers a permanent download failure for the negative cache's lifetime.
    func rememberFailure(_ error: ImagePipelineError, for url: URL) {
        if let until = failureLifetime(error) { failures[url] = (until, error) }
    }

    /// Until when `error` is remembered, or `nil` when it is not (not permanent, or no negative cache).
    private func failureLifetime(_ error: ImagePipelineError) -> Date? {
        guard error.isPermanent, configuration.negativeCacheLifetime > 0 else { return nil }
        return configuration.now().addingTimeInterval(configuration.negativeCacheLifetime)
    }

    /// The bytes for `url`: the disk cache when it may be used, else the loader (storing the
    /// result on disk). Runs as a download work's task.
    func performDownload(request: ImageRequest, url: URL, priority: PriorityHandle) async throws -> LoadedData {
        try Task.checkCancellation()
        let disk = configuration.diskCachedSchemes.contains(url.scheme?.lowercased() ?? "") ? configuration.diskCache : nil
        if request.cachePolicy != .reloadIgnoringCaches, let disk, let cached = await disk.cachedData(for: url) {
            let fresh = cached.info.isFresh(at: configuration.now())
            emit(.diskHit(url, fresh: fresh))
            if fresh || request.cachePolicy == .returnCacheDataDontLoad {
                return LoadedData(data: cached.data, source: .disk)
            }
            if request.revalidation == .staleWhileRevalidate {
                revalidateInBackground(url: url, cached: cached.info, headers: request.headers)
                return LoadedData(data: cached.data, source: .disk)
            }
            do {
                return try await revalidate(url: url, cached: cached, headers: request.headers, priority: priority)
            } catch is CancellationError {
                throw CancellationError()
            } catch {
                return LoadedData(data: cached.data, source: .disk)  // offline: the stale copy still serves
            }
        }
        if request.cachePolicy == .returnCacheDataDontLoad { throw ImagePipelineError.notCached }
        try Task.checkCancellation()
        let loader = try configuration.loaders.requireLoader(for: url)
        let load = DataLoadRequest(url: url, priority: priority, headers: request.headers)
        switch try await loader.load(load) {
        case .data(let data, let metadata):
            emit(.loaded(url, bytes: data.count))
            if let disk, !metadata.noStore {
                await disk.storeData(data, info: CacheEntryInfo(metadata, receivedAt: configuration.now()), for: url)
            } else if let disk, request.cachePolicy == .reloadIgnoringCaches {
                await disk.removeData(for: url)  // a reload may have skipped an entry these bytes replace
            }
            return LoadedData(data: data, source: .network)
        case .notModified:
            throw ImagePipelineError.unexpectedNotModified
        }
    }

    /// Asks the origin whether `cached` is current: 304 refreshes its info, new bytes replace it.
    private func revalidate(url: URL, cached: CachedData, headers: [String: String],
                            priority: PriorityHandle) async throws -> LoadedData {
        let loader = try configuration.loaders.requireLoader(for: url)
        let load = DataLoadRequest(url: url, priority: priority, validator: cached.info.validator, headers: headers)
        let result = try await loader.load(load)
        let now = configuration.now()
        switch result {
        case .notModified(let metadata):
            var info = CacheEntryInfo(metadata, receivedAt: now)
            info.etag = info.etag ?? cached.info.etag
            info.lastModified = info.lastModified ?? cached.info.lastModified
            await configuration.diskCache?.updateInfo(info, for: url)
            emit(.revalidated(url, modified: false))
            return LoadedData(data: cached.data, source: .revalidated)
        case .data(let data, let metadata):
            emit(.loaded(url, bytes: data.count))
            if metadata.noStore {
                await configuration.diskCache?.removeData(for: url)
            } else {
                await configuration.diskCache?.storeData(data, info: CacheEntryInfo(metadata, receivedAt: now), for: url)
            }
            // The picture changed: decoded copies of the old bytes must not answer again.
            memoryCache.removeValues { $0.fetchURL == url }
            emit(.revalidated(url, modified: true))
            return LoadedData(data: data, source: .network)
        }
    }

    /// Stale-while-revalidate: checks `url` with the origin in the background, once at a time.
    /// A failure (offline) keeps the stale copy. ``waitForBackgroundWork()`` waits for these.
    private func revalidateInBackground(url: URL, cached info: CacheEntryInfo, headers: [String: String]) {
        guard !revalidating.contains(url) else { return }
        revalidating.insert(url)
        let id = nextID()
        background[id] = Task {
            if let cached = await self.configuration.diskCache?.cachedData(for: url) {
                _ = try? await self.revalidate(url: url, cached: cached, headers: headers,
                                               priority: PriorityHandle(.prefetch))
            }
            self.revalidating.remove(url)
            self.background[id] = nil
        }
    }
}
