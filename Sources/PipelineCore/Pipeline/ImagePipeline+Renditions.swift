import Foundation

// Processed results: processors on the decode pool, and renditions on disk.
extension ImagePipeline {
    /// A processed key's work: the unprocessed result (from memory, or by joining the decode
    /// work of ``ImageKey/unprocessed``, which other processor lists share, with its download),
    /// then the processors in order on the decode pool. The unprocessed result stays in the
    /// memory cache like any decode; the processed one is stored under `key`.
    func performProcessing(request: ImageRequest, key: ImageKey,
                                   work: InFlightWork<ImageResponse>) async throws -> ImageResponse {
        var generation = replacements
        let (rendition, renewed, answer) = try await lookUpRendition(request: request, key: key, work: work, generation: generation)
        if let answer { return answer }
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
    func renditionStore(for request: ImageRequest, key: ImageKey) -> RenditionStore? {
        guard let disk = configuration.diskCache, let encoder = configuration.renditionEncoder,
              configuration.diskCachedSchemes.contains(fetchURL(for: request).scheme?.lowercased() ?? ""),
              let url = key.renditionURL(encoding: encoder.renditionIdentifier) else { return nil }
        return RenditionStore(disk: disk, encoder: encoder, url: url)
    }

    /// The start of a work that may make a rendition: its store (`nil` when this work makes
    /// none), and what the stored rendition gave: an answer (already in memory unless bytes were
    /// replaced since `generation`), or a standalone rendition's new bytes with the stale copy.
    func lookUpRendition(request: ImageRequest, key: ImageKey, work: InFlightWork<ImageResponse>, generation: UInt64)
        async throws -> (store: RenditionStore?, renewed: (loaded: LoadedData, stale: CachedData)?, answer: ImageResponse?) {
        guard work.makesRendition == true, let store = renditionStore(for: request, key: key) else { return (nil, nil, nil) }
        guard request.cachePolicy != .reloadIgnoringCaches else { return (store, nil, nil) }
        switch try await cachedRendition(store, request: request, key: key, priority: work.priority) {
        case .answer(let answer):
            if replacements == generation { memoryCache.insert(answer, for: key, cost: answer.bitmap.cost) }
            return (store, nil, answer)
        case .miss: return (store, nil, nil)
        case .renewed(let loaded, let stale): return (store, (loaded, stale), nil)
        }
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
    /// (``DataCaching/cachedDigest(for:)``; `DiskCache` reads the header). Without the
    /// original on disk only a standalone rendition answers: at once while fresh, else after its
    /// own conditional request (a 304 refreshes it; new bytes come back as `RenditionLookup.renewed`;
    /// an unreachable origin leaves the stale rendition answering).
    func cachedRendition(_ store: RenditionStore, request: ImageRequest, key: ImageKey,
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
    func decodeRendition(_ stored: CachedData, in store: RenditionStore, key: ImageKey,
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
    func storeRendition(_ response: ImageResponse, in store: RenditionStore, key: ImageKey,
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
}

/// A rendition's place: the disk cache, the encoder and its key there.
struct RenditionStore: Sendable {
    let disk: any DataCaching
    let encoder: any RenditionEncoding
    let url: URL
}
