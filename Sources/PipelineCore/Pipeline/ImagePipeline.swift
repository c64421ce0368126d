import Synchronization

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// The image pipeline: request in, decoded bitmap of the requested size out.
///
/// ```swift
/// let pipeline = ImagePipeline(configuration: .init(decoders: DecoderRegistry([PNGDecoder()]),
///                                                   loaders: LoaderRegistry([FileDataLoader()])))
/// let response = try await pipeline.image(for: ImageRequest(url: url, width: 320, height: 240))
/// ```
///
/// The pipeline keeps the door: a request is resolved once (`ResolvedRequest`: the fetch URL
/// and the cache identity, named apart), answered from the memory cache or the remembered
/// failures at once, on the caller's thread, else admitted by the memory it will hold
/// (`RequestAdmission`, which may refuse it before anything started) and handed to the top
/// stage. The stages below, each a type in a file named for it that knows only the stage
/// below it and sends its subscribers one typed stream (progress, partial values, the value):
///
/// 1. `ImageStage`: the key's picture, one work per key; owns the memory insert and the
///    renditions (`RenditionCache`); a key with processors subscribes to the work of its
///    unprocessed key, whose decode job runs its processors;
/// 2. `DecodeStage`: an image work's bytes decoded to its size on the decode pool
///    (`PoolDecoder`), in that work's own task; previews of the arriving body;
/// 3. `FetchStage`: the bytes from the disk cache or the loader, one download per cache
///    identity, with `Revalidator` for stale entries.
///
/// The image and fetch stages keep their works in a `StageTable`: many callers asking for the
/// same picture share one download and one decode. A caller that cancels gets `CancellationError` at once;
/// the shared work goes on while anyone still waits, and is cancelled when the last waiter
/// leaves. No slow step runs on this actor or on a caller's thread.
public actor ImagePipeline {
    /// What the pipeline was built from.
    public nonisolated let configuration: Configuration
    /// The memory cache of decoded pictures (shared with the configuration).
    public nonisolated let memoryCache: MemoryCache<ImageKey, ImageContainer>

    /// The top stage, and through it the others.
    let images: ImageStage
    /// The decode pool's jobs, shared by the stages.
    nonisolated var decoder: PoolDecoder { images.decoding.decoder }
    /// The permanent failures remembered, of every stage.
    nonisolated let failures: RememberedFailures
    /// The requests in flight, bounded by ``Configuration/requestMemoryBudget``.
    let requests: RequestAdmission
    /// Every stage's table, by ``StageTable/id``: what a subscriber's token leads back to.
    private let tables: [any WaiterTable]
    /// The prefetches of ``prefetch(_:)`` and of every ``ImagePrefetcher`` made from this pipeline.
    nonisolated let prefetchSets = PrefetchSets()
    /// This pipeline's mark on the resolutions it keeps with request values (`ResolutionMemo`),
    /// or `nil` when it keeps none (a custom URL builder or cache-key closure runs every time).
    nonisolated let resolver: ResolutionMemo.Resolver?

    /// Creates a pipeline.
    public init(configuration: Configuration) {
        self.configuration = configuration
        self.memoryCache = configuration.memoryCache
        self.resolver = ResolutionMemo.resolver(for: configuration)
        self.requests = RequestAdmission(budget: configuration.requestMemoryBudget)
        let failures = RememberedFailures(configuration)
        self.failures = failures
        // The stages, bottom up; each table's id is its place in `tables`.
        let decoder = PoolDecoder(configuration: configuration)
        let ledger = ReplacementLedger(memoryCache: configuration.memoryCache)
        let revalidator = Revalidator(configuration: configuration, ledger: ledger, decoder: decoder)
        let fetch = FetchStage(tableID: 1, failures: failures.downloads, revalidator: revalidator, ledger: ledger,
                               configuration: configuration)
        let decoding = DecodeStage(failures: failures.decodes, fetch: fetch, decoder: decoder, ledger: ledger,
                                   configuration: configuration)
        let renditions = RenditionCache(configuration: configuration, decoder: decoder, revalidator: revalidator, ledger: ledger)
        images = ImageStage(tableID: 0, failures: failures.processing, decoding: decoding, renditions: renditions,
                            ledger: ledger, configuration: configuration)
        let tables: [any WaiterTable] = [images.works, fetch.downloads]
        assert(tables.indices.allSatisfy { tables[$0].id == $0 }, "a table's id is its index in `tables`")
        self.tables = tables
    }

    /// The decode memory in use now, its peak so far, and how many decodes wait for memory
    /// (all zero without a ``Configuration/decodeMemoryBudget``): for a server's metrics.
    public nonisolated var decodeMemory: DecodeMemoryUsage {
        guard let admission = decoder.admission else {
            return DecodeMemoryUsage(bytesInUse: 0, peakBytesInUse: 0, waitingDecodes: 0, budget: nil)
        }
        return DecodeMemoryUsage(bytesInUse: admission.bytesInUse, peakBytesInUse: admission.peakBytesInUse,
                                 waitingDecodes: admission.waitingCount, budget: admission.budget)
    }

    // MARK: Resolving a request

    /// `request` resolved: its fetch URL, cache identity and memory key, computed once.
    nonisolated func resolve(_ request: ImageRequest) -> ResolvedRequest {
        ResolvedRequest(request, configuration: configuration, resolver: resolver)
    }

    /// The URL downloaded for `request`, by the configured URL builder.
    public nonisolated func fetchURL(for request: ImageRequest) -> URL {
        configuration.urlBuilder.fetchURL(for: request)
    }

    /// The identity of `request`'s fetch URL in the caches (`CacheIdentity`): the fetch URL
    /// itself, unless ``ImageRequest/cacheKey`` or ``Configuration/cacheKey`` gives another.
    /// A request-level key keeps the URL builder's variant apart (two width buckets of one key
    /// are two entries): `cacheKey = "https://cdn.example/a.jpg"` at 300 px with
    /// ``WidthBucketURLBuilder`` is `https://cdn.example/a.jpg?w=320`; `cacheKey = "photo 42"` is
    /// `imgpipe-key:photo%2042?w=320`.
    public nonisolated func cacheURL(for request: ImageRequest) -> URL {
        resolve(request).cacheURL
    }

    /// The memory key for `request` (its ``ImageKey/cacheURL`` is ``cacheURL(for:)``).
    public nonisolated func key(for request: ImageRequest) -> ImageKey {
        resolve(request).key
    }

    // MARK: Loading

    /// The picture for `request` if the memory cache has it; synchronous, callable from any
    /// thread (a UI thread too). Never loads.
    public nonisolated func cachedImage(for request: ImageRequest) -> ImageResponse? {
        // A value resolved before (a cell asking again) goes straight to the cache with the key
        // it kept: no `ResolvedRequest` (copies of the request and of URLs, each a call into
        // Foundation's resilient value witnesses) on the call a UI thread makes per cell.
        if let resolver, let known = request.resolutionMemo.entry(for: resolver) {
            return cachedImage(key: known.key, fetchURL: known.fetchURL)
        }
        return cachedImage(for: resolve(request))
    }

    private nonisolated func cachedImage(for resolved: ResolvedRequest) -> ImageResponse? {
        cachedImage(key: resolved.key, fetchURL: resolved.fetchURL)
    }

    /// The memory cache's picture for `key`, as a response from memory for `fetchURL`.
    private nonisolated func cachedImage(key: ImageKey, fetchURL: URL) -> ImageResponse? {
        guard let container = memoryCache.value(for: key) else { return nil }
        return ImageResponse(container: container, source: .memory, fetchURL: fetchURL)
    }

    /// The picture for `request`: from memory, by joining work in flight, from the disk cache
    /// or from a loader, decoded to the requested size.
    /// - Throws: ``ImagePipelineError`` for failures, `CancellationError` when the calling task
    ///   is cancelled (at once, even if others still wait for the same work).
    public nonisolated func image(for request: ImageRequest) async throws -> ImageResponse {
        try await image(for: request, task: nil)
    }

    /// ``image(for:)`` for an ``ImageTask`` (whose priority and progress it follows), or for a
    /// plain caller with `task` `nil`.
    nonisolated func image(for request: ImageRequest, task: ImageTask?) async throws -> ImageResponse {
        let started = configuration.now()
        emit(.started(request))
        let resolved = resolve(request)
        do {
            var response = try await response(for: resolved, task: task)
            response.fetchURL = resolved.fetchURL
            emit(.completed(request, source: response.source, seconds: configuration.now().timeIntervalSince(started)))
            return response
        } catch is CancellationError {
            emit(.cancelled(request))
            throw CancellationError()
        } catch {
            // Named by the URL the caller asked for, and the one fetched when the builder picked another.
            let error = (error as? ImagePipelineError)?.addressed(to: request.url) ?? error
            emit(.failed(request, error))
            throw error
        }
    }

    /// The door, on the caller's thread: the memory cache, then the remembered failures; then
    /// the request is in flight, admitted by the memory it will hold (``RequestAdmission``,
    /// which may push others out, or refuse it before anything started), counted until it is
    /// answered, and handed to the image stage. An ``ImageTask``'s caller follows the work's
    /// progress and previews, at the task's current priority.
    private nonisolated func response(for resolved: ResolvedRequest, task: ImageTask?) async throws -> ImageResponse {
        try Task.checkCancellation()
        if let answer = try memoryAnswer(for: resolved) { return answer }
        let id = nextStageID()
        let pushedOut = try requests.admit(id, url: resolved.fetchURL, key: resolved.key,
                                           priority: task?.priority ?? resolved.request.priority)
        defer { requests.release(id) }
        for (token, error) in pushedOut { tables[token.table].leave(token, failing: error) }
        let storesOriginal = resolved.diskCachePolicy(in: configuration).storesOriginal(for: resolved.key)
        let subscription = ImageStage.Subscription(priority: resolved.request.priority,
                                                   demand: ImageDemand(storesOriginal: storesOriginal, followUp: nil),
                                                   events: task?.follow, wantsPartials: task != nil)
        let requests = requests
        return try await images.response(for: resolved, subscription, waiterID: id) { token, existing in
            // The priority now, as the waiter registers: a task's change before this never
            // reached the books (it had no token), one after it does (`setWaiterPriority`).
            let priority = task?.joined(as: token) ?? resolved.request.priority
            requests.setPriority(id, to: priority)
            requests.attach(id, to: token, joined: existing ? token.workID : nil)
            return priority
        }
    }

    /// A memory hit, or the permanent failure remembered for `resolved` (thrown), or `nil`.
    private nonisolated func memoryAnswer(for resolved: ResolvedRequest) throws -> ImageResponse? {
        guard resolved.readsCaches else { return nil }
        if let hit = cachedImage(for: resolved) {
            emit(.memoryHit(resolved.request))
            return hit
        }
        if let error = failures.error(for: resolved, now: configuration.now()) { throw error }
        return nil
    }

    /// The animation for `request`: the bytes from the disk cache or a loader (joining a
    /// download in flight), the header read by a decoder that adopts
    /// ``AnimatedImageDecoding``; frames are decoded when iterated. A still GIF or WebP is a
    /// one-frame animation; data whose decoder does not adopt the protocol (JPEG, PNG) throws
    /// ``ImagePipelineError/unsupported(format:message:)``, wrapped with the URL. The bytes
    /// reach the disk cache once the header read.
    ///
    /// An animation over ``Configuration/maxAnimationFrameCount`` or
    /// ``Configuration/maxAnimationPixelCount`` fails here, from its header, with
    /// ``ImagePipelineError/overLimit(_:limit:actual:)`` wrapped with the URL; `image(for:)` of
    /// the same bytes still gives the first frame.
    public nonisolated func animation(for request: ImageRequest) async throws -> ImageAnimation {
        do {
            return try await images.decoding.animation(for: resolve(request))
        } catch let error as ImagePipelineError {
            throw error.addressed(to: request.url)
        }
    }

    /// What the header of `request`'s picture says — its format, stored size and orientation
    /// (``ImageInfo/uprightSize``), alpha, frame count — without decoding its pixels: the bytes
    /// from the disk cache or a loader (joining a download in flight), the header parsed on the
    /// decode pool. For a server that checks a source against its own limits before asking
    /// ``image(for:)`` for pixels, or that plans its geometry from the source's size; the bytes
    /// reach the disk cache, so the decode that follows does not load them again from an HTTP
    /// origin.
    /// - Throws: ``ImagePipelineError`` wrapped with the URL, as ``image(for:)``.
    public nonisolated func info(for request: ImageRequest) async throws -> ImageInfo {
        do {
            return try await images.decoding.info(for: resolve(request))
        } catch let error as ImagePipelineError {
            throw error.addressed(to: request.url)
        }
    }

    // MARK: Placeholders

    /// The placeholder hash of `request`'s picture, without loading or decoding it: from the
    /// memory cache's response, else from the info of its disk entry — the original's under
    /// the request's cache identity, then its rendition's — which the disk cache reads from
    /// the entry's header alone. `nil` when neither has one (never cached, a cache without a
    /// disk, an entry stored before placeholders were kept, or
    /// ``Configuration/makesPlaceholders`` off). For a cold launch: paint every cell from
    /// its placeholder (`Bitmap(thumbHash:size:)`), then load. A URL the loader refuses has
    /// none, as it has no disk answer.
    public nonisolated func placeholder(for request: ImageRequest) async -> ThumbHash? {
        await images.placeholder(for: resolve(request))
    }

    // MARK: Prefetching and background work

    /// Starts loading and decoding `requests` at prefetch priority, so a later `image(for:)`
    /// finds them in memory or in flight. Requests already cached or prefetching are skipped.
    /// A screen that prefetches without `await` (from a collection view's callbacks) owns an
    /// ``ImagePrefetcher`` instead: the same prefetches, synchronous, stopped when it goes.
    public func prefetch(_ requests: [ImageRequest]) {
        prefetchSets.own.start(requests, in: self)
    }

    /// Cancels the prefetches of `requests`. Work that a visible caller also waits for goes on.
    public func cancelPrefetch(_ requests: [ImageRequest]) {
        prefetchSets.own.stop(requests.map(key(for:)))
    }

    /// Cancels every prefetch: those of ``prefetch(_:)`` and those of every ``ImagePrefetcher``
    /// of this pipeline. Work that a visible caller also waits for goes on.
    /// - Returns: how many prefetches were cancelled.
    @discardableResult
    public func cancelAllPrefetches() -> Int {
        prefetchSets.stopAll()
    }

    /// The number of prefetches of ``prefetch(_:)`` still running (an ``ImagePrefetcher``
    /// counts its own: ``ImagePrefetcher/prefetchCount``).
    public var prefetchCount: Int { prefetchSets.own.count }

    /// Waits until background work (stale-while-revalidate checks, prefetches, an
    /// ``ImagePrefetcher``'s too) has finished: for command-line tools that must not exit with
    /// work cut off.
    ///
    /// Cancelling the waiting task cancels that background work (a revalidation whose origin
    /// never answers would otherwise be waited for forever), and the wait then ends.
    public func waitForBackgroundWork() async {
        await withTaskCancellationHandler {
            while let task = images.renditions.revalidator.anyBackgroundTask ?? prefetchSets.anyTask {
                if Task.isCancelled { cancelBackgroundWork() }
                await task.value
            }
        } onCancel: {
            Task { await self.cancelBackgroundWork() }
        }
    }

    /// Cancels background revalidations and prefetches.
    private func cancelBackgroundWork() {
        images.renditions.revalidator.cancelAll()
        cancelAllPrefetches()
    }

    // MARK: Removing

    /// Removes `request`'s picture from the caches: from memory every size and processor list of
    /// its URL (`allSizes`, the default; compared through the URL builder, so other width
    /// buckets go too) or only `request`'s own entry; from the disk cache the original bytes of
    /// every fetch URL the builder may pick for it (``FetchURLBuilding/variantRequests(for:)``)
    /// and the renditions of the memory entries removed (renditions of sizes no longer in
    /// memory stay until evicted: one tagged with an original answers only for that original,
    /// a standalone one (``DiskCachePolicy/renditions``, ``DiskCachePolicy/automatic``) until
    /// it is stale); and the failures
    /// remembered for it. A decode of the old bytes still running does not put them back in
    /// memory. Work in flight is not cancelled.
    public func removeCachedImage(for request: ImageRequest, allSizes: Bool = true) async {
        let own = resolve(request)
        var removedKeys: [ImageKey] = []
        var identities: [URL: URL] = [own.cacheURL: own.fetchURL]  // identity: fetch URL
        if allSizes {
            var probes = [request] + configuration.urlBuilder.variantRequests(for: request)
            var original = request
            original.targetSize = .original
            probes.append(original)
            for probe in probes {
                let resolved = resolve(probe)
                identities[resolved.cacheURL] = resolved.fetchURL
            }
            for key in memoryCache.keysByRecency where belongs(key, to: request) {
                removedKeys.append(key)
                var probe = request
                probe.targetSize = key.targetSize
                identities[key.cacheURL] = fetchURL(for: probe)
            }
            for identity in identities.keys { images.ledger.replace(identity) }
        } else {
            removedKeys = memoryCache.contains(own.key) ? [own.key] : []
            images.ledger.replace(own.cacheURL)
            memoryCache.removeValue(for: own.key)
        }
        for key in removedKeys + [own.key] {
            failures.decodes.removeValue(for: key)
            failures.processing.removeValue(for: key)
        }
        for fetchURL in identities.values { failures.downloads.removeValue(for: fetchURL) }
        guard let disk = configuration.diskCache else { return }
        // Under the key the configured encoder writes them (a key without a rendition has none to remove).
        let encoding = images.renditions.encoding
        let renditions = (removedKeys + [own.key]).compactMap { RenditionStore.url(for: $0, encoding: encoding) }
        let originals = allSizes ? Array(identities.keys) : [own.cacheURL]
        for url in Set(originals + renditions) { await disk.removeData(for: url) }
    }

    /// Whether memory key `key` is one of `request`'s URL's entries: its identity is the one
    /// `request` would have at that key's size.
    private func belongs(_ key: ImageKey, to request: ImageRequest) -> Bool {
        var probe = request
        probe.targetSize = key.targetSize
        probe.contentMode = key.contentMode
        probe.cropAnchor = key.cropAnchor
        probe.processing = key.processing
        return cacheURL(for: probe) == key.cacheURL
    }

    /// Empties the memory cache and the disk cache (``DataCaching/removeAll()``) and forgets
    /// remembered failures. Decodes of old bytes still running do not put them back in memory.
    public func removeAll() async {
        images.ledger.replaceAll()
        memoryCache.removeAll()
        removeAllFailures()
        await configuration.diskCache?.removeAll()
    }

    /// Forgets remembered permanent failures, so the next request tries again.
    public func removeAllFailures() {
        failures.removeAll()
    }

    // MARK: Metrics

    /// How many permanent failures the negative cache remembers (fetch URLs and keys); bounded
    /// by ``Configuration/negativeCacheLimit`` per kind.
    public nonisolated var rememberedFailureCount: Int { failures.count }

    /// The bytes the remembered permanent failures are counted at (keys, errors, overhead);
    /// bounded by ``Configuration/negativeCacheByteLimit`` per kind.
    public nonisolated var rememberedFailureBytes: Int { failures.bytes }

    /// The number of requests in flight (past the memory cache, waiting for their work) and
    /// the bytes they are counted at against ``Configuration/requestMemoryBudget``: for a
    /// server's metrics.
    public nonisolated var requestsInFlight: (count: Int, bytes: Int) { requests.usage }

    // MARK: Diagnostics for tests (package)

    /// The number of subscribers of the image work `request` would join (0 when none is in
    /// flight): its callers, and for an unprocessed key the processed works that wait on it. For
    /// tests that must know a caller has joined before they go on, instead of sleeping.
    package nonisolated func waiterCount(for request: ImageRequest) -> Int {
        images.works.waiterCount(for: key(for: request))
    }

    /// The number of image works waiting for the download of `url` (a cache identity).
    package nonisolated func downloadWaiterCount(for url: URL) -> Int {
        images.decoding.fetch.downloads.waiterCount(for: url)
    }

    /// The current priority of the image work `request` would join, if one is in flight.
    package nonisolated func inFlightPriority(for request: ImageRequest) -> ImagePriority? {
        images.works.priority(for: key(for: request))
    }

    // MARK: Priorities

    /// Moves one waiter to `priority` (an ``ImageTask``'s new priority), and its work with it.
    nonisolated func setWaiterPriority(_ token: WaiterToken, to priority: ImagePriority) {
        tables[token.table].setWaiterPriority(token, to: priority)
        requests.setPriority(token.waiterID, to: priority)
    }

    nonisolated func emit(_ event: ImagePipelineEvent) {
        configuration.emit(event)
    }
}
