import PipelineCore

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Why an HTTP transfer failed at the transport level, for ``HTTPError/network(_:message:)``.
public enum NetworkFailure: String, Hashable, Sendable {
    /// The host name did not resolve.
    case dns
    /// The connection could not be made or was reset.
    case connection
    /// The TLS handshake or certificate check failed.
    case tls
    /// More redirects than allowed, or a redirect loop.
    case tooManyRedirects
    /// A redirect from `https` to `http`, refused by default.
    case insecureRedirect
    /// A redirect to a scheme other than `http`/`https` (`file://`, `ftp://`), always refused.
    case forbiddenRedirect
    /// An `http` URL while the loader allows `https` only.
    case insecureScheme
    /// Anything else the transport reported.
    case other
}

/// The HTTP loader's own failures. The pipeline hands them to callers wrapped in
/// `ImagePipelineError.loadingFailed(_:underlying:)`; a 404 or 410 is not one of
/// these but `ImagePipelineError.notFound(_:status:)`, which every loader shares, with the status.
public enum HTTPError: Error, Hashable, Sendable, CustomStringConvertible, LocalizedError, PipelineFailure {
    /// The server answered with a status that is neither a complete answer (200, 203, a 304 to
    /// a conditional request) nor "not found": a 206 (the loader never asks for a range, and a
    /// part must not be stored as the picture), a 204 or other 2xx, a 3xx not followed, 4xx, 5xx.
    case badStatus(code: Int)
    /// The transport failed.
    case network(NetworkFailure, message: String)
    /// A complete answer whose body is not a picture by its declared type: `text/html` (an
    /// error or login page sent with 200), lower-case, without parameters.
    case notAPicture(contentType: String)
    /// The connection closed inside the response's headers (a status line, perhaps some
    /// headers, and never the blank line that ends them).
    case incompleteHeaders
    /// A 200 or 203 without a single byte of body (`Content-Length: 0`, or none and nothing sent).
    case emptyBody
    /// A `Content-Encoding` this libcurl cannot decode (the first such coding, lower-case), e.g.
    /// `compress`. The loader asks only for encodings it can decode (`Accept-Encoding`).
    case unsupportedEncoding(String)
    /// The body did not decode from its `Content-Encoding` (corrupt gzip, deflate, br or zstd
    /// data), with curl's message.
    case corruptEncoding(message: String)
    /// The transfer ran slower than ``HTTPDataLoader/Configuration/lowSpeedLimit`` bytes per
    /// second on average over ``HTTPDataLoader/Configuration/lowSpeedTime`` seconds.
    case tooSlow(bytesPerSecond: Int, seconds: TimeInterval)
    /// The loader's ``ConnectionPolicy`` refused the request or its connection: nothing was sent.
    case refused(ConnectionRefusal)
    /// The response's headers (with those of the redirects and `1xx` answers before it, within
    /// one request) were longer than ``HTTPDataLoader/Configuration/maxHeaderBytes``.
    case headersTooLarge(limit: Int)
    /// libcurl's multi interface failed (out of memory, or an internal error): the transfers
    /// running at that moment end with this error; the loader goes on with the next ones.
    case engineFailure(message: String)
    /// libcurl, opened at the first request, is not installed: `MissingLibrary` names the
    /// package to install. Permanent: the process keeps the answer.
    case libraryUnavailable(MissingLibrary)

    /// A refusal by the ``ConnectionPolicy`` and a header flood are permanent: the same URL is
    /// refused, or the same server floods, next time. No other HTTP error here is: 404 and 410
    /// are reported as `notFound`, and any other status, body or transport failure may go away
    /// by asking again (a CDN edge may answer better next time), so none is kept in the
    /// pipeline's negative cache.
    public var isPermanent: Bool {
        switch self {
        case .refused, .headersTooLarge, .libraryUnavailable: return true
        default: return false
        }
    }

    /// What kind of failure this is, for `ImagePipelineError.kind`: a ``ConnectionPolicy``
    /// refusal, an insecure or forbidden redirect or scheme, and a 401, 403 or 451 are
    /// `.refused`; a declared non-picture type and an empty body `.notAPicture`; a header flood
    /// `.overLimit`; a slow sender `.timedOut`; other statuses by
    /// `ImagePipelineError.Kind(httpStatus:)` (429 and 503 `.overloaded`); `nil` (the loader's
    /// unknown failure, `.unavailable`) for the rest.
    public var failureKind: ImagePipelineError.Kind? {
        switch self {
        case .badStatus(let code): return ImagePipelineError.Kind(httpStatus: code)
        case .network(.insecureRedirect, _), .network(.forbiddenRedirect, _), .network(.insecureScheme, _), .refused:
            return .refused
        case .notAPicture, .emptyBody: return .notAPicture
        case .headersTooLarge: return .overLimit
        case .tooSlow: return .timedOut
        case .network, .incompleteHeaders, .unsupportedEncoding, .corruptEncoding, .engineFailure, .libraryUnavailable: return nil
        }
    }

    /// One line a person can act on. The texts a server or curl supplied (a coding, curl's
    /// message, a `Location` inside it) are escaped and bounded (`MessageText`): they reach
    /// logs and terminals.
    public var description: String {
        switch self {
        case .badStatus(let code): return "the server answered with HTTP status \(code)"
        case .network(let failure, let message): return "network failure (\(failure.rawValue)): \(MessageText.escaped(message))"
        case .notAPicture(let type): return "the server sent \(MessageText.escaped(type, limit: 100)), not a picture"
        case .incompleteHeaders: return "the connection closed before the response's headers ended"
        case .emptyBody: return "the server answered with an empty body"
        case .unsupportedEncoding(let encoding):
            return "the body has a Content-Encoding that cannot be decoded: \(MessageText.escaped(encoding, limit: Self.codingLimit))"
        case .corruptEncoding(let message):
            return "the body does not decode from its Content-Encoding: \(MessageText.escaped(message))"
        case .tooSlow(let rate, let seconds):
            return "the transfer was slower than \(rate) bytes/s over \(Self.seconds(seconds)) s (low-speed limit)"
        case .refused(let refusal): return refusal.description
        case .headersTooLarge(let limit): return "the response's headers are longer than the limit of \(limit) bytes"
        case .engineFailure(let message): return "the HTTP engine failed: \(MessageText.escaped(message))"
        case .libraryUnavailable(let missing): return missing.description
        }
    }

    /// ``description``.
    public var errorDescription: String? { description }

    /// The most characters of a `Content-Encoding` coding a description shows: a coding is a
    /// token, and the registered ones are under 20 characters.
    static let codingLimit = 100

    /// `seconds` as a person writes it: "10", "0.5".
    static func seconds(_ seconds: TimeInterval) -> String {
        seconds == seconds.rounded() && abs(seconds) < 1e15 ? String(Int(seconds)) : String(seconds)
    }
}
