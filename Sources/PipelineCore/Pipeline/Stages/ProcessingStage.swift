import Foundation

/// The processing stage: a key with processors. Its input is the unprocessed picture (from
/// memory, or by joining the unprocessed decode (``DecodeStage``), which other processor lists
/// of the picture share, with its download); the processors then run in order on the decode
/// pool. The unprocessed result stays in the memory cache like any decode; the processed one
/// is kept under its own key, and on disk as a rendition when the request's
/// ``DiskCachePolicy`` makes one (``RenditionStage``). Runs on the pipeline actor.
struct ProcessingStage {
    /// Processing works in flight, by (processed) key.
    let works: InFlightTable<ImageKey, ImageResponse>
    /// Remembered processor failures, by key (``RememberedFailures/processing``): processors
    /// are deterministic (equal identifiers, equal pixels), so a failure repeats for the key
    /// unless the error says it is temporary.
    let failures: NegativeCache<ImageKey>

    init(tableID: Int, failures: NegativeCache<ImageKey>) {
        works = InFlightTable(id: tableID)
        self.failures = failures
    }

    /// The processing work for `resolved`'s key: joined when one is in flight, else started.
    func work(for resolved: ResolvedRequest, in pipeline: isolated ImagePipeline) -> InFlightWork<ImageResponse> {
        works.work(for: resolved, in: pipeline) { pipeline, work in
            try await pipeline.processing.perform(resolved, work: work, in: pipeline)
        }
    }

    /// A processing work's task: its input, then ``process(_:followed:lookup:generation:for:work:in:)``.
    private func perform(_ resolved: ResolvedRequest, work: InFlightWork<ImageResponse>,
                         in pipeline: isolated ImagePipeline) async throws -> ImageResponse {
        try Task.checkCancellation()
        let key = resolved.key
        let generation = pipeline.ledger.current
        let lookup = try await pipeline.renditions.lookUp(resolved, work: work, in: pipeline)
        if let answer = lookup.answer { return answer }
        if let (loaded, _) = lookup.renewed {
            return try await processRenewed(loaded, lookup: lookup, for: resolved, work: work, in: pipeline)
        }
        let base = resolved.unprocessed
        var input: ImageResponse
        /// The processors' outcome when the decode ran them in its job.
        var followed: Result<ProcessedPixels, any Error>?
        if resolved.readsCaches, let cached = pipeline.memoryCache.value(for: base.key) {
            input = cached
            input.source = .processedFromMemory
        } else {
            // Bytes that did not decode for this base are remembered: no new download for them.
            if resolved.readsCaches, let error = pipeline.decoding.failures.error(for: base.key, now: pipeline.configuration.now()) {
                throw error
            }
            let decode = pipeline.decoding.work(for: base, asBaseStoringOriginal: work.disk.storesOriginal, in: pipeline)
            // Run by the decode in its own job when it has not decoded yet (`ProcessingFollowUps`).
            decode.followUps.add(key, priority: work.priority)
            if let policy = pipeline.configuration.previewPolicy {
                work.previewFeed = PreviewFeed(.processing(key.processors, key.processing.pixelFormat), policy: policy,
                                               decoder: pipeline.decoder, priority: work.priority, output: work.previews,
                                               events: pipeline.configuration.eventHandler)
            }
            defer { work.previewFeed?.finish() }
            do {
                input = try await pipeline.decoding.decodes.wait(on: decode, priority: work.priority.current, upstreamOf: work,
                                                                 in: pipeline)
            } catch {
                decode.followUps.remove(key)  // the decode need not run these processors for nobody
                throw error
            }
            followed = decode.followUps.outcome(for: key)
        }
        try Task.checkCancellation()
        return try await process(input, followed: followed, lookup: lookup, generation: generation, for: resolved, work: work,
                                 in: pipeline)
    }

    /// A standalone rendition's revalidation brought new bytes: they are decoded here (a
    /// stale rendition answering if they do not decode), then processed.
    ///
    /// Never inlined, as ``process(_:followed:lookup:generation:for:work:in:)``: the frame of
    /// an async function holds its whole body's locals for as long as it runs, and a task
    /// keeps the largest frames it ever held, so a work waiting for its decode does not hold
    /// these parts' frames.
    @inline(never)
    private func processRenewed(_ loaded: LoadedData, lookup: RenditionStage.Lookup, for resolved: ResolvedRequest,
                                work: InFlightWork<ImageResponse>, in pipeline: isolated ImagePipeline) async throws -> ImageResponse {
        let key = resolved.key
        var input: ImageResponse
        let origin = pipeline.renditions.originInfo(of: loaded, configuration: pipeline.configuration)
        do {
            (input, _) = try await pipeline.decoder.decode(loaded.data, source: loaded.source, key: resolved.unprocessed.key,
                                                           priority: work.priority, origin: origin)
        } catch let error where !(error is CancellationError) {
            let wrapped = ImagePipelineError.wrap(error, decoding: resolved.fetchURL)
            if let store = loaded.pendingStore { await store.abandon() }
            guard let answer = await pipeline.renditions.fallBack(from: lookup, after: wrapped, key: key,
                                                                  priority: work.priority, in: pipeline)
            else { throw wrapped }
            return answer
        }
        if let store = loaded.pendingStore, work.disk.storesOriginal { await store.storeOnce(placeholder: input.placeholder) }
        pipeline.dropDecodedCopies(of: resolved.cacheURL)
        // Read after this work's own replacement: a purge from now on still keeps the
        // processed result out of memory and off the disk.
        let generation = pipeline.ledger.current
        input.downloadedBytes = loaded.downloadedBytes
        try Task.checkCancellation()
        return try await process(input, followed: nil, lookup: lookup, generation: generation, for: resolved, work: work,
                                 in: pipeline)
    }

    /// The processors run on `input` (or their outcome taken from the decode that ran them,
    /// `followed`), a failure remembered, the result kept in memory and as a rendition.
    /// Never inlined into ``perform(_:work:in:)`` (see ``processRenewed(_:lookup:for:work:in:)``).
    @inline(never)
    private func process(_ input: ImageResponse, followed: Result<ProcessedPixels, any Error>?, lookup: RenditionStage.Lookup,
                         generation: UInt64, for resolved: ResolvedRequest, work: InFlightWork<ImageResponse>,
                         in pipeline: isolated ImagePipeline) async throws -> ImageResponse {
        let key = resolved.key
        var (response, seconds) = (input, 0.0)
        do {
            if let followed {
                let pixels = try followed.get()
                (response.bitmap, seconds) = (pixels.bitmap, pixels.seconds)
            } else {
                (response, seconds) = try await pipeline.decoder.process(input, with: key.processors, pixelFormat: key.processing.pixelFormat,
                                                                         priority: work.priority)
            }
        } catch let error where !(error is CancellationError) {
            let wrapped = ImagePipelineError.wrap(error, processing: resolved.fetchURL)
            if (error as? any PipelineFailure)?.isPermanent ?? true, let until = pipeline.failureLifetime() {
                failures.insert(wrapped, until: until, for: key)
            }
            throw wrapped
        }
        failures.removeValue(for: key)
        pipeline.emit(.processed(key, seconds: seconds))
        if pipeline.keep(response, for: key, madeFrom: generation), let rendition = lookup.store {
            await pipeline.renditions.store(response, in: rendition, key: key, priority: work.priority, madeFrom: generation,
                                            standalone: !work.disk.storesOriginal, in: pipeline)
        }
        return response
    }
}
