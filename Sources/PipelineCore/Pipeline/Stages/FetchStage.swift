import Foundation

/// The fetching stage: the compressed bytes of a cache identity, from the disk cache when it
/// may answer (fresh; stale with the request's ``RevalidationPolicy``; offline), else from the
/// loader for the fetch URL's scheme. One download per cache identity however many decodes
/// wait (two signed URLs of one picture share the first caller's download).
///
/// Bytes a loader returns are not stored here: they reach the disk cache as a
/// ``PendingStore`` that the first decode that succeeds claims (``DecodeStage``), so a broken
/// body is never kept. Runs on the pipeline actor.
struct FetchStage {
    /// Downloads in flight, by cache identity.
    let downloads: InFlightTable<URL, LoadedData>
    /// Remembered permanent failures of downloads (``RememberedFailures/downloads``).
    let failures: NegativeCache<URL>

    init(tableID: Int, failures: NegativeCache<URL>) {
        downloads = InFlightTable(id: tableID)
        self.failures = failures
    }

    /// The bytes for `resolved`: joins the download of its cache identity, or starts one, and
    /// waits as a waiter of `dependent` (the decode on whose behalf it waits) or, without one,
    /// at `priority`. A download's failure reaches every waiter wrapped with the fetch URL and,
    /// when permanent, is remembered for it.
    func bytes(for resolved: ResolvedRequest, priority: ImagePriority, upstreamOf dependent: (any UpstreamLinked)? = nil,
               in pipeline: isolated ImagePipeline) async throws -> LoadedData {
        let failures = failures
        let work = downloads.work(for: resolved.cacheURL, priority: resolved.request.priority,
                                  cachePolicy: resolved.request.cachePolicy, in: pipeline) { pipeline, work in
            try await pipeline.fetch.perform(resolved, work: work, in: pipeline)
        } completion: { pipeline, result in
            switch result {
            case .success:  // bytes in hand: a failure remembered for this URL no longer holds
                failures.removeValue(for: resolved.fetchURL)
            case .failure(let error) where !(error is CancellationError):
                let wrapped = ImagePipelineError.wrap(error, loading: resolved.fetchURL)
                if wrapped.isPermanent, let until = pipeline.failureLifetime() {
                    failures.insert(wrapped, until: until, for: resolved.fetchURL)
                }
                result = .failure(wrapped)
            case .failure:
                break
            }
        }
        return try await downloads.wait(on: work, priority: priority, upstreamOf: dependent, in: pipeline)
    }

    /// The disk cache for `resolved`'s fetch URL: the configured one when its scheme is
    /// disk-cached (``ImagePipeline/Configuration/diskCachedSchemes``).
    static func disk(for resolved: ResolvedRequest, configuration: ImagePipeline.Configuration) -> (any DataCaching)? {
        configuration.diskCachedSchemes.contains(resolved.fetchURL.scheme?.lowercased() ?? "") ? configuration.diskCache : nil
    }

    /// A download work's task: the disk cache (under the cache identity) when it may be used,
    /// else the loader, reporting its progress to the work's ``InFlightWork/progress``.
    private func perform(_ resolved: ResolvedRequest, work: InFlightWork<LoadedData>,
                         in pipeline: isolated ImagePipeline) async throws -> LoadedData {
        try Task.checkCancellation()
        let configuration = pipeline.configuration
        let relay = work.progress, streamed = work.body
        let progress: @Sendable (Int64, Int64?) -> Void = { relay.send(ImageTask.Progress(completed: $0, total: $1)) }
        // The body's pieces, kept for previews only while a decode that shows them follows.
        let didReceiveData: (@Sendable (Data, Int64) -> Void)? =
            configuration.previewPolicy == nil ? nil : { @Sendable in streamed.append($0, at: $1) }
        defer { streamed.finish() }
        let disk = Self.disk(for: resolved, configuration: configuration)
        // A URL the loader refuses is refused from the caches too (a shared tier may hold it).
        try configuration.loaders.checkAllowed(resolved.fetchURL)
        if resolved.readsCaches, let disk,
           let stored = try await cached(resolved, disk: disk, priority: work.priority, progress: progress, in: pipeline) {
            return stored
        }
        if resolved.cacheOnly { throw ImagePipelineError.notCached }
        try Task.checkCancellation()
        let loader = try configuration.loaders.requireLoader(for: resolved.fetchURL)
        switch try await loader.load(resolved.loadRequest(priority: work.priority, progress: progress, didReceiveData: didReceiveData)) {
        case .data(let data, let metadata):
            pipeline.emit(.loaded(resolved.fetchURL, bytes: data.count))
            var loaded = LoadedData(data: data, source: ImageSource(metadata.origin), generation: nil)
            loaded.downloadedBytes = data.count
            if let disk, !metadata.noStore {
                let info = CacheEntryInfo(metadata, receivedAt: configuration.now(),
                                          freshness: resolved.freshnessPolicy(in: configuration))
                loaded.info = info
                loaded.pendingStore = PendingStore(disk: disk, url: resolved.cacheURL, data: data, info: info,
                                                   replacesStoredBytes: false)
            } else if let disk, !resolved.readsCaches {
                await disk.removeData(for: resolved.cacheURL)  // a reload may have skipped an entry these bytes replace
            }
            return loaded
        case .notModified:
            throw ImagePipelineError.unexpectedNotModified
        }
    }

    /// A download work's answer from the disk cache under the cache identity, if it holds
    /// one: fresh, stale (revalidated now or in the background, as the request says), or for
    /// a cache-only request. `nil` when the disk holds none.
    ///
    /// Never inlined into ``perform(_:work:in:)``: the frame of an async function holds its
    /// whole body's locals for as long as it runs, and a task keeps the largest frames it ever
    /// held, so a download waiting for its loader (each of many thousand requests to slow
    /// hosts, or queued in the loader) does not hold this part's frame.
    @inline(never)
    private func cached(_ resolved: ResolvedRequest, disk: any DataCaching, priority: PriorityHandle,
                        progress: @escaping @Sendable (Int64, Int64?) -> Void,
                        in pipeline: isolated ImagePipeline) async throws -> LoadedData? {
        let configuration = pipeline.configuration, request = resolved.request
        let read = pipeline.ledger.current  // before the read: a replacement during it counts
        guard let cached = await disk.cachedData(for: resolved.cacheURL) else { return nil }
        let fresh = cached.info.isFresh(at: configuration.now())
        pipeline.emit(.diskHit(resolved.fetchURL, fresh: fresh))
        var stored = LoadedData(data: cached.data, source: .disk, generation: read)
        stored.info = cached.info
        stored.pendingStore = PendingStore.promotion(of: cached, from: disk, url: resolved.cacheURL)
        if fresh || resolved.cacheOnly { return stored }
        if request.revalidation == .staleWhileRevalidate {
            pipeline.revalidator.revalidateInBackground(resolved, disk: disk, in: pipeline)
            stored.isStale = true
            return stored
        }
        do {
            return try await pipeline.revalidator.revalidateOriginal(cached, for: resolved, disk: disk, priority: priority,
                                                                     progress: progress, in: pipeline)
        } catch is CancellationError {
            throw CancellationError()
        } catch {
            return stored  // offline: the stale copy still serves
        }
    }
}
