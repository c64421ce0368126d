import Foundation
import PipelineCore

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
    /// `Retry-After` in seconds (given as seconds or as an HTTP date).
    public var retryAfter: TimeInterval?

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
            default: break
            }
        }
    }

    /// How long the response stays fresh from `receivedAt` (RFC 9111 §4.2): the lifetime
    /// (`max-age`, else `Expires − Date`) minus the age it already had (`Age`, or the time since
    /// `Date`). `nil` when the response gives no lifetime; `0` for `no-cache` (always revalidate).
    public func freshFor(receivedAt: Date) -> TimeInterval? {
        if noCache { return 0 }
        let lifetime: TimeInterval
        if let maxAge {
            lifetime = maxAge
        } else if let expires {
            lifetime = expires.timeIntervalSince(date ?? receivedAt)
        } else {
            return nil
        }
        let apparentAge = date.map { max(0, receivedAt.timeIntervalSince($0)) } ?? 0
        let currentAge = max(apparentAge, age ?? 0)
        return lifetime - currentAge
    }

    /// The moment the response stops being fresh, given when it was received; `nil` without a
    /// lifetime, `receivedAt` itself for `no-cache`.
    public func freshUntil(receivedAt: Date) -> Date? {
        freshFor(receivedAt: receivedAt).map { receivedAt.addingTimeInterval($0) }
    }

    /// The source-neutral metadata the pipeline and the disk cache use.
    public func metadata(receivedAt: Date = Date()) -> ResponseMetadata {
        ResponseMetadata(etag: etag, lastModified: lastModified, contentType: contentType, contentLength: contentLength,
                         freshFor: freshFor(receivedAt: receivedAt), noStore: noStore, origin: .network)
    }
}
