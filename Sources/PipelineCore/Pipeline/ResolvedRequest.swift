#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// A request resolved once, at the pipeline's door: the URL that is downloaded and the
/// identity the caches know it by, named apart, and the memory key. Every stage below takes
/// this value; none runs the URL builder again.
struct ResolvedRequest: Sendable {
    /// What the caller asked for.
    let request: ImageRequest
    /// The URL downloaded (the URL builder's pick, e.g. a CDN width bucket): what loaders get
    /// and errors name, and what the not-found memory is kept by.
    let fetchURL: URL
    /// The fetch URL's identity in the caches (``CacheIdentity``): the disk entry, the
    /// download table and the memory key are keyed by it.
    let cacheURL: URL
    /// The memory key.
    let key: ImageKey

    init(_ request: ImageRequest, configuration: ImagePipeline.Configuration) {
        var request = request
        // A strict configuration makes the request strict before its key is made, so the key
        // (and every stage) sees the strictness that applies.
        if configuration.decodingStrictness == .strict { request.processing.strictDecoding = true }
        self.request = request
        fetchURL = configuration.urlBuilder.fetchURL(for: request)
        cacheURL = CacheIdentity.url(for: request, fetchURL: fetchURL, configuration: configuration)
        key = ImageKey(request: request, cacheURL: cacheURL)
    }

    private init(request: ImageRequest, fetchURL: URL, cacheURL: URL, key: ImageKey) {
        self.request = request
        self.fetchURL = fetchURL
        self.cacheURL = cacheURL
        self.key = key
    }

    /// The unprocessed decode a processed request shares with every other processor list of
    /// its picture: no processors, premultiplied pixels (processors work on those; a straight
    /// request makes its processed result straight once). Same fetch URL and identity.
    var unprocessed: ResolvedRequest {
        var request = request
        request.processors = []
        request.processing.pixelFormat = .rgba8Premultiplied
        var key = key.unprocessed
        key.processing.pixelFormat = .rgba8Premultiplied
        return ResolvedRequest(request: request, fetchURL: fetchURL, cacheURL: cacheURL, key: key)
    }

    /// Whether the request may answer from the caches (every policy but `reloadIgnoringCaches`).
    var readsCaches: Bool { request.cachePolicy != .reloadIgnoringCaches }

    /// What the disk cache keeps for the request: its own policy, else the configuration's.
    func diskCachePolicy(in configuration: ImagePipeline.Configuration) -> DiskCachePolicy {
        request.diskCachePolicy ?? configuration.diskCachePolicy
    }

    /// Whether the request may not load (`returnCacheDataDontLoad`).
    var cacheOnly: Bool { request.cachePolicy == .returnCacheDataDontLoad }

    /// A loader's `DataLoadRequest` for the fetch URL: the cache identity goes along only when
    /// it differs (a signed URL's loader keys its own coordination by it).
    func loadRequest(priority: PriorityHandle, validator: CacheValidator? = nil,
                     progress: (@Sendable (Int64, Int64?) -> Void)? = nil,
                     didReceiveData: (@Sendable (Data, Int64) -> Void)? = nil) -> DataLoadRequest {
        DataLoadRequest(url: fetchURL, priority: priority, validator: validator, headers: request.headers,
                        progress: progress, cacheURL: cacheURL == fetchURL ? nil : cacheURL,
                        didReceiveData: didReceiveData)
    }
}
