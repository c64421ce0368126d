import Foundation

/// Why a network transfer failed, for ``ImagePipelineError/network(_:message:)``.
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
    /// An `http` URL while the loader allows `https` only.
    case insecureScheme
    /// A `text/html` body served where a picture was expected (an error page sent with 200).
    case unexpectedContentType
    /// Anything else the transport reported.
    case other
}

/// Every failure the pipeline, its codecs and its loaders report.
public enum ImagePipelineError: Error, Hashable, Sendable, CustomStringConvertible {
    /// No loader is registered for the URL's scheme.
    case noLoader(scheme: String)
    /// No registered decoder accepts the data; `format` is what the bytes look like, if known.
    case noDecoder(format: ImageFormat?)
    /// The server answered with a status that is not a success.
    case badStatus(code: Int)
    /// The body ended before its announced length.
    case truncated(expected: Int64?, received: Int64)
    /// The body is larger than the configured maximum, in bytes.
    case tooLarge(limit: Int64, actual: Int64?)
    /// The data is of a kind the codec does not support (e.g. 12-bit JPEG), with the reason.
    case unsupported(format: ImageFormat, message: String)
    /// The codec could not decode the data, with its message.
    case corruptData(format: ImageFormat?, message: String)
    /// The header declares more pixels than the configured maximum.
    case tooManyPixels(PixelSize, limit: Int)
    /// A connect, idle or total timeout, with what timed out.
    case timeout(String)
    /// The transport failed.
    case network(NetworkFailure, message: String)
    /// A local file could not be read: missing, a directory, or not permitted.
    case fileUnreadable(path: String, reason: String)
    /// The request asked for cached data only and there was none.
    case notCached
    /// The loader reported "not modified" for a request that had no cached copy to keep.
    case unexpectedNotModified

    /// `true` for failures that will not go away by asking again soon (a 404, undecodable
    /// bytes): the pipeline keeps these in its short negative cache.
    public var isPermanent: Bool {
        switch self {
        case .badStatus(let code): return code == 404 || code == 410
        case .noDecoder, .unsupported, .corruptData, .tooManyPixels: return true
        default: return false
        }
    }

    /// One line a person can act on.
    public var description: String {
        switch self {
        case .noLoader(let scheme): return "no data loader is registered for the URL scheme '\(scheme)'"
        case .noDecoder(let format?): return "\(format) data, but no \(format) decoder is registered"
        case .noDecoder(nil): return "the data is not in any image format known to the pipeline"
        case .badStatus(let code): return "the server answered with HTTP status \(code)"
        case .truncated(let expected?, let received): return "the body ended after \(received) of \(expected) bytes"
        case .truncated(nil, let received): return "the body ended early, after \(received) bytes"
        case .tooLarge(let limit, let actual?): return "the body is \(actual) bytes, over the limit of \(limit)"
        case .tooLarge(let limit, nil): return "the body is over the limit of \(limit) bytes"
        case .unsupported(let format, let message): return "unsupported \(format) data: \(message)"
        case .corruptData(let format?, let message): return "corrupt \(format) data: \(message)"
        case .corruptData(nil, let message): return "corrupt data: \(message)"
        case .tooManyPixels(let size, let limit): return "the picture is \(size) pixels, over the limit of \(limit) pixels"
        case .timeout(let what): return "timed out: \(what)"
        case .network(let failure, let message): return "network failure (\(failure.rawValue)): \(message)"
        case .fileUnreadable(let path, let reason): return "cannot read \(path): \(reason)"
        case .notCached: return "the picture is not cached and the request does not allow loading"
        case .unexpectedNotModified: return "the loader answered 'not modified' but nothing was cached"
        }
    }
}
