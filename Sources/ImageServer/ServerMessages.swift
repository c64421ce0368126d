#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// HTTP header fields in the order they came, looked up without regard to case. No HTTP
/// library's type: a transport (the libmicrohttpd one in `ImageServerHTTP`, a Vapor or
/// Hummingbird route) copies its own headers in and out.
public struct HTTPFields: Sendable, Hashable, Sequence, ExpressibleByDictionaryLiteral {
    /// The fields, names as given.
    public private(set) var fields: [(name: String, value: String)]

    /// No fields.
    public init() { fields = [] }

    /// `fields` in order.
    public init(_ fields: [(name: String, value: String)]) { self.fields = fields }

    /// Fields from a literal, in the literal's order.
    public init(dictionaryLiteral elements: (String, String)...) { fields = elements.map { (name: $0.0, value: $0.1) } }

    /// The first value of `name` (any case), or `nil`; setting replaces every field of that
    /// name (`nil` removes them).
    public subscript(name: String) -> String? {
        get { fields.first { $0.name.lowercased() == name.lowercased() }?.value }
        set {
            fields.removeAll { $0.name.lowercased() == name.lowercased() }
            if let newValue { fields.append((name, newValue)) }
        }
    }

    /// Adds a field, keeping any of the same name.
    public mutating func append(_ name: String, _ value: String) { fields.append((name, value)) }

    /// Iterates the fields in order.
    public func makeIterator() -> IndexingIterator<[(name: String, value: String)]> { fields.makeIterator() }

    public static func == (lhs: HTTPFields, rhs: HTTPFields) -> Bool {
        lhs.fields.count == rhs.fields.count && zip(lhs.fields, rhs.fields).allSatisfy { $0.name == $1.name && $0.value == $1.value }
    }

    public func hash(into hasher: inout Hasher) {
        for field in fields {
            hasher.combine(field.name)
            hasher.combine(field.value)
        }
    }
}

/// What a transport hands ``ImageServer``: one HTTP request, already read.
public struct ServerRequest: Sendable {
    /// `GET`, `HEAD`, …
    public var method: String
    /// The path as it came on the request line, still percent-encoded, without the query
    /// (`/insecure/rs:fit:300:300/plain/local:///a.jpg`).
    public var path: String
    /// The query string without its `?`, or `nil`.
    public var query: String?
    /// The request's header fields.
    public var headers: HTTPFields
    /// The client's address, for the access log; `nil` when the transport does not say.
    public var remoteAddress: String?

    /// Creates a request.
    public init(method: String = "GET", path: String, query: String? = nil, headers: HTTPFields = HTTPFields(),
                remoteAddress: String? = nil) {
        self.method = method
        self.path = path
        self.query = query
        self.headers = headers
        self.remoteAddress = remoteAddress
    }
}

/// What ``ImageServer`` answers: a status, header fields and the whole body.
public struct ServerResponse: Sendable {
    /// The HTTP status code.
    public var status: Int
    /// The header fields (`Content-Type`, `Cache-Control`, `ETag`, `Vary`, …). A transport adds
    /// only `Content-Length`, `Date` and its connection fields.
    public var headers: HTTPFields
    /// The body; empty for `HEAD`, 304 and 204. An empty answer to `HEAD` may state the length
    /// a `GET` would send in a `Content-Length` field, which the transport announces.
    public var body: Data

    /// Creates a response.
    public init(status: Int, headers: HTTPFields = HTTPFields(), body: Data = Data()) {
        self.status = status
        self.headers = headers
        self.body = body
    }

    /// A plain-text response of one line (`text/plain; charset=utf-8`), as every error is answered.
    public static func text(_ status: Int, _ line: String, headers: HTTPFields = HTTPFields()) -> ServerResponse {
        var headers = headers
        headers["Content-Type"] = "text/plain; charset=utf-8"
        return ServerResponse(status: status, headers: headers, body: Data((line + "\n").utf8))
    }
}
