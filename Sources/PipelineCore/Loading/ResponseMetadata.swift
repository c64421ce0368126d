import Foundation

/// What a response said about its bytes: validators, freshness and type. Loaders fill it from
/// HTTP headers (``init(statusCode:headers:)``); the file loader sets ``lastModified`` alone.
public struct ResponseMetadata: Hashable, Sendable {
    /// The HTTP status code, or `nil` for non-HTTP sources.
    public var statusCode: Int?
    /// `ETag`, as sent (quotes and `W/` kept).
    public var etag: String?
    /// `Last-Modified`, as sent.
    public var lastModified: String?
    /// `Content-Type` without parameters, lower-case.
    public var contentType: String?
    /// `Content-Length` in bytes.
    public var contentLength: Int64?
    /// `Cache-Control: max-age` in seconds (`s-maxage` is for shared caches and ignored).
    public var maxAge: TimeInterval?
    /// `Expires`.
    public var expires: Date?
    /// `Date`: the server's clock when it sent the response.
    public var date: Date?
    /// `Age` in seconds: how long the response sat in caches on the way.
    public var age: TimeInterval?
    /// `Cache-Control: no-cache`: a stored copy must be revalidated before every use.
    public var noCache: Bool
    /// `Cache-Control: no-store`: the response must not be stored.
    public var noStore: Bool
    /// `Retry-After` in seconds (given as seconds or as an HTTP date).
    public var retryAfter: TimeInterval?

    /// Creates metadata with everything unknown.
    public init(statusCode: Int? = nil, etag: String? = nil, lastModified: String? = nil) {
        self.statusCode = statusCode
        self.etag = etag
        self.lastModified = lastModified
        self.noCache = false
        self.noStore = false
    }

    /// Parses the headers of an HTTP response. Header names compare case-insensitively; for a
    /// repeated `Cache-Control` the directives of every copy count.
    public init(statusCode: Int?, headers: [(name: String, value: String)]) {
        self.init(statusCode: statusCode)
        for (rawName, rawValue) in headers {
            let value = rawValue.trimmingCharacters(in: .whitespaces)
            switch rawName.lowercased() {
            case "etag": etag = value
            case "last-modified": lastModified = value
            case "content-type":
                contentType = value.split(separator: ";").first.map {
                    $0.trimmingCharacters(in: .whitespaces).lowercased()
                }
            case "content-length": contentLength = Int64(value)
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
            let name = parts[0].trimmingCharacters(in: .whitespaces).lowercased()
            let argument = parts.count > 1
                ? parts[1].trimmingCharacters(in: .whitespaces).trimmingCharacters(in: CharacterSet(charactersIn: "\""))
                : nil
            switch name {
            case "max-age": maxAge = argument.flatMap { TimeInterval($0) }.map { max(0, $0) } ?? 0
            case "no-cache": noCache = true
            case "no-store": noStore = true
            default: break
            }
        }
    }

    /// The moment the response stops being fresh, given when it was received (RFC 9111 §4.2):
    /// the lifetime (`max-age`, else `Expires − Date`) minus the age it already had (`Age`, or
    /// the time since `Date`). `nil` when the response gives no lifetime; `receivedAt` itself
    /// for `no-cache` (always revalidate).
    public func freshUntil(receivedAt: Date) -> Date? {
        if noCache { return receivedAt }
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
        return receivedAt.addingTimeInterval(lifetime - currentAge)
    }

    /// The validators to send when revalidating a stored copy, if the response had any.
    public var validator: CacheValidator? { CacheValidator(etag: etag, lastModified: lastModified) }
}

/// Parses and formats HTTP dates (RFC 9110 §5.6.7): IMF-fixdate, RFC 850 and asctime forms.
public enum HTTPDate {
    private static let months = ["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"]

    /// The date in `string`, or `nil` when it is none of the three forms.
    public static func parse(_ string: String) -> Date? {
        var day: Int?, month: Int?, year: Int?, time: [Int]?
        for token in string.lowercased().split(whereSeparator: { $0 == " " || $0 == "," }) {
            if token.contains(":") {
                let parts = token.split(separator: ":").compactMap { Int($0) }
                guard parts.count == 3 else { return nil }
                time = parts
            } else if token.contains("-") {  // RFC 850: 06-nov-94
                let parts = token.split(separator: "-")
                guard parts.count == 3, let d = Int(parts[0]), let m = months.firstIndex(of: String(parts[1])),
                      let y = Int(parts[2]) else { return nil }
                day = d
                month = m + 1
                year = parts[2].count == 2 ? (y < 70 ? 2000 + y : 1900 + y) : y
            } else if let m = months.firstIndex(of: String(token)) {
                month = m + 1
            } else if let number = Int(token) {
                if token.count == 4 { year = number } else { day = number }
            }
        }
        guard let day, let month, let year, let time, (1...31).contains(day),
              time[0] < 24, time[1] < 60, time[2] < 61 else { return nil }
        var components = DateComponents()
        components.year = year
        components.month = month
        components.day = day
        components.hour = time[0]
        components.minute = time[1]
        components.second = time[2]
        return gmtCalendar.date(from: components)
    }

    private static var gmtCalendar: Calendar {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(secondsFromGMT: 0) ?? calendar.timeZone
        return calendar
    }

    /// `date` as an IMF-fixdate: `"Sun, 06 Nov 1994 08:49:37 GMT"`.
    public static func format(_ date: Date) -> String {
        let c = gmtCalendar.dateComponents([.year, .month, .day, .hour, .minute, .second, .weekday], from: date)
        let weekdays = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"]
        func two(_ n: Int?) -> String { let n = n ?? 0; return n < 10 ? "0\(n)" : "\(n)" }
        let month = months[(c.month ?? 1) - 1].capitalized
        return "\(weekdays[(c.weekday ?? 1) - 1]), \(two(c.day)) \(month) \(c.year ?? 1970) \(two(c.hour)):\(two(c.minute)):\(two(c.second)) GMT"
    }
}
