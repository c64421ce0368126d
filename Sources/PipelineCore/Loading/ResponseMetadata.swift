import Foundation

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
    /// The bytes must not be stored on disk.
    public var noStore: Bool

    /// Creates metadata; everything unknown by default.
    public init(etag: String? = nil, lastModified: String? = nil, contentType: String? = nil,
                contentLength: Int64? = nil, freshFor: TimeInterval? = nil, noStore: Bool = false) {
        self.etag = etag
        self.lastModified = lastModified
        self.contentType = contentType
        self.contentLength = contentLength
        self.freshFor = freshFor
        self.noStore = noStore
    }

    /// The moment the bytes stop being fresh, given when they arrived; `nil` without a lifetime.
    public func freshUntil(receivedAt: Date) -> Date? {
        freshFor.map { receivedAt.addingTimeInterval($0) }
    }

    /// The validators to send when revalidating a stored copy, if the response had any.
    public var validator: CacheValidator? { CacheValidator(etag: etag, lastModified: lastModified) }
}
