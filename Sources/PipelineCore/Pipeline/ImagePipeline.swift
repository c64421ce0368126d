import Foundation

/// The image pipeline: request in, decoded bitmap of the requested size out.
///
/// This actor only coordinates. Its state is the two in-flight tables (downloads by fetch URL,
/// decodes by ``ImageKey``; shared work runs at the highest priority of its current waiters),
/// the bounded negative cache and the prefetch tasks; every slow step runs
/// elsewhere — decoding and resampling on a bounded ``WorkerPool``, loading in the loaders,
/// file work in the disk cache — and comes back through continuations. Nothing here blocks.
///
/// Many callers asking for the same picture share one download and one decode. A caller that
/// cancels gets `CancellationError` at once; the shared work goes on while anyone still waits,
/// and is cancelled when the last waiter leaves.
public actor ImagePipeline {
    /// What the pipeline was built from.
    public nonisolated let configuration: Configuration
    /// The memory cache of decoded results (shared with the configuration).
    public nonisolated let memoryCache: MemoryCache<ImageKey, ImageResponse>

    let decodePool: WorkerPool
    /// Admits decodes by their estimated memory (``Configuration/decodeMemoryBudget``).
    let admission: DecodeAdmission?
    /// Decodes in flight, by key.
    let decodes = InFlightTable<ImageKey, ImageResponse> { .decode($0) }
    /// Downloads in flight, by fetch URL.
    let downloads = InFlightTable<URL, LoadedData> { .download($0) }
    /// Remembered permanent failures of downloads (a 404), for every request of the URL.
    let failures: NegativeCache<URL>
    /// Remembered permanent failures of decodes (undecodable bytes) and of processors, for one
    /// key only: whether bytes decode can depend on the key's processing (strict decoding).
    let decodeFailures: NegativeCache<ImageKey>
    /// How many times stored bytes were replaced by new ones (a revalidation), and when each URL
    /// last was (bounded): a decode of bytes read before their replacement is not kept in memory.
    var replacements: UInt64 = 0
    let replacedAt = MemoryCache<URL, UInt64>(costLimit: Int.max, countLimit: 1000, entryCostFraction: 1)
    /// The count of replacements when every cache was last emptied (``removeAll()``).
    var allReplacedAt: UInt64 = 0
    var prefetches: [ImageKey: (id: UInt64, task: Task<Void, Never>)] = [:]
    var background: [UInt64: Task<Void, Never>] = [:]
    var revalidating: Set<URL> = []
    private var lastID: UInt64 = 0

    /// Creates a pipeline.
    public init(configuration: Configuration) {
        self.configuration = configuration
        self.memoryCache = configuration.memoryCache
        self.decodePool = WorkerPool(maxConcurrent: configuration.maxConcurrentDecodes, name: "ImagePipeline.decode")
        self.admission = configuration.decodeMemoryBudget.map { DecodeAdmission(budget: $0) }
        self.failures = NegativeCache(limit: configuration.negativeCacheLimit)
        self.decodeFailures = NegativeCache(limit: configuration.negativeCacheLimit)
    }

    /// The decode memory in use now, its peak so far, and how many decodes wait for memory
    /// (all zero without a ``Configuration/decodeMemoryBudget``): for a server's metrics.
    public nonisolated var decodeMemory: DecodeMemoryUsage {
        guard let admission else { return DecodeMemoryUsage(bytesInUse: 0, peakBytesInUse: 0, waitingDecodes: 0, budget: nil) }
        return DecodeMemoryUsage(bytesInUse: admission.bytesInUse, peakBytesInUse: admission.peakBytesInUse,
                                 waitingDecodes: admission.waitingCount, budget: admission.budget)
    }

    /// The fetch URL for `request`, by the configured URL builder.
    public nonisolated func fetchURL(for request: ImageRequest) -> URL {
        configuration.urlBuilder.fetchURL(for: request)
    }

    /// The memory key for `request` (its ``ImageKey/fetchURL`` is the cache identity,
    /// ``cacheURL(for:)``).
    public nonisolated func key(for request: ImageRequest) -> ImageKey {
        ImageKey(request: request, fetchURL: cacheURL(for: request))
    }

    /// The picture for `request` if the memory cache has it; synchronous, callable from any
    /// thread (a UI thread too). Never loads.
    public nonisolated func cachedImage(for request: ImageRequest) -> ImageResponse? {
        let fetchURL = fetchURL(for: request)
        let key = ImageKey(request: request, fetchURL: cacheURL(for: request, fetchURL: fetchURL))
        guard var response = memoryCache.value(for: key) else { return nil }
        response.source = .memory
        response.fetchURL = fetchURL
        response.downloadedBytes = 0
        response.isStale = false
        return response
    }

    /// The picture for `request`: from memory, by joining work in flight, from the disk cache
    /// or from a loader, decoded to the requested size.
    /// - Throws: ``ImagePipelineError`` for failures, `CancellationError` when the calling task
    ///   is cancelled (at once, even if others still wait for the same work).
    public func image(for request: ImageRequest) async throws -> ImageResponse {
        try await image(for: request, task: nil)
    }

    /// ``image(for:)`` for an ``ImageTask`` (whose priority and progress it follows), or for a
    /// plain caller with `task` `nil`.
    func image(for request: ImageRequest, task: ImageTask?) async throws -> ImageResponse {
        let started = configuration.now()
        emit(.started(request))
        let key = key(for: request)
        do {
            var response = try await response(for: request, key: key, task: task)
            response.fetchURL = fetchURL(for: request)
            emit(.completed(request, source: response.source, seconds: configuration.now().timeIntervalSince(started)))
            return response
        } catch is CancellationError {
            emit(.cancelled(request))
            throw CancellationError()
        } catch {
            emit(.failed(request, error))
            throw error
        }
    }

    private func response(for request: ImageRequest, key: ImageKey, task: ImageTask?) async throws -> ImageResponse {
        try Task.checkCancellation()
        if request.cachePolicy != .reloadIgnoringCaches, let hit = cachedImage(for: request) {
            emit(.memoryHit(request))
            return hit
        }
        if request.cachePolicy != .reloadIgnoringCaches {
            let now = configuration.now()
            // Download failures by the URL fetched (a new signature deserves a try), decode
            // failures by key (the same bytes, whatever the token).
            if let error = failures.error(for: fetchURL(for: request), now: now) ?? decodeFailures.error(for: key, now: now) {
                throw error
            }
        }
        // Why "straight away": the entry goes into the table before the first `await`, so a
        // second caller arriving while this one is suspended finds it and joins.
        let work = decodeWork(for: request, key: key)
        return try await wait(on: work, in: decodes, key: key, priority: request.priority, task: task)
    }

    /// Starts loading and decoding `requests` at prefetch priority, so a later `image(for:)`
    /// finds them in memory or in flight. Requests already cached or prefetching are skipped.
    public func prefetch(_ requests: [ImageRequest]) {
        for original in requests {
            var request = original
            request.priority = .prefetch
            let key = key(for: request)
            guard prefetches[key] == nil, !memoryCache.contains(key) else { continue }
            let id = nextID()
            let task = Task { [request] in
                _ = try? await self.image(for: request)
                self.prefetchFinished(key, id: id)
            }
            prefetches[key] = (id, task)
        }
    }

    /// Cancels the prefetches of `requests`. Work that a visible caller also waits for goes on.
    public func cancelPrefetch(_ requests: [ImageRequest]) {
        for request in requests {
            prefetches.removeValue(forKey: key(for: request))?.task.cancel()
        }
    }

    /// Cancels every prefetch.
    public func cancelAllPrefetches() {
        for (_, entry) in prefetches { entry.task.cancel() }
        prefetches.removeAll()
    }

    /// The number of prefetches still running.
    public var prefetchCount: Int { prefetches.count }

    /// Waits until background work (stale-while-revalidate checks, prefetches) has finished:
    /// for command-line tools that must not exit with work cut off.
    ///
    /// Cancelling the waiting task cancels that background work (a revalidation whose origin
    /// never answers would otherwise be waited for forever), and the wait then ends.
    public func waitForBackgroundWork() async {
        await withTaskCancellationHandler {
            while let task = background.values.first ?? prefetches.values.first?.task {
                if Task.isCancelled { cancelBackgroundWork() }
                await task.value
            }
        } onCancel: {
            Task { await self.cancelBackgroundWork() }
        }
    }

    /// Cancels background revalidations and prefetches.
    private func cancelBackgroundWork() {
        for task in background.values { task.cancel() }
        cancelAllPrefetches()
    }

    /// Forgets remembered permanent failures, so the next request tries again.
    public func removeAllFailures() {
        failures.removeAll()
        decodeFailures.removeAll()
    }

    private func prefetchFinished(_ key: ImageKey, id: UInt64) {
        if prefetches[key]?.id == id { prefetches[key] = nil }
    }

    func nextID() -> UInt64 {
        lastID &+= 1
        return lastID
    }

    func emit(_ event: ImagePipelineEvent) {
        configuration.eventHandler?(event)
    }
}
