import Synchronization

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// The fetching stage: the compressed bytes of a cache identity, from the disk cache when it
/// may answer (fresh; stale with the request's ``RevalidationPolicy``; offline), else from the
/// loader for the fetch URL's scheme. One download per cache identity however many decodes
/// wait (two signed URLs of one picture share the first caller's download). Its stream: the
/// download's progress, and the body's first bytes as its partial value
/// (``ArrivingBody``) while a subscriber wants them (a decode that shows previews).
///
/// Bytes a loader returns are not stored here: they reach the disk cache as a
/// ``PendingStore`` that the first decode that succeeds claims (``DecodeStage``), so a broken
/// body is never kept. Knows only the loaders and the disk cache below it.
final class FetchStage: Sendable {
    typealias Subscription = StageSubscription<ArrivingBody, Void>

    /// Downloads in flight, by cache identity.
    let downloads: StageTable<URL, LoadedData, ArrivingBody, Void>
    /// Remembered permanent failures of downloads (``RememberedFailures/downloads``).
    let failures: NegativeCache<URL>
    /// Conditional requests, and stale-while-revalidate checks in the background.
    let revalidator: Revalidator
    private let configuration: ImagePipeline.Configuration
    private let ledger: ReplacementLedger

    init(tableID: Int, failures: NegativeCache<URL>, revalidator: Revalidator, ledger: ReplacementLedger,
         configuration: ImagePipeline.Configuration) {
        downloads = StageTable(id: tableID)
        self.failures = failures
        self.revalidator = revalidator
        self.ledger = ledger
        self.configuration = configuration
    }

    /// The bytes for `resolved`: joins the download of its cache identity, or starts one, and
    /// waits as `subscription` says, on behalf of `dependent` (the decode whose priority it
    /// follows), if any. A download's failure reaches every subscriber wrapped with the fetch
    /// URL and, when permanent, is remembered for it.
    func data(for resolved: ResolvedRequest, _ subscription: Subscription,
              dependent: (any DependentWork)? = nil) async throws -> LoadedData {
        try await downloads.value(for: resolved.cacheURL, cachePolicy: resolved.request.cachePolicy, subscription: subscription,
                                  dependent: dependent) { [self] work in
            do {
                let loaded = try await perform(resolved, work: work)
                failures.removeValue(for: resolved.fetchURL)  // bytes in hand: a remembered failure no longer holds
                return loaded
            } catch let error where !(error is CancellationError) {
                let wrapped = ImagePipelineError.wrap(error, loading: resolved.fetchURL)
                if wrapped.isPermanent, let until = configuration.failureLifetime() {
                    failures.insert(wrapped, until: until, for: resolved.fetchURL)
                }
                throw wrapped
            }
        }
    }

    /// The disk cache for `resolved`'s fetch URL: the configured one when its scheme is
    /// disk-cached (``ImagePipeline/Configuration/diskCachedSchemes``).
    static func disk(for resolved: ResolvedRequest, configuration: ImagePipeline.Configuration) -> (any DataCaching)? {
        configuration.diskCachedSchemes.contains(resolved.fetchURL.scheme?.lowercased() ?? "") ? configuration.diskCache : nil
    }

    /// A download work's task: the disk cache (under the cache identity) when it may be used,
    /// else the loader, its progress and body sent to the work's subscribers.
    private func perform(_ resolved: ResolvedRequest, work: StageWork<ArrivingBody>) async throws -> LoadedData {
        try Task.checkCancellation()
        let disk = Self.disk(for: resolved, configuration: configuration)
        // A URL the loader refuses is refused from the caches too (a shared tier may hold it).
        try configuration.loaders.checkAllowed(resolved.fetchURL)
        if work.readsCaches, let disk, let stored = try await cached(resolved, disk: disk, work: work) { return stored }
        if resolved.cacheOnly { throw ImagePipelineError.notCached }
        try Task.checkCancellation()
        return try await load(resolved, disk: disk, work: work)
    }

