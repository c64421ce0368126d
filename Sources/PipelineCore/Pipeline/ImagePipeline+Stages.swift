import Foundation

// The stages of one load: data (disk cache or loader), then decode and resample off the actor.
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
        let rendition = work.makesRendition == true ? renditionStore(for: request, key: key) : nil
        var renewed: (loaded: LoadedData, stale: CachedData)?
        if let rendition, request.cachePolicy != .reloadIgnoringCaches {
            switch try await cachedRendition(rendition, request: request, key: key, priority: work.priority) {
            case .answer(let answer):
                if replacements == generation { memoryCache.insert(answer, for: key, cost: answer.bitmap.cost) }
                return answer
            case .miss: break
            case .renewed(let loaded, let stale): renewed = (loaded, stale)
            }
        }
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
    private func originInfo(of loaded: LoadedData) -> CacheEntryInfo? {
        configuration.renditionEncoder != nil && configuration.diskCache != nil ? loaded.info : nil
    }

    /// A processed key's work: the unprocessed result (from memory, or by joining the decode
    /// work of ``ImageKey/unprocessed``, which other processor lists share, with its download),
    /// then the processors in order on the decode pool. The unprocessed result stays in the
    /// memory cache like any decode; the processed one is stored under `key`.
    private func performProcessing(request: ImageRequest, key: ImageKey,
                                   work: InFlightWork<ImageResponse>) async throws -> ImageResponse {
        var generation = replacements
        let rendition = work.makesRendition == true ? renditionStore(for: request, key: key) : nil
        var renewed: (loaded: LoadedData, stale: CachedData)?
        if let rendition, request.cachePolicy != .reloadIgnoringCaches {
            switch try await cachedRendition(rendition, request: request, key: key, priority: work.priority) {
            case .answer(let answer):
                if replacements == generation { memoryCache.insert(answer, for: key, cost: answer.bitmap.cost) }
                return answer
            case .miss: break
            case .renewed(let loaded, let stale): renewed = (loaded, stale)
            }
        }
        // Processors work on premultiplied pixels: a straight request shares the premultiplied
        // decode and makes the processed result straight once.
        var baseKey = key.unprocessed
        baseKey.processing.pixelFormat = .rgba8Premultiplied
        let url = fetchURL(for: request)
        var base: ImageResponse
        if let (loaded, stale) = renewed {
            // A standalone rendition's revalidation brought new bytes: decode them here.
            do {
                (base, _) = try await decodeOnPool(loaded.data, source: .network, key: baseKey, priority: work.priority,
                                                   origin: originInfo(of: loaded))
            } catch let error where !(error is CancellationError) {
                let wrapped = Self.wrap(error, decoding: url)
                if let store = loaded.pendingStore { await store.disk.abandonStore(for: key.fetchURL) }
                guard let rendition, var answer = await decodeRendition(stale, in: rendition, key: key, priority: work.priority)
                else { throw wrapped }
                answer.warnings.append("the revalidated bytes did not decode (\(wrapped)); the stored rendition was used")
                emit(.renditionHit(key))
                return answer
            }
            if let store = loaded.pendingStore, work.storesOriginal, store.claim() {
                await store.disk.storeData(store.data, info: store.info, for: key.fetchURL)
            }
            dropDecodedCopies(of: key.fetchURL)
            generation = replacements
            base.downloadedBytes = loaded.downloadedBytes
        } else if request.cachePolicy != .reloadIgnoringCaches, let cached = memoryCache.value(for: baseKey) {
            base = cached
            base.source = .memory
        } else {
            // Bytes that did not decode for this base are remembered: no new download for them.
            if request.cachePolicy != .reloadIgnoringCaches,
               let error = decodeFailures.error(for: baseKey, now: configuration.now()) {
                throw error
            }
            var baseRequest = request
            baseRequest.processors = []
            baseRequest.processing.pixelFormat = .rgba8Premultiplied
            let decode = decodeWork(for: baseRequest, key: baseKey, asBaseStoringOriginal: work.storesOriginal)
            base = try await wait(on: decode, in: decodes, key: baseKey, priority: work.priority.current, upstreamOf: work)
        }
        try Task.checkCancellation()
        let processors = key.processors
        let clock = configuration.now
        let input = base
        let pixelFormat = key.processing.pixelFormat
        let (response, seconds): (ImageResponse, TimeInterval)
        do {
            (response, seconds) = try await decodePool.run(priority: work.priority) {
                let start = clock()
                var bitmap = input.bitmap.premultiplied()
                for processor in processors { bitmap = try processor.process(bitmap) }
                var processed = input
                processed.bitmap = bitmap.converted(to: pixelFormat)
                return (processed, clock().timeIntervalSince(start))
            }
        } catch let error where !(error is CancellationError) {
            let wrapped = Self.wrap(error, processing: url)
            // Processors are deterministic (equal identifiers, equal pixels): a failure repeats
            // for this key, unless the error says it is temporary.
            if (error as? any PipelineFailure)?.isPermanent ?? true, let until = failureLifetime() {
                decodeFailures.insert(wrapped, until: until, for: key)
            }
            throw wrapped
        }
        decodeFailures.removeValue(for: key)
        emit(.processed(key, seconds: seconds))
        let replaced = replacedGeneration(of: key.fetchURL) > generation
        if !replaced { memoryCache.insert(response, for: key, cost: response.bitmap.cost) }
        if let rendition, replacements == generation {
            await storeRendition(response, in: rendition, key: key, priority: work.priority, generation: generation,
                                 standalone: !work.storesOriginal)
        }
        return response
    }

    /// Where `request`'s rendition would be kept: the disk cache, encoder and rendition URL
    /// when the fetch URL's scheme is disk-cached and an encoder is configured.
    private func renditionStore(for request: ImageRequest, key: ImageKey) -> RenditionStore? {
        guard let disk = configuration.diskCache, let encoder = configuration.renditionEncoder,
              configuration.diskCachedSchemes.contains(fetchURL(for: request).scheme?.lowercased() ?? ""),
              let url = key.renditionURL(encoding: encoder.renditionIdentifier) else { return nil }
        return RenditionStore(disk: disk, encoder: encoder, url: url)
    }

    /// What a rendition lookup found.
    enum RenditionLookup {
        /// The rendition answers.
        case answer(ImageResponse)
        /// None that may answer.
        case miss
        /// A standalone rendition's revalidation brought new bytes (`loaded`); `stale` (the
        /// stored rendition) answers if they do not decode.
        case renewed(LoadedData, stale: CachedData)
    }

    /// The rendition for `key` decoded, when one is stored that may answer. With the original
    /// on disk, the rendition must have been made from those bytes, and a stale original follows
    /// the request's ``RevalidationPolicy`` as a plain disk hit would: with `staleWhileRevalidate`
    /// the rendition answers and the original is revalidated in the background (new bytes change
    /// the tag); `revalidateBeforeAnswering` goes the normal way. The original's bytes are
    /// neither decoded nor read: the tag is checked against its digest
    /// (``DataCaching/cachedDigest(for:)``; ``DiskCache`` reads the header). Without the
    /// original on disk only a standalone rendition answers: at once while fresh, else after its
    /// own conditional request (a 304 refreshes it; new bytes come back as `RenditionLookup.renewed`;
    /// an unreachable origin leaves the stale rendition answering).
    private func cachedRendition(_ store: RenditionStore, request: ImageRequest, key: ImageKey,
                                 priority: PriorityHandle) async throws -> RenditionLookup {
        guard let stored = await store.disk.cachedData(for: store.url), let meta = RenditionMeta(stored.info) else { return .miss }
        let now = configuration.now()
        var isStale = false
        if let original = await store.disk.cachedDigest(for: key.fetchURL) {
            guard meta.tag == renditionTag(of: original) else { return .miss }
            if !original.info.isFresh(at: now), request.cachePolicy != .returnCacheDataDontLoad {
                guard request.revalidation == .staleWhileRevalidate else { return .miss }
                revalidateInBackground(url: fetchURL(for: request), cacheURL: key.fetchURL, headers: request.headers)
                isStale = true
            }
        } else {
            guard meta.standalone else { return .miss }
            if !stored.info.isFresh(at: now), request.cachePolicy != .returnCacheDataDontLoad {
                do {
                    if let loaded = try await revalidate(stored, meta: meta, in: store, request: request, key: key,
                                                         priority: priority) {
                        return .renewed(loaded, stale: stored)
                    }
                } catch is CancellationError {
                    throw CancellationError()
                } catch {
                    // Offline: the stale rendition still serves.
                }
            }
        }
        guard var response = await decodeRendition(stored, in: store, key: key, priority: priority) else { return .miss }
        response.isStale = isStale
        emit(.renditionHit(key))
        return .answer(response)
    }

    /// A standalone rendition's conditional request, with the validators of the original it was
    /// made from: `nil` after a 304 (its freshness and validators refreshed on disk), else the
    /// new bytes (to be kept as the original only by a work that keeps originals, once they
    /// decode). A `no-store` answer removes the rendition.
    private func revalidate(_ stored: CachedData, meta: RenditionMeta, in store: RenditionStore, request: ImageRequest,
                            key: ImageKey, priority: PriorityHandle) async throws -> LoadedData? {
        let url = fetchURL(for: request)
        let loader = try configuration.loaders.requireLoader(for: url)
        let load = DataLoadRequest(url: url, priority: priority, validator: meta.validator, headers: request.headers,
                                   cacheURL: key.fetchURL == url ? nil : key.fetchURL)
        let result = try await loader.load(load)
        let now = configuration.now()
        switch result {
        case .notModified(let metadata):
            let info = CacheEntryInfo(metadata, receivedAt: now)
            var refreshed = meta
            refreshed.etag = info.etag ?? meta.etag
            refreshed.lastModified = info.lastModified ?? meta.lastModified
            await store.disk.updateInfo(refreshed.info(freshUntil: info.freshUntil), for: store.url)
            emit(.revalidated(url, modified: false))
            return nil
        case .data(let data, let metadata):
            emit(.loaded(url, bytes: data.count))
            emit(.revalidated(url, modified: true))
            var loaded = LoadedData(data: data, source: .network)
            loaded.downloadedBytes = data.count
            if metadata.noStore {
                await store.disk.removeData(for: store.url)
            } else {
                let info = CacheEntryInfo(metadata, receivedAt: now)
                loaded.info = info
                loaded.pendingStore = PendingStore(disk: store.disk, data: data, info: info, replacesStoredBytes: false)
            }
            return loaded
        }
    }

    /// `stored` (a rendition of `key`) decoded as is, with the original's size and format from
    /// its metadata; a damaged or undecodable one is removed and reads as `nil`.
    private func decodeRendition(_ stored: CachedData, in store: RenditionStore, key: ImageKey,
                                 priority: PriorityHandle) async -> ImageResponse? {
        var plain = key.unprocessed
        plain.targetSize = .original
        plain.processing = ProcessingOptions(appliesOrientation: false, convertsToSRGB: false,
                                             pixelFormat: key.processing.pixelFormat)
        guard let (decoded, _) = try? await decodeOnPool(stored.data, source: .rendition, key: plain, priority: priority) else {
            await store.disk.removeData(for: store.url)
            return nil
        }
        var response = decoded
        if let meta = RenditionMeta(stored.info), let size = meta.originalSize, let format = meta.format {
            response.originalSize = size
            response.format = format
        }
        return response
    }

    /// Encodes `response` on the decode pool and stores it as `key`'s rendition, tagged with
    /// the original bytes it was made from (`renditionOrigin`), unless those
    /// were replaced meanwhile. A `standalone` rendition (made by a work that does not keep the
    /// original) also carries the original's validators. An encoder's failure, or a response
    /// whose bytes may not be kept, only skips the store.
    private func storeRendition(_ response: ImageResponse, in store: RenditionStore, key: ImageKey,
                                priority: PriorityHandle, generation: UInt64, standalone: Bool) async {
        let encoder = store.encoder, bitmap = response.bitmap
        guard let origin = response.renditionOrigin,
              let data = try? await decodePool.run(priority: priority, { try encoder.encode(bitmap) }),
              replacements == generation else { return }
        let meta = RenditionMeta(tag: origin.tag, originalSize: response.originalSize, format: response.format,
                                 standalone: standalone, validators: origin.info)
        await store.disk.storeData(data, info: meta.info(freshUntil: origin.info.freshUntil), for: store.url)
        emit(.renditionStored(key, bytes: data.count))
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

    /// Decodes `data` on the decode pool at `priority`; returns the response and the seconds it
    /// took. With `origin` (the bytes' info), the response's `renditionOrigin`
    /// is set, its tag computed there too (a CRC-32 of the bytes: not on the actor).
    func decodeOnPool(_ data: Data, source: ImageSource, key: ImageKey, priority: PriorityHandle,
                      origin: CacheEntryInfo? = nil) async throws -> (ImageResponse, TimeInterval) {
        let decoders = configuration.decoders
        let maxPixels = configuration.maxPixelCount
        let clock = configuration.now
        let admission = self.admission
        let first = try await decodePool.run(priority: priority) { () throws -> DecodeOutcome in
            let start = clock()
            let outcome = try Self.decode(data, source: source, key: key, decoders: decoders, maxPixelCount: maxPixels,
                                          admission: admission, reserved: nil)
            return outcome.timed(since: start, clock: clock).tagged(data, origin)
        }
        guard case .needsMemory(let bytes) = first, let admission else { return try first.result() }
        // Over the decode memory budget: wait (suspended, in priority order) for running decodes
        // to finish, then decode holding the reservation.
        try await admission.acquire(bytes, priority: priority)
        defer { admission.release(bytes) }
        return try await decodePool.run(priority: priority) { () throws -> DecodeOutcome in
            let start = clock()
            let outcome = try Self.decode(data, source: source, key: key, decoders: decoders, maxPixelCount: maxPixels,
                                          admission: admission, reserved: bytes)
            return outcome.timed(since: start, clock: clock).tagged(data, origin)
        }.result()
    }

    /// What one decode job did: decoded, or found that its estimated memory does not fit the
    /// decode budget now.
    enum DecodeOutcome: Sendable {
        case decoded(ImageResponse, TimeInterval)
        case needsMemory(Int)

        func timed(since start: Date, clock: @Sendable () -> Date) -> DecodeOutcome {
            guard case .decoded(let response, _) = self else { return self }
            return .decoded(response, clock().timeIntervalSince(start))
        }

        /// With `info`, the decoded response made from `data` records them as its rendition origin.
        func tagged(_ data: Data, _ info: CacheEntryInfo?) -> DecodeOutcome {
            guard let info, case .decoded(var response, let seconds) = self else { return self }
            response.renditionOrigin = RenditionOrigin(tag: renditionTag(of: data), info: info)
            return .decoded(response, seconds)
        }

        func result() throws -> (ImageResponse, TimeInterval) {
            guard case .decoded(let response, let seconds) = self else {
                // Only a decode without a reservation reports this, and it is never returned here.
                throw ImagePipelineError.corruptData(format: nil, message: "the decode was not admitted")
            }
            return (response, seconds)
        }
    }

    /// Decodes `data` to the size `key` asks for: one decoding session, whose header gives the
    /// plan (pixel limit, fit/fill, the decoder's target), then pixels. Runs on the decode pool.
    ///
    /// With `admission`, the session's memory estimate (plus the resampled result) must fit
    /// the decode budget: a decode holding a `reserved` admission goes ahead, another takes
    /// the memory if it fits now or returns ``DecodeOutcome/needsMemory(_:)`` to wait for it.
    static func decode(_ data: Data, source: ImageSource, key: ImageKey, decoders: DecoderRegistry,
                       maxPixelCount: Int, admission: DecodeAdmission? = nil, reserved: Int? = nil) throws -> DecodeOutcome {
        let decoder = try decoders.requireDecoder(for: data)
        return try decoder.withSession(for: data) { session -> DecodeOutcome in
            let info = session.info
            var options = DecodeOptions(appliesOrientation: key.processing.appliesOrientation,
                                        strict: key.processing.strictDecoding, maxPixelCount: maxPixelCount,
                                        convertsToSRGB: key.processing.convertsToSRGB,
                                        resamplingFilter: key.processing.resamplingFilter)
            try options.checkPixelLimit(info)
            let upright = options.appliesOrientation ? info.uprightSize : info.size
            let plan = ResizePlan(source: upright, target: key.targetSize, contentMode: key.contentMode,
                                  allowsUpscaling: key.processing.allowsUpscaling)
            // Straight pixels from the decoder only when nothing resamples them: resampling
            // works on premultiplied ones, and the result is made straight once, at the end.
            let wanted = key.processing.pixelFormat
            let resamples = plan.scaledSize != upright || plan.outputSize != upright || plan.crop != PixelRect(upright)
            options.pixelFormat = resamples ? .rgba8Premultiplied : wanted
            options.targetSize = plan.scaledSize == upright ? nil : plan.scaledSize
            var admitted = 0
            if let admission, reserved == nil {
                // The resampler's output, unless the decoder's full-size bitmap is the answer.
                let bytes = session.estimatedPeakMemory(options) + (resamples ? plan.outputSize.pixelCount * 4 : 0)
                guard admission.tryAcquire(bytes) else { return .needsMemory(bytes) }
                admitted = bytes
            }
            defer { if admitted > 0 { admission?.release(admitted) } }
            let decoded = try session.decodeChecked(options)
            let bitmap = decoded.bitmap.size == plan.outputSize && plan.crop == PixelRect(upright)
                ? decoded.bitmap
                : Resampler.resample(decoded.bitmap.premultiplied(), plan: plan, filter: key.processing.resamplingFilter)
            return .decoded(ImageResponse(bitmap: bitmap.converted(to: wanted), source: source, originalSize: upright,
                                          format: info.format, warnings: decoded.warnings), 0)
        }
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
    private func failureLifetime() -> Date? {
        guard configuration.negativeCacheLifetime > 0 else { return nil }
        return configuration.now().addingTimeInterval(configuration.negativeCacheLifetime)
    }

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
    private func revalidateInBackground(url: URL, cacheURL: URL, headers: [String: String]) {
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

/// A rendition's place: the disk cache, the encoder and its key there.
struct RenditionStore: Sendable {
    let disk: any DataCaching
    let encoder: any RenditionEncoding
    let url: URL
}
