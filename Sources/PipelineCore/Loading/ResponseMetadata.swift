#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// What a loader says about the bytes it returns, in terms any source can fill: validators for
/// asking again conditionally, how long the bytes stay fresh, whether they may be stored, and
/// their declared type and length. The HTTP loader fills it from response headers (LoaderHTTP's
/// `HTTPResponseHeaders`); a custom loader sets what it knows and leaves the rest `nil`.
public struct ResponseMetadata: Hashable, Sendable {
    /// An opaque validator sent back as `If-None-Match` (HTTP: the `ETag`, quotes and `W/` kept).
    public var etag: String?
    /// A second validator sent back as `If-Modified-Since` (HTTP: `Last-Modified`, as sent).
    public var lastModified: String?
    /// The media type without parameters, lower-case (`image/png`), if the source said.
    public var contentType: String?
    /// The announced length in bytes, if the source said.
    public var contentLength: Int64?
    /// How long the bytes stay fresh from the moment they arrive, in seconds: a stored copy is
    /// served without asking the source again until then. `0` (or less) means "revalidate
    /// before every use"; `nil` means the source gave no lifetime (stored, treated as stale).
    /// The HTTP loader fills it by RFC 9111, with a heuristic lifetime for responses that send
    /// only `Last-Modified` (LoaderHTTP's `HTTPResponseHeaders.heuristicLifetime(receivedAt:)`);
    /// a custom loader sets what its source promises. The pipeline's ``FreshnessPolicy`` may
    /// raise or replace it for the disk entry.
    public var freshFor: TimeInterval?
    /// `true` when ``freshFor`` is a heuristic lifetime (RFC 9111 §4.2.2: the response stated
    /// none of its own), kept with the disk entry (``CacheEntryInfo/lifetimeIsHeuristic``) so
    /// that a later bare 304 gets one by the same rule, and a response that stated `no-cache`
    /// or `max-age` never does. Default `false`.
    public var lifetimeIsHeuristic = false
    /// The bytes must not be stored on disk.
    public var noStore: Bool
    /// Whether the bytes came over a network or not, reported as the response's
    /// ``ImageSource`` (``ImageSource/network``, ``ImageSource/local``); `nil`, the default,
    /// is reported as ``ImageSource/loader``. LoaderHTTP sets `.network`, LoaderFile `.local`.
    public var origin: LoadOrigin?

    /// Creates metadata; everything unknown by default.
    public init(etag: String? = nil, lastModified: String? = nil, contentType: String? = nil,
                contentLength: Int64? = nil, freshFor: TimeInterval? = nil, noStore: Bool = false,
                origin: LoadOrigin? = nil) {
        self.etag = etag
        self.lastModified = lastModified
        self.contentType = contentType
        self.contentLength = contentLength
        self.freshFor = freshFor
        self.noStore = noStore
        self.origin = origin
    }

    /// The moment the bytes stop being fresh, given when they arrived; `nil` without a lifetime.
    public func freshUntil(receivedAt: Date) -> Date? {
        freshFor.map { receivedAt.addingTimeInterval($0) }
    }

    /// The validators to send when revalidating a stored copy, if the response had any.
    public var validator: CacheValidator? {
        CacheValidator(etag: etag, lastModified: lastModified, allowsHeuristicLifetime: lifetimeIsHeuristic)
    }
}

/// Where a loader's bytes came from (``ResponseMetadata/origin``).
public enum LoadOrigin: String, Hashable, Sendable {
    /// Over a network: an HTTP server, a CDN.
    case network
    /// Without a network: a local file, a `data:` URL, an asset catalogue, a database.
    case local
}
