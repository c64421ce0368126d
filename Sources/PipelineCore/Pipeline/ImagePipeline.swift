import Foundation
import Synchronization

/// The image pipeline: request in, decoded bitmap of the requested size out.
///
/// This actor only coordinates; no slow step runs on it. Decoding, resampling and processing
/// run on a bounded ``WorkerPool``, loading in the loaders, file work in the disk cache, and
/// each comes back through a continuation.
///
/// A request goes down the stages in one direction, each a type in a file named for it:
///
/// 1. here: the request is resolved once (`ResolvedRequest`: the fetch URL and the cache
///    identity, named apart), then the memory cache and the remembered failures
///    (`RememberedFailures`) answer, at the door and off the actor; else `RequestAdmission`
///    admits it by the memory it will hold (or refuses it, before anything started) and the
///    caller joins the work for its key on the actor;
/// 2. `ProcessingStage`, for a key with processors: the unprocessed picture, then the
///    processors;
/// 3. `DecodeStage`: the bytes, decoded to the key's size (`PoolDecoder`); each of these
///    two first asks `RenditionStage` for a stored rendition;
/// 4. `FetchStage`: the bytes from the disk cache or the loader, with `Revalidator`
///    for stale entries.
///
/// Each stage keeps its works in an `InFlightTable`: many callers asking for the same picture
/// share one download and one decode. A caller that cancels gets `CancellationError` at once;
/// the shared work goes on while anyone still waits, and is cancelled when the last waiter
/// leaves. The `ReplacementLedger` keeps decodes of replaced bytes out of the caches.
public actor ImagePipeline {
    /// What the pipeline was built from.
    public nonisolated let configuration: Configuration
    /// The memory cache of decoded results (shared with the configuration).
    public nonisolated let memoryCache: MemoryCache<ImageKey, ImageResponse>

    let decoder: PoolDecoder
    let ledger = ReplacementLedger()
    let processing: ProcessingStage
    let decoding: DecodeStage
    let renditions = RenditionStage()
    let fetch: FetchStage
    let revalidator = Revalidator()
    /// The permanent failures remembered, of every stage.
    nonisolated let failures: RememberedFailures
    /// The requests in flight, bounded by ``Configuration/requestMemoryBudget``.
    let requests: RequestAdmission
    /// Every stage's table, by ``InFlightTable/id``: what a waiter's token leads back to.
    private let tables: [any WaiterTable]
    /// The prefetches of ``prefetch(_:)`` and of every ``ImagePrefetcher`` made from this pipeline.
    nonisolated let prefetchSets = PrefetchSets()
    private let lastID = Atomic<UInt64>(0)

    /// Creates a pipeline.
    public init(configuration: Configuration) {
        self.configuration = configuration
        self.memoryCache = configuration.memoryCache
        self.decoder = PoolDecoder(configuration: configuration)
        self.requests = RequestAdmission(budget: configuration.requestMemoryBudget)
        // Each stage's table id is its place in `tables`.
        let failures = RememberedFailures(configuration)
        self.failures = failures
        let processing = ProcessingStage(tableID: 0, failures: failures.processing)
        let decoding = DecodeStage(tableID: 1, failures: failures.decodes)
        let fetch = FetchStage(tableID: 2, failures: failures.downloads)
        self.processing = processing
        self.decoding = decoding
        self.fetch = fetch
        let tables: [any WaiterTable] = [processing.works, decoding.decodes, fetch.downloads]
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
        ResolvedRequest(request, configuration: configuration)
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
        cachedImage(for: resolve(request))
    }

    private nonisolated func cachedImage(for resolved: ResolvedRequest) -> ImageResponse? {
        guard var response = memoryCache.value(for: resolved.key) else { return nil }
        response.source = .memory
        response.fetchURL = resolved.fetchURL
        response.downloadedBytes = 0
        response.isStale = false
        return response
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

    /// The memory stage, at the door and off the actor: the memory cache, then the remembered
    /// failures; then the request is in flight, admitted by the memory it will hold
    /// (``RequestAdmission``, which may push others out, or refuse it before anything started),
    /// and counted until it is answered.
    private nonisolated func response(for resolved: ResolvedRequest, task: ImageTask?) async throws -> ImageResponse {
        try Task.checkCancellation()
        if let answer = try memoryAnswer(for: resolved) { return answer }
        let id = nextID()
        let pushedOut = try requests.admit(id, url: resolved.fetchURL, key: resolved.key,
                                           priority: task?.priority ?? resolved.request.priority)
        defer { requests.release(id) }
        return try await inFlight(resolved, task: task, as: id, pushingOut: pushedOut)
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

    /// An admitted request, on the actor: the callers it pushed out leave their works, then it
    /// joins or starts the work for its key (processing or decoding) and waits. The memory
    /// cache is asked again first: work that finished while this one came to the actor is
    /// answered from memory, not done twice.
    private func inFlight(_ resolved: ResolvedRequest, task: ImageTask?, as id: UInt64,
                          pushingOut pushedOut: [(WaiterToken, ImagePipelineError)]) async throws -> ImageResponse {
        for (token, error) in pushedOut { tables[token.table].leave(token, failing: error, in: self) }
        if let answer = try memoryAnswer(for: resolved) { return answer }
        let processed = !resolved.key.processors.isEmpty
        let table = processed ? processing.works : decoding.decodes
        let existing = table.joinable(for: resolved.key, cachePolicy: resolved.request.cachePolicy)
        let work = processed ? processing.work(for: resolved, in: self) : decoding.work(for: resolved, in: self)
        // The priority now, in the turn the waiter registers: a task's change before this never
        // reached the books (it had no token), one after it does (`setWaiterPriority`).
        requests.setPriority(id, to: task?.priority ?? resolved.request.priority)
        requests.attach(id, to: WaiterToken(table: table.id, workID: work.id, waiterID: id), joined: work === existing ? work.id : nil)
        return try await table.wait(on: work, priority: resolved.request.priority, task: task, as: id, in: self)
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
    public func animation(for request: ImageRequest) async throws -> ImageAnimation {
        do {
            return try await animation(for: resolve(request))
        } catch let error as ImagePipelineError {
            throw error.addressed(to: request.url)
        }
    }

    private func animation(for resolved: ResolvedRequest) async throws -> ImageAnimation {
        let request = resolved.request
        let key = resolved.key, url = resolved.fetchURL
        let loaded = try await fetch.bytes(for: resolved, priority: request.priority, in: self)
        let decoders = configuration.decoders
        let options = DecodeOptions(maxPixelCount: configuration.maxPixelCount,
                                    maxAnimationFrameCount: configuration.maxAnimationFrameCount,
                                    maxAnimationPixelCount: configuration.maxAnimationPixelCount,
                                    resamplingFilter: key.processing.resamplingFilter)
        let animation: ImageAnimation
        do {
            // The header read runs on the decode pool, never on the actor: a codec may walk a
            // hostile container for seconds, and every other request needs the actor meanwhile.
            // It takes one of the pool's ``Configuration/maxConcurrentDecodes`` slots while it
            // runs, as a decode does, but no decode memory: the frames' canvases are admitted
            // by ``ImageAnimation/frames()`` when they are decoded.
            let data = loaded.data
            let (format, animated, info) = try await decoder.pool.run(priority: PriorityHandle(request.priority)) {
                try Self.readAnimationHeader(data, decoders: decoders, options: options)
            }
            // One window for every frame: a smart anchor is centred (``CropAnchor`` says so).
            let plan = ResizePlan(source: info.canvasSize, target: key.targetSize, contentMode: key.contentMode,
                                  anchor: key.cropAnchor, allowsUpscaling: key.processing.allowsUpscaling)
            animation = ImageAnimation(format: format, info: info, plan: plan, url: url, pixelFormat: key.processing.pixelFormat,
                                       data: data, decoder: animated,
                                       options: options, admission: self.decoder.admission, priority: request.priority)
        } catch is CancellationError {
            throw CancellationError()
        } catch {
            throw ImagePipelineError.wrap(error, decoding: url)
        }
        await loaded.pendingStore?.storeOnce()
        return animation
    }

    /// The animation header of `data` from the decoder `decoders` choose, checked against
    /// `options`' limits. Blocks (the codec parses its container): runs on the decode pool.
    private nonisolated static func readAnimationHeader(
        _ data: Data, decoders: DecoderRegistry, options: DecodeOptions
    ) throws -> (ImageFormat, any AnimatedImageDecoding, AnimationInfo) {
        let decoder = try decoders.requireDecoder(for: data)
        let format = decoders.format(of: data) ?? ImageFormat("unknown", mimeType: nil, fileExtension: nil)
        guard let animated = decoder as? any AnimatedImageDecoding else {
            throw ImagePipelineError.unsupported(format: format, message: "its decoder gives still pictures only")
        }
        let info = try animated.makeAnimationDecoder(for: data, options: options).animationInfo
        // The codec checked its header; checked again here for one that does not.
        try options.checkPixelLimit(ImageInfo(format: format, size: info.canvasSize))
        try options.checkAnimationLimits(canvas: info.canvasSize, frameCount: info.frameCount)
        return (format, animated, info)
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
        let resolved = resolve(request)
        if let hash = memoryCache.value(for: resolved.key)?.placeholder { return hash }
        guard let disk = FetchStage.disk(for: resolved, configuration: configuration),
              (try? configuration.loaders.checkAllowed(resolved.fetchURL)) != nil else { return nil }
        if let hash = await disk.cachedDigest(for: resolved.cacheURL)?.info.placeholder { return hash }
        let encoding = configuration.renditionEncoder?.renditionIdentifier ?? ""
        guard let rendition = RenditionStore.url(for: resolved.key, encoding: encoding) else { return nil }
        return await disk.cachedDigest(for: rendition)?.info.placeholder
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
            while let task = revalidator.background.values.first ?? prefetchSets.anyTask {
                if Task.isCancelled { cancelBackgroundWork() }
                await task.value
            }
        } onCancel: {
            Task { await self.cancelBackgroundWork() }
        }
    }

    /// Cancels background revalidations and prefetches.
    private func cancelBackgroundWork() {
        revalidator.cancelAll()
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
            for identity in identities.keys { dropDecodedCopies(of: identity) }
        } else {
            removedKeys = memoryCache.contains(own.key) ? [own.key] : []
            ledger.replace(own.cacheURL)
            memoryCache.removeValue(for: own.key)
        }
        for key in removedKeys + [own.key] {
            failures.decodes.removeValue(for: key)
            failures.processing.removeValue(for: key)
        }
        for fetchURL in identities.values { failures.downloads.removeValue(for: fetchURL) }
        guard let disk = configuration.diskCache else { return }
        // Under the key the configured encoder writes them (a key without a rendition has none to remove).
        let encoding = configuration.renditionEncoder?.renditionIdentifier ?? ""
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
        ledger.replaceAll()
        memoryCache.removeAll()
        removeAllFailures()
        await configuration.diskCache?.removeAll()
    }

    /// Forgets remembered permanent failures, so the next request tries again.
    public func removeAllFailures() {
        failures.removeAll()
    }

    // MARK: Diagnostics

    /// The number of callers waiting for the work `request` would join (0 when none is in
    /// flight): for diagnostics, and for tests that must know a caller has joined before they
    /// go on, instead of sleeping.
    public func waiterCount(for request: ImageRequest) -> Int {
        let key = key(for: request)
        return key.processors.isEmpty ? decoding.decodes.waiterCount(for: key) : processing.works.waiterCount(for: key)
    }

    /// The number of callers (decodes) waiting for the download of `url` (a cache identity).
    public func downloadWaiterCount(for url: URL) -> Int {
        fetch.downloads.waiterCount(for: url)
    }

    /// How many permanent failures the negative cache remembers (fetch URLs and keys); bounded
    /// by ``Configuration/negativeCacheLimit`` per kind.
    public var rememberedFailureCount: Int { failures.count }

    /// The bytes the remembered permanent failures are counted at (keys, errors, overhead);
    /// bounded by ``Configuration/negativeCacheByteLimit`` per kind.
    public var rememberedFailureBytes: Int { failures.bytes }

    /// The number of requests in flight (past the memory cache, waiting for their work) and
    /// the bytes they are counted at against ``Configuration/requestMemoryBudget``: for a
    /// server's metrics.
    public nonisolated var requestsInFlight: (count: Int, bytes: Int) { requests.usage }

    /// The current priority of the work `request` would join, if one is in flight.
    public func inFlightPriority(for request: ImageRequest) -> ImagePriority? {
        let key = key(for: request)
        return key.processors.isEmpty ? decoding.decodes.priority(for: key) : processing.works.priority(for: key)
    }

    // MARK: What the stages share

    /// Puts `response` in the memory cache under `key` unless the bytes it was made from (read
    /// at `generation`, ``ReplacementLedger``) were replaced since; `true` when it did. Every
    /// stage keeps its results through this one check. The cost counts what the entry holds
    /// besides pixels (its URL, strings and overhead: ``MemoryCost/of(_:for:)``), so the cache's
    /// budget bounds the memory for tiny pictures with long URLs too.
    @discardableResult
    func keep(_ response: ImageResponse, for key: ImageKey, madeFrom generation: UInt64?) -> Bool {
        guard ledger.isCurrent(key.cacheURL, since: generation) else { return false }
        memoryCache.insert(response, for: key, cost: MemoryCost.of(response, for: key))
        return true
    }

    /// New bytes replace the stored ones for the cache identity `url`: decoded copies of the
    /// old bytes must not answer again, nor be kept by a decode of them still running.
    func dropDecodedCopies(of url: URL) {
        ledger.replace(url)
        memoryCache.removeValues { $0.cacheURL == url }
    }

    /// Until when a permanent failure is remembered from now, or `nil` with no negative cache.
    func failureLifetime() -> Date? {
        guard configuration.negativeCacheLifetime > 0 else { return nil }
        return configuration.now().addingTimeInterval(configuration.negativeCacheLifetime)
    }

    /// A waiter leaves its work (its task was cancelled).
    func leave(_ token: WaiterToken) {
        tables[token.table].leave(token, failing: CancellationError(), in: self)
    }

    /// Moves one waiter to `priority` (an ``ImageTask``'s new priority), and its work with it.
    func setWaiterPriority(_ token: WaiterToken, to priority: ImagePriority) {
        tables[token.table].setWaiterPriority(token, to: priority, in: self)
        requests.setPriority(token.waiterID, to: priority)
    }

    /// Moves the waiter `work` holds in the work it waits on (a decode's in its download) to
    /// `work`'s new priority, and so on up.
    func propagatePriority<Value>(of work: InFlightWork<Value>) {
        guard let token = work.upstream else { return }
        setWaiterPriority(token, to: work.priority.current)
    }

    nonisolated func nextID() -> UInt64 {
        lastID.add(1, ordering: .relaxed).newValue
    }

    nonisolated func emit(_ event: ImagePipelineEvent) {
        configuration.eventHandler?(event)
    }
}
