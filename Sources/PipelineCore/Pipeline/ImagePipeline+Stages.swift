import Foundation

// The decode stage of one load (bytes from the download stage, then decoding off the actor),
// and what every stage shares: errors wrapped with the URL, the negative cache, replacements.
extension ImagePipeline {
    /// Gets the bytes (joining the download for the fetch URL), then decodes and resamples on
    /// the decode pool, stores the result in memory and returns it. Runs as a decode work's task.
    /// A permanent failure is remembered in the negative cache: a download's (404) for the fetch
    /// URL (by the download work), a decode's (undecodable bytes) for this key only.
    ///
    /// Bytes a loader returned reach the disk cache only here, once they decoded: a broken body
    /// (a truncated or mislabelled answer from a CDN edge) is never stored. When new bytes from a
    /// revalidation do not decode, the stale copy they were to replace answers instead. They are
    /// stored as the original when a request of this work keeps originals (``DiskCachePolicy``)
    /// or they replace a stored original; a work that makes a rendition looks it up first and
    /// stores it after.
    func performDecode(request: ImageRequest, key: ImageKey, work: InFlightWork<ImageResponse>) async throws -> ImageResponse {
        try Task.checkCancellation()
        if !key.processors.isEmpty { return try await performProcessing(request: request, key: key, work: work) }
        let url = fetchURL(for: request)
        var generation = replacements
        let (rendition, renewed, answer) = try await lookUpRendition(request: request, key: key, work: work, generation: generation)
        if let answer { return answer }
        let loaded: LoadedData
        if let renewed {
            loaded = renewed.loaded
        } else {
            let download = downloadWork(for: request, url: url, cacheURL: key.fetchURL)
            loaded = try await wait(on: download, in: downloads, key: key.fetchURL, priority: work.priority.current,
                                    upstreamOf: work)
        }
        try Task.checkCancellation()

        var response: ImageResponse, seconds: TimeInterval
        do {
            (response, seconds) = try await decodeOnPool(loaded.data, source: loaded.source, key: key, priority: work.priority,
                                                          origin: originInfo(of: loaded))
            if let store = loaded.pendingStore, work.storesOriginal || store.replacesStoredBytes, store.claim() {
                // Decoded: these bytes are a complete answer and may be kept.
                if store.replacesStoredBytes { dropDecodedCopies(of: key.fetchURL) }
                await store.disk.storeData(store.data, info: store.info, for: key.fetchURL)
            }
            if renewed != nil {
                // New bytes replace those the rendition (and any decoded copy) was made from.
                dropDecodedCopies(of: key.fetchURL)
                generation = replacements
            }
        } catch let error where !(error is CancellationError) {
            let wrapped = Self.wrap(error, decoding: url)
            if let store = loaded.pendingStore { await store.disk.abandonStore(for: key.fetchURL) }
            if let stale = renewed?.stale, let rendition,
               var answer = await decodeRendition(stale, in: rendition, key: key, priority: work.priority) {
                // New bytes for a rendition that do not decode: the stored rendition answers.
                answer.warnings.append("the revalidated bytes did not decode (\(wrapped)); the stored rendition was used")
                emit(.renditionHit(key))
                return answer
            }
            guard let stale = loaded.staleFallback else {
                if wrapped.isPermanent, let until = failureLifetime() { decodeFailures.insert(wrapped, until: until, for: key) }
                throw wrapped
            }
            // New bytes from a revalidation that do not decode: keep serving the stored copy.
            do {
                (response, seconds) = try await decodeOnPool(stale, source: .disk, key: key, priority: work.priority)
            } catch let error where !(error is CancellationError) {
                throw Self.wrap(error, decoding: url)
            }
            response.warnings.append("the revalidated bytes did not decode (\(wrapped)); the stored copy was used")
        }
        decodeFailures.removeValue(for: key)
        emit(.decoded(key, seconds: seconds))
        response.downloadedBytes = loaded.downloadedBytes
        response.isStale = loaded.isStale
        let replaced = renewed == nil && loaded.pendingStore == nil && replacedGeneration(of: key.fetchURL) > loaded.generation
        if !replaced { memoryCache.insert(response, for: key, cost: response.bitmap.cost) }
        if let rendition, !replaced, replacements == generation {
            await storeRendition(response, in: rendition, key: key, priority: work.priority, generation: generation,
                                 standalone: !work.storesOriginal)
        }
        return response
    }

    /// The info a rendition of a decode of `loaded` records, when renditions may be made and
    /// the bytes may be kept (`nil` for a `no-store` answer).
    func originInfo(of loaded: LoadedData) -> CacheEntryInfo? {
        configuration.renditionEncoder != nil && configuration.diskCache != nil ? loaded.info : nil
    }

    /// New bytes replace the stored ones for `url`: decoded copies of the old bytes must not
    /// answer again, nor be put in memory by a decode of them still running.
    func dropDecodedCopies(of url: URL) {
        replacements += 1
        replacedAt.insert(replacements, for: url, cost: 1)
        memoryCache.removeValues { $0.fetchURL == url }
    }

    /// When the stored bytes of `url` (a cache identity) were last replaced or removed.
    func replacedGeneration(of url: URL) -> UInt64 {
        max(replacedAt.value(for: url) ?? 0, allReplacedAt)
    }

    /// A loader's or decoder's error as callers see it: wrapped with the URL
    /// (``ImagePipelineError/loadingFailed(_:underlying:)``), unless it already is.
    static func wrap(_ error: any Error, loading url: URL) -> ImagePipelineError {
        if let own = error as? ImagePipelineError, own.isWrapped { return own }
        return .loadingFailed(url, underlying: error)
    }

    /// As ``wrap(_:loading:)``, for a processor's error.
    static func wrap(_ error: any Error, processing url: URL) -> ImagePipelineError {
        if let own = error as? ImagePipelineError, own.isWrapped { return own }
        return .processingFailed(url, underlying: error)
    }

    /// As ``wrap(_:loading:)``, for decoding.
    static func wrap(_ error: any Error, decoding url: URL) -> ImagePipelineError {
        if let own = error as? ImagePipelineError, own.isWrapped { return own }
        return .decodingFailed(url, underlying: error)
    }

    /// Remembers a permanent download failure for the negative cache's lifetime.
    func rememberFailure(_ error: ImagePipelineError, for url: URL) {
        if error.isPermanent, let until = failureLifetime() { failures.insert(error, until: until, for: url) }
    }

    /// Until when a permanent failure is remembered from now, or `nil` with no negative cache.
    func failureLifetime() -> Date? {
        guard configuration.negativeCacheLifetime > 0 else { return nil }
        return configuration.now().addingTimeInterval(configuration.negativeCacheLifetime)
    }
}