    /// The loader's answer for `resolved`, with the work's progress and body. Never inlined
    /// into ``perform(_:work:)`` (see ``cached(_:disk:work:)``).
    @inline(never)
    private func load(_ resolved: ResolvedRequest, disk: (any DataCaching)?, work: StageWork<ArrivingBody>) async throws -> LoadedData {
        let loader = try configuration.loaders.requireLoader(for: resolved.fetchURL)
        let request = resolved.loadRequest(priority: work.priority, progress: Self.progress(of: work),
                                           didReceiveData: configuration.previewPolicy == nil ? nil : Self.body(of: work))
        switch try await loader.load(request) {
        case .data(let data, let metadata):
            configuration.emit(.loaded(resolved.fetchURL, bytes: data.count))
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

    /// A loader's progress callback that sends `work`'s progress.
    private static func progress(of work: StageWork<ArrivingBody>) -> @Sendable (Int64, Int64?) -> Void {
        { work.progress(ImageTask.Progress(completed: $0, total: $1)) }
    }

    /// A loader's body callback that keeps the body's pieces, only while a subscriber wants
    /// them (a decode that shows previews), and sends the body as `work`'s partial value.
    private static func body(of work: StageWork<ArrivingBody>) -> @Sendable (Data, Int64) -> Void {
        let body = ArrivingBody()
        return { chunk, offset in
            if work.wantsPartials, body.append(chunk, at: offset) { work.partial(body) }
        }
    }

    /// A download work's answer from the disk cache under the cache identity, if it holds
    /// one: fresh, stale (revalidated now or in the background, as the request says), or for
    /// a cache-only request. `nil` when the disk holds none.
    ///
    /// Never inlined into ``perform(_:work:)``: the frame of an async function holds its whole
    /// body's locals for as long as it runs, and a task keeps the largest frames it ever held,
    /// so a download waiting for its loader (each of many thousand requests to slow hosts, or
    /// queued in the loader) does not hold this part's frame.
    @inline(never)
    private func cached(_ resolved: ResolvedRequest, disk: any DataCaching, work: StageWork<ArrivingBody>) async throws -> LoadedData? {
        let read = ledger.current  // before the read: a replacement during it counts
        guard let cached = await disk.cachedData(for: resolved.cacheURL) else { return nil }
        let fresh = cached.info.isFresh(at: configuration.now())
        configuration.emit(.diskHit(resolved.fetchURL, fresh: fresh))
        var stored = LoadedData(data: cached.data, source: .disk, generation: read)
        stored.info = cached.info
        stored.pendingStore = PendingStore.promotion(of: cached, from: disk, url: resolved.cacheURL)
        if fresh || resolved.cacheOnly { return stored }
        if resolved.request.revalidation == .staleWhileRevalidate {
            revalidator.revalidateInBackground(resolved, disk: disk)
            stored.isStale = true
            return stored
        }
        do {
            return try await revalidator.revalidateOriginal(cached, for: resolved, disk: disk, priority: work.priority,
                                                            progress: Self.progress(of: work))
        } catch is CancellationError {
            throw CancellationError()
        } catch {
            return stored  // offline: the stale copy still serves
        }
    }
}

/// A download's body as it arrives: the fetch stage's partial value, sent each time it grows.
/// It keeps bytes only once a subscriber wants them (a decode that shows previews), from the
/// body's first byte: a piece that does not follow the bytes kept drops them, and a loader
/// that starts over (a retry) starts again at 0. The loader appends from its own thread; the
/// bytes go with the last reference, when the download and the previews made of it are done.
final class ArrivingBody: Sendable {
    private let data = Mutex(Data())

    /// Appends a piece of the body that starts at `offset`; `true` when the kept bytes grew.
    func append(_ chunk: Data, at offset: Int64) -> Bool {
        data.withLock { data in
            if offset == 0 { data = Data() }
            guard offset == Int64(data.count) else {
                data = Data()
                return false
            }
            data.append(chunk)
            return true
        }
    }

    /// The bytes received so far (a copy-on-write snapshot).
    var bytes: Data { data.withLock { $0 } }

    /// How many bytes are kept.
    var count: Int { data.withLock { $0.count } }
}
