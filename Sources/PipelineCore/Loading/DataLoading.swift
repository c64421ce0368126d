#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Validators for a conditional request (`If-None-Match` / `If-Modified-Since`).
public struct CacheValidator: Hashable, Sendable {
    /// The entity tag, sent as `If-None-Match`.
    public var etag: String?
    /// The `Last-Modified` value as received, sent back as `If-Modified-Since`.
    public var lastModified: String?
    /// The stored response stated no lifetime and got a heuristic one
    /// (``CacheEntryInfo/lifetimeIsHeuristic``): a 304 that states none either may get one
    /// again from `lastModified`. `false` for a stored response that said `no-cache`, `max-age`
    /// or `Expires`, whose rule a bare 304 does not repeat.
    public var allowsHeuristicLifetime: Bool

    /// Creates a validator; `nil` when neither part is given.
    public init?(etag: String?, lastModified: String?, allowsHeuristicLifetime: Bool = false) {
        guard etag != nil || lastModified != nil else { return nil }
        self.etag = etag
        self.lastModified = lastModified
        self.allowsHeuristicLifetime = allowsHeuristicLifetime
    }
}

/// What a loader is asked to load.
public struct DataLoadRequest: Sendable {
    /// The fetch URL.
    public var url: URL
    /// The current priority; it may rise while the load waits (a visible caller joined a prefetch).
    public var priority: PriorityHandle
    /// When set, load conditionally and answer ``DataLoadResult/notModified(_:)`` if unchanged.
    public var validator: CacheValidator?
    /// Extra request headers (HTTP loaders).
    public var headers: [String: String]
    /// Called with (bytes received, bytes expected if known) as data arrives. May be called
    /// from any thread.
    public var progress: (@Sendable (Int64, Int64?) -> Void)?
    /// The identity the pipeline caches these bytes under when a cache key maps `url` to
    /// another (``ImagePipeline/cacheURL(for:)``); `nil` when it is `url` itself. For loaders
    /// that coordinate through a cache (a shared tier's lease); never fetch it.
    public var cacheURL: URL?
    /// Called with each piece of the body as it arrives, in order, and the offset where it
    /// starts (0 again when the loader starts over, after a retry), for the previews of a
    /// picture still downloading (``ImagePipeline/PreviewPolicy``). `nil` when nobody wants
    /// them. A loader that cannot stream never calls it: the pipeline then decodes the whole
    /// body only. May be called from any thread; keep it cheap (the pipeline appends a copy).
    public var didReceiveData: (@Sendable (_ chunk: Data, _ offset: Int64) -> Void)?

    /// Creates a load request.
    public init(url: URL, priority: PriorityHandle = PriorityHandle(.visible), validator: CacheValidator? = nil,
                headers: [String: String] = [:], progress: (@Sendable (Int64, Int64?) -> Void)? = nil,
                cacheURL: URL? = nil, didReceiveData: (@Sendable (_ chunk: Data, _ offset: Int64) -> Void)? = nil) {
        self.url = url
        self.priority = priority
        self.validator = validator
        self.headers = headers
        self.progress = progress
        self.cacheURL = cacheURL
        self.didReceiveData = didReceiveData
    }
}

/// A loader's answer.
public enum DataLoadResult: Sendable {
    /// The bytes and what the response said about them.
    case data(Data, ResponseMetadata)
    /// The validator matched (HTTP 304): the cached copy is current; here is its new freshness.
    case notModified(ResponseMetadata)
}

/// Loads compressed bytes for the URL schemes it serves. Registered in a ``LoaderRegistry``.
///
/// Implementations honour task cancellation (throwing `CancellationError` promptly) and never
/// block the cooperative thread pool. For failures they throw the core's shared errors
/// (``ImagePipelineError/notFound(_:status:)``, `truncated`, `tooLarge`, `timeout`) or an error type of
/// their own; the pipeline hands it to callers inside
/// ``ImagePipelineError/loadingFailed(_:underlying:)``, and remembers it for a while when it
/// conforms to ``PipelineFailure`` and says it is permanent.
public protocol DataLoading: Sendable {
    /// The URL schemes served, lower-case (`["http", "https"]`).
    var schemes: Set<String> { get }

    /// Loads the bytes for `request.url`.
    func load(_ request: DataLoadRequest) async throws -> DataLoadResult

    /// Throws the loader's refusal when it would never request `url` (a scheme it refuses, a
    /// policy on hosts or addresses). The pipeline asks before answering a fetch URL from its
    /// disk cache, so no cache — a shared tier filled by other processes included — answers
    /// for a URL the loader refuses; a wrapping loader asks its base. Called on every disk
    /// lookup: it must be cheap and do no I/O. The default allows every URL.
    func checkAllowed(_ url: URL) throws
}

extension DataLoading {
    /// Allows every URL.
    public func checkAllowed(_ url: URL) throws {}
}
