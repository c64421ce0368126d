import PipelineCore

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// The parts of an HTTP response's headers the pipeline uses: validators, freshness (RFC 9111),
/// type and length, and `Retry-After`. ``metadata(receivedAt:)`` turns them into the core's
/// source-neutral `ResponseMetadata`.
public struct HTTPResponseHeaders: Hashable, Sendable {
    /// The HTTP status code.
    public var statusCode: Int?
    /// `ETag`, as sent (quotes and `W/` kept).
    public var etag: String?
    /// `Last-Modified`, as sent.
    public var lastModified: String?
    /// `Content-Type` without parameters, lower-case.
    public var contentType: String?
    /// `Content-Length` in bytes.
    public var contentLength: Int64?
    /// `Content-Encoding`, lower-case, if the server sent one.
    public var contentEncoding: String?
    /// `Cache-Control: max-age` in seconds (`s-maxage` is for shared caches and ignored).
    public var maxAge: TimeInterval?
    /// `Expires`.
    public var expires: Date?
    /// `Date`: the server's clock when it sent the response.
    public var date: Date?
    /// `Age` in seconds: how long the response sat in caches on the way.
    public var age: TimeInterval?
    /// `Cache-Control: no-cache`: a stored copy must be revalidated before every use.
    public var noCache: Bool = false
    /// `Cache-Control: no-store`: the response must not be stored.
    public var noStore: Bool = false
    /// `Cache-Control: must-revalidate`: no heuristic lifetime (``heuristicFreshnessCap``).
    public var mustRevalidate: Bool = false
    /// `Retry-After` in seconds (given as seconds or as an HTTP date).
    public var retryAfter: TimeInterval?
    /// `false` for a 304 that updates a stored response which stated a lifetime of its own
    /// (``updatingStoredResponse(_:)``): no heuristic lifetime then.
    var allowsHeuristic = true

    /// Headers with everything unknown.
    public init(statusCode: Int? = nil) {
        self.statusCode = statusCode
    }

    /// Parses the headers of an HTTP response. Header names compare case-insensitively; for a
    /// repeated `Cache-Control` the directives of every copy count.
    public init(statusCode: Int?, headers: [(name: String, value: String)]) {
        self.init(statusCode: statusCode)
        for (rawName, rawValue) in headers {
            let value = rawValue.trimmingHTTPWhitespace()
            switch rawName.lowercased() {
            case "etag": etag = value
            case "last-modified": lastModified = value
            case "content-type":
                contentType = value.split(separator: ";").first.map {
                    String($0).trimmingHTTPWhitespace().lowercased()
                }
            case "content-length": contentLength = Int64(value)
            case "content-encoding": contentEncoding = value.lowercased()
            case "expires": expires = HTTPDate.parse(value) ?? Date.distantPast  // invalid means already expired
            case "date": date = HTTPDate.parse(value)
            case "age": age = TimeInterval(value).map { max(0, $0) }
            case "retry-after": retryAfter = TimeInterval(value) ?? HTTPDate.parse(value).map { $0.timeIntervalSinceNow }
            case "cache-control": parseCacheControl(value)
            default: break
            }
        }
    }

    private mutating func parseCacheControl(_ value: String) {
        for directive in value.split(separator: ",") {
            let parts = directive.split(separator: "=", maxSplits: 1)
            guard let first = parts.first else { continue }
            let name = String(first).trimmingHTTPWhitespace().lowercased()
            let argument = parts.count > 1
                ? String(String(parts[1]).trimmingHTTPWhitespace().trimmingPrefix("\"").prefix { $0 != "\"" })
                : nil
            switch name {
            case "max-age": maxAge = argument.flatMap { TimeInterval($0) }.map { max(0, $0) } ?? 0
            case "no-cache": noCache = true
            case "no-store": noStore = true
            case "must-revalidate": mustRevalidate = true
            default: break
            }
        }
    }

    /// The longest lifetime the heuristic gives (``heuristicLifetime(receivedAt:)``): one week,
    /// in seconds. Firefox caps its heuristic at a week; Chromium does not cap it. The week is
    /// the more careful of the two: a picture unchanged for a year is asked about again after
    /// seven days, not after 36 (a replaced avatar shows within a week), while every picture
    /// unchanged for ten weeks or more still stays fresh a whole week.
    public static let heuristicFreshnessCap: TimeInterval = 7 * 24 * 3600

