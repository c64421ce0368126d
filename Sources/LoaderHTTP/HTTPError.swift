import Foundation
import PipelineCore

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
    /// A `text/html` body served where a picture was expected (an error page sent with 200).
    case unexpectedContentType
    /// Anything else the transport reported.
    case other
}

/// The HTTP loader's own failures. The pipeline hands them to callers wrapped in
/// ``PipelineCore/ImagePipelineError/loadingFailed(_:underlying:)``; a 404 or 410 is not one of
/// these but ``PipelineCore/ImagePipelineError/notFound(_:)``, which every loader shares.
public enum HTTPError: Error, Hashable, Sendable, CustomStringConvertible, LocalizedError, PipelineFailure {
    /// The server answered with a status that is neither a success nor "not found".
    case badStatus(code: Int)
    /// The transport failed.
    case network(NetworkFailure, message: String)

    /// No HTTP error here is permanent: 404 and 410 are reported as `notFound`, and any other
    /// status or transport failure may go away by asking again.
    public var isPermanent: Bool { false }

    /// One line a person can act on.
    public var description: String {
        switch self {
        case .badStatus(let code): return "the server answered with HTTP status \(code)"
        case .network(let failure, let message): return "network failure (\(failure.rawValue)): \(message)"
        }
    }

    /// ``description``.
    public var errorDescription: String? { description }
}
