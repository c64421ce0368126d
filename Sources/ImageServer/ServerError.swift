#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Why a request was not answered with a picture: the HTTP status and a one-line message,
/// the body of the response. A message never quotes bytes of a source (only its URL, escaped
/// and bounded, or a count of bytes).
public struct ServerError: Error, Sendable, Hashable, CustomStringConvertible {
    /// Which status the failure answers with.
    public enum Kind: Int, Sendable, Hashable {
        /// A malformed path, an unknown or unbuilt option, an argument out of range: 400.
        case badRequest = 400
        /// A missing or wrong signature, or a source the configuration does not allow: 403.
        case forbidden = 403
        /// The source does not exist (its origin said 404, or no such local file), or the URL expired: 404.
        case notFound = 404
        /// A method other than `GET` and `HEAD`: 405.
        case methodNotAllowed = 405
        /// The source is not a picture, is damaged, or is over a limit (pixels, bytes, frames): 422.
        case unprocessable = 422
        /// The request queue is full: 429, with `Retry-After`.
        case tooManyRequests = 429
        /// The picture could not be made for a reason of ours: 500.
        case internalError = 500
        /// The origin failed (a 5xx, a refused connection, a broken body): 502.
        case badGateway = 502
        /// The server is shutting down: 503.
        case unavailable = 503
        /// The request passed its deadline (`IMGPIPE_TIMEOUT`), or the origin timed out: 504.
        case timeout = 504
    }

    /// The status class.
    public var kind: Kind
    /// One line, for the body and the access log.
    public var message: String

    /// Creates an error.
    public init(_ kind: Kind, _ message: String) {
        self.kind = kind
        self.message = message
    }

    /// The status code.
    public var status: Int { kind.rawValue }

    public var description: String { "\(status): \(message)" }
}