    /// The fraction of the time since `Last-Modified` that the heuristic counts as fresh: 10%,
    /// as RFC 9111 §4.2.2 suggests and Firefox and Chromium use.
    public static let heuristicFreshnessFraction = 0.1

    /// Whether the response states its own lifetime: `max-age` or `Expires` (`no-cache` is an
    /// explicit "revalidate every time"). Without one, the lifetime is the heuristic's.
    private var hasExplicitLifetime: Bool { noCache || maxAge != nil || expires != nil }

    /// The lifetime RFC 9111 §4.2.2 lets a cache assume when the response states none, in
    /// seconds: ``heuristicFreshnessFraction`` of `Date` (else `receivedAt`) minus
    /// `Last-Modified`, at most ``heuristicFreshnessCap``, as browsers do for origins that send
    /// only `Last-Modified` (Python's `http.server`, many object stores). `nil` when the
    /// response states a lifetime (`max-age`, `Expires`, `no-cache`), is `no-store` or
    /// `must-revalidate` (as Chromium), is not a 200 or 203 (the answers the loader keeps), or
    /// has no readable `Last-Modified`, or one later than its `Date`.
    public func heuristicLifetime(receivedAt: Date) -> TimeInterval? {
        guard allowsHeuristic, !hasExplicitLifetime, !noStore, !mustRevalidate, statusCode == 200 || statusCode == 203,
              let modified = lastModified.flatMap(HTTPDate.parse) else { return nil }
        let unchanged = (date ?? receivedAt).timeIntervalSince(modified)
        guard unchanged >= 0 else { return nil }  // modified "in the future": no basis for a guess
        return min(unchanged * Self.heuristicFreshnessFraction, Self.heuristicFreshnessCap)
    }

    /// How long the response stays fresh from `receivedAt` (RFC 9111 §4.2): the lifetime
    /// (`max-age`, else `Expires − Date`, else ``heuristicLifetime(receivedAt:)``) minus the age
    /// it already had (`Age`, or the time since `Date`). `nil` when there is no lifetime at all;
    /// `0` for `no-cache` (always revalidate).
    public func freshFor(receivedAt: Date) -> TimeInterval? {
        if noCache { return 0 }
        let lifetime: TimeInterval
        if let maxAge {
            lifetime = maxAge
        } else if let expires {
            lifetime = expires.timeIntervalSince(date ?? receivedAt)
        } else if let heuristic = heuristicLifetime(receivedAt: receivedAt) {
            lifetime = heuristic
        } else {
            return nil
        }
        let apparentAge = date.map { max(0, receivedAt.timeIntervalSince($0)) } ?? 0
        let currentAge = max(apparentAge, age ?? 0)
        return lifetime - currentAge
    }

    /// A 304's headers as they update the stored response they validate (RFC 9111 §4.3.4):
    /// the 304's own fields, with the stored response's status (a 200: the loader stores
    /// nothing else) and its `Last-Modified` (what was sent as `If-Modified-Since`) when the
    /// 304 repeats none. So the refreshed lifetime follows the same rules as a 200's, the
    /// heuristic's too (Python's `http.server` answers a bare 304 with only `Date`) — but only
    /// when the stored response stated no lifetime either (``CacheValidator/allowsHeuristicLifetime``):
    /// the 304 does not repeat a stored `no-cache` or `max-age`, which still apply, so then a
    /// 304 that states none leaves the entry stale rather than guess.
    func updatingStoredResponse(_ stored: CacheValidator) -> HTTPResponseHeaders {
        var updated = self
        updated.statusCode = 200
        updated.lastModified = lastModified ?? stored.lastModified
        updated.allowsHeuristic = stored.allowsHeuristicLifetime
        return updated
    }

    /// The moment the response stops being fresh, given when it was received; `nil` without a
    /// lifetime, `receivedAt` itself for `no-cache`.
    public func freshUntil(receivedAt: Date) -> Date? {
        freshFor(receivedAt: receivedAt).map { receivedAt.addingTimeInterval($0) }
    }

    /// The source-neutral metadata the pipeline and the disk cache use.
    public func metadata(receivedAt: Date = Date()) -> ResponseMetadata {
        var metadata = ResponseMetadata(etag: etag, lastModified: lastModified, contentType: contentType,
                                        contentLength: contentLength, freshFor: freshFor(receivedAt: receivedAt), noStore: noStore,
                                        origin: .network)
        metadata.lifetimeIsHeuristic = !hasExplicitLifetime && heuristicLifetime(receivedAt: receivedAt) != nil
        return metadata
    }
}
