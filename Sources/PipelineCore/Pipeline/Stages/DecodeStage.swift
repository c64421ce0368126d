import Foundation

/// The decoding stage: an unprocessed key's picture, from its bytes (``FetchStage``) decoded
/// and resampled to the key's size on the decode pool (``PoolDecoder``), or from its stored
/// rendition (``RenditionStage``) when the request's ``DiskCachePolicy`` makes one. One decode
/// per key however many callers wait.
///
/// Bytes a loader returned reach the disk cache only here, once they decoded: a broken body
/// (a truncated or mislabelled answer from a CDN edge) is never stored. When new bytes from a
/// revalidation do not decode, the stale copy they were to replace answers instead. They are
/// stored as the original when a request of this work keeps originals or they replace a stored
/// original. A permanent decode failure (undecodable bytes) is remembered for this key only.
/// Runs on the pipeline actor.
struct DecodeStage {
    /// Decodes in flight, by key (keys without processors).
    let decodes: InFlightTable<ImageKey, ImageResponse>
    /// Remembered permanent decode failures, by key (``RememberedFailures/decodes``).
    let failures: NegativeCache<ImageKey>

    init(tableID: Int, failures: NegativeCache<ImageKey>) {
        decodes = InFlightTable(id: tableID)
        self.failures = failures
    }

    /// The decode work for `resolved`'s key: joined when one is in flight, else created and
    /// started. `asBaseStoringOriginal`, for the unprocessed decode a processed work waits on:
    /// no rendition of its own, and originals kept as the processed work's policy says.
    func work(for resolved: ResolvedRequest, asBaseStoringOriginal: Bool? = nil,
              in pipeline: isolated ImagePipeline) -> InFlightWork<ImageResponse> {
        decodes.work(for: resolved, asBaseStoringOriginal: asBaseStoringOriginal, in: pipeline) { pipeline, work in
            try await pipeline.decoding.perform(resolved, work: work, in: pipeline)
        }
    }

    /// A decode work's task.
    private func perform(_ resolved: ResolvedRequest, work: InFlightWork<ImageResponse>,
                         in pipeline: isolated ImagePipeline) async throws -> ImageResponse {
        try Task.checkCancellation()
        let key = resolved.key
        let lookup = try await pipeline.renditions.lookUp(resolved, work: work, in: pipeline)
        if let answer = lookup.answer { return answer }
        let loaded: LoadedData
        if let renewed = lookup.renewed {
            loaded = renewed.loaded
        } else {
            if let policy = pipeline.configuration.previewPolicy {
                work.previewFeed = PreviewFeed(.decoding(key), policy: policy, decoder: pipeline.decoder,
                                               priority: work.priority, output: work.previews,
                                               events: pipeline.configuration.eventHandler)
            }
            // The bytes are all here (or did not come): no preview after this, so none after the final.
            defer { work.previewFeed?.finish() }
            loaded = try await pipeline.fetch.bytes(for: resolved, priority: work.priority.current, upstreamOf: work, in: pipeline)
        }
        try Task.checkCancellation()
        return try await decode(loaded, lookup: lookup, for: resolved, work: work, in: pipeline)
    }

    /// A decode work's bytes, decoded: stored on disk once they decode, a permanent failure
    /// remembered, a stale copy or rendition answering for new bytes that do not decode.
    ///
    /// Never inlined into ``perform(_:work:in:)``: an async function's frame holds every local
    /// of its body, inlined callees' included, for as long as it runs, and the task keeps the
    /// largest frames it ever held. Kept apart, a decode waiting for its bytes (each of many
    /// thousand requests to slow hosts, or queued in the loader) holds the few values above it,
    /// not the tens of kilobytes this part's frame takes.
    @inline(never)
    private func decode(_ loaded: LoadedData, lookup: RenditionStage.Lookup, for resolved: ResolvedRequest,
                        work: InFlightWork<ImageResponse>, in pipeline: isolated ImagePipeline) async throws -> ImageResponse {
        let key = resolved.key
        var generation = loaded.generation
        var response: ImageResponse, seconds: TimeInterval
        let origin = pipeline.renditions.originInfo(of: loaded, configuration: pipeline.configuration)
        do {
            // Stored bytes whose entry has a placeholder keep it: no hash is made again.
            let stored = loaded.info?.placeholder
            // The processing works waiting on this decode have their processors run in its job.
            (response, seconds) = try await pipeline.decoder.decode(loaded.data, source: loaded.source, key: key,
                                                                    priority: work.priority, origin: origin,
                                                                    placeholder: stored == nil, followUps: work.followUps)
            response.placeholder = response.placeholder ?? stored
            if let store = loaded.pendingStore, work.disk.storesOriginal || store.replacesStoredBytes {
                // Decoded: these bytes are a complete answer and may be kept.
                if store.replacesStoredBytes { pipeline.dropDecodedCopies(of: resolved.cacheURL) }
                await store.storeOnce(placeholder: response.placeholder)
            }
            if lookup.renewed != nil {
                // New bytes replace those the rendition (and any decoded copy) was made from.
                pipeline.dropDecodedCopies(of: resolved.cacheURL)
            }
        } catch let error where !(error is CancellationError) {
            let wrapped = ImagePipelineError.wrap(error, decoding: resolved.fetchURL)
            if let store = loaded.pendingStore { await store.abandon() }
            if let answer = await pipeline.renditions.fallBack(from: lookup, after: wrapped, key: key, priority: work.priority,
                                                               in: pipeline) {
                return answer
            }
            guard let stale = loaded.staleFallback else {
                if wrapped.isPermanent, let until = pipeline.failureLifetime() { failures.insert(wrapped, until: until, for: key) }
                throw wrapped
            }
            // New bytes from a revalidation that do not decode: keep serving the stored copy.
            do {
                (response, seconds) = try await pipeline.decoder.decode(stale.data, source: .disk, key: key, priority: work.priority)
            } catch let error where !(error is CancellationError) {
                throw ImagePipelineError.wrap(error, decoding: resolved.fetchURL)
            }
            generation = stale.generation
            response.warnings.append("the revalidated bytes did not decode (\(wrapped)); the stored copy was used")
        }
        failures.removeValue(for: key)
        // Bytes fresh from the origin are the newest (kept in memory whatever was replaced
        // meanwhile); from here on, a purge still stops the rendition made from them.
        if generation == nil { generation = pipeline.ledger.current }
        pipeline.emit(.decoded(key, seconds: seconds))
        response.downloadedBytes = loaded.downloadedBytes
        response.isStale = loaded.isStale
        if pipeline.keep(response, for: key, madeFrom: generation), let rendition = lookup.store {
            await pipeline.renditions.store(response, in: rendition, key: key, priority: work.priority, madeFrom: generation,
                                            standalone: !work.disk.storesOriginal, in: pipeline)
        }
        return response
    }
}
