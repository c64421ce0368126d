import Foundation
import PipelineCore

extension HTTPDataLoader {
    /// Adds headers (typically `Authorization`) to a request just before each attempt is sent.
    /// It may suspend, e.g. to fetch or refresh a token; throwing fails the load with that error.
    public typealias AuthorizationHook = @Sendable (_ url: URL, _ headers: inout [String: String]) async throws -> Void

    /// How an ``HTTPDataLoader`` connects, limits and retries.
    public struct Configuration: Sendable {
        /// Transfers to one host (scheme, host and port) at once, and connections to it; requests
        /// beyond wait in the loader's priority queue. Over HTTP/2 the transfers share one
        /// connection as streams. Default 6, as browsers do.
        public var maxConnectionsPerHost: Int
        /// Transfers at once over all hosts. Default 24.
        public var maxTotalConnections: Int
        /// The largest body accepted, in bytes: checked against `Content-Length` before the body
        /// is read and again as it streams. Default 50 MB.
        public var maxBodyBytes: Int64
        /// How long connecting (TCP and TLS) may take, in seconds. Default 10.
        public var connectTimeout: TimeInterval
        /// How long a transfer may go without receiving a byte (headers or body), in seconds,
        /// counted from its start. Default 30. A transfer that keeps moving, however slowly, is
        /// ended by ``lowSpeedLimit`` and ``totalTimeout`` instead.
        public var idleTimeout: TimeInterval
        /// The slowest a transfer may go once its first byte arrived, in bytes per second (headers
        /// and body), on average over each window of ``lowSpeedTime`` seconds; slower is
        /// ``HTTPError/tooSlow(bytesPerSecond:seconds:)``. 0 turns the check off. Default 256: a
        /// trickle of a byte or a header line a second ends after one window, while 24 transfers
        /// at this speed need only 50 kbit/s.
        public var lowSpeedLimit: Int
        /// The window of ``lowSpeedLimit``, in seconds. Default 10.
        public var lowSpeedTime: TimeInterval
        /// The longest one attempt may take, in seconds, from when it leaves the loader's queue
        /// to its last byte (waiting for a connection slot does not count; a retry starts a new
        /// one); over it is `ImagePipelineError.timeout(_:)`. `nil` for none.
        /// Default 60: a 5 MB picture needs 700 kbit/s to make it; raise it for large downloads
        /// over slow links.
        public var totalTimeout: TimeInterval?
        /// Redirects followed at most; one more is a ``NetworkFailure/tooManyRedirects``. Default 5.
        /// The loader follows them itself, one request each, so that every hop is checked
        /// against ``connectionPolicy`` and carries only the headers meant for its origin.
        public var maxRedirects: Int
        /// Follow a redirect from `https` to `http`. Default `false`
        /// (``NetworkFailure/insecureRedirect``).
        public var allowsInsecureRedirects: Bool
        /// Refuse `http` URLs (``NetworkFailure/insecureScheme``). Default `false`.
        public var requiresHTTPS: Bool
        /// Extra attempts after a transient failure (connection error, headers cut off, 5xx, 429). Default 2.
        public var maxRetries: Int
        /// The first retry's delay in seconds; each further one doubles it, with ±50 % jitter.
        /// A `Retry-After` on a 429 or 503 replaces it (capped by ``maxRetryDelay``). Default 0.5.
        public var retryBaseDelay: TimeInterval
        /// The longest wait before a retry, in seconds. Default 10.
        public var maxRetryDelay: TimeInterval
        /// Where the loader may connect: address ranges, hosts and ports, checked on every URL,
        /// every address curl connects to and every connection a request is sent on. Default
        /// ``ConnectionPolicy/default`` (never link-local or another cloud metadata address);
        /// servers that fetch URLs their users send use ``ConnectionPolicy/publicOnly``.
        public var connectionPolicy: ConnectionPolicy
        /// The most header bytes one request may receive (its response's, with those of the
        /// `1xx` answers before it); more is ``HTTPError/headersTooLarge(limit:)``, permanent and
        /// not retried, so a server that floods headers (endless `100 Continue` or header lines)
        /// costs one request. Default 128 KiB: ten times the headers of a large real answer (a
        /// CDN's, with cookies and a content-security policy), and below libcurl's own 300 KB,
        /// which would end the transfer as a connection failure. One header line over 100 KB is
        /// refused by libcurl itself, and reported as the same error.
        public var maxHeaderBytes: Int
        /// The request headers (names, any case) still sent after a redirect to another origin
        /// (scheme, host or port). Every other header from ``headers``, the request's own and the
        /// ``authorization`` hook's is dropped from that hop on, so an API key meant for one
        /// origin never reaches another (libcurl alone drops only `Authorization` and
        /// `Cookie`); the hook is not called for such hops. Validators (`If-None-Match`,
        /// `If-Modified-Since`) are the pipeline's own and are kept. Default `["Accept"]`.
        public var headersKeptAcrossOrigins: Set<String>
        /// Headers sent with every request; a request's own headers override them. Default: an
        /// `Accept` that prefers JPEG and PNG and names no WebP, AVIF or HEIC, so a negotiating
        /// CDN does not answer with a format no decoder here may be registered for; an app
        /// that links CodecWebP or CodecHEIF can add them.
        public var headers: [String: String]
        /// Called before every attempt to add headers (auth). Default `nil`.
        public var authorization: AuthorizationHook?
        /// A PEM bundle of trusted certificate authorities instead of the system's. Default `nil`.
        public var caBundlePath: String?
        /// The `User-Agent`. Default `"ImagePipeline/1 libcurl"`.
        public var userAgent: String

        /// Creates a configuration; every parameter has the default documented on its property.
        public init(maxConnectionsPerHost: Int = 6, maxTotalConnections: Int = 24,
                    maxBodyBytes: Int64 = 50_000_000, connectTimeout: TimeInterval = 10,
                    idleTimeout: TimeInterval = 30, lowSpeedLimit: Int = 256, lowSpeedTime: TimeInterval = 10,
                    totalTimeout: TimeInterval? = 60, maxRedirects: Int = 5,
                    allowsInsecureRedirects: Bool = false, requiresHTTPS: Bool = false,
                    maxRetries: Int = 2, retryBaseDelay: TimeInterval = 0.5, maxRetryDelay: TimeInterval = 10,
                    headers: [String: String] = ["Accept": "image/jpeg,image/png,image/*;q=0.8,*/*;q=0.5"],
                    authorization: AuthorizationHook? = nil, caBundlePath: String? = nil,
                    userAgent: String = "ImagePipeline/1 libcurl", connectionPolicy: ConnectionPolicy = .default,
                    maxHeaderBytes: Int = 128 << 10, headersKeptAcrossOrigins: Set<String> = ["Accept"]) {
            self.maxConnectionsPerHost = max(1, maxConnectionsPerHost)
            self.maxTotalConnections = max(1, maxTotalConnections)
            self.maxBodyBytes = maxBodyBytes
            self.connectTimeout = connectTimeout
            self.idleTimeout = idleTimeout
            self.lowSpeedLimit = max(0, lowSpeedLimit)
            self.lowSpeedTime = lowSpeedTime
            self.totalTimeout = totalTimeout
            self.maxRedirects = max(0, maxRedirects)
            self.allowsInsecureRedirects = allowsInsecureRedirects
            self.requiresHTTPS = requiresHTTPS
            self.maxRetries = max(0, maxRetries)
            self.retryBaseDelay = retryBaseDelay
            self.maxRetryDelay = maxRetryDelay
            self.headers = headers
            self.authorization = authorization
            self.caBundlePath = caBundlePath
            self.userAgent = userAgent
            self.connectionPolicy = connectionPolicy
            self.maxHeaderBytes = max(1, maxHeaderBytes)
            self.headersKeptAcrossOrigins = headersKeptAcrossOrigins
        }

        /// ``idleTimeout`` in nanoseconds, saturating: a timeout too long for a `UInt64` of
        /// nanoseconds (1e300, `.infinity`) means none, and must not trap.
        var idleTimeoutNanoseconds: UInt64 { saturatingNanoseconds(idleTimeout) }

        /// ``lowSpeedTime`` in nanoseconds, saturating.
        var lowSpeedTimeNanoseconds: UInt64 { saturatingNanoseconds(lowSpeedTime) }
    }
}

/// `seconds` in nanoseconds, clamped to `0...UInt64.max` (NaN and negatives are 0).
func saturatingNanoseconds(_ seconds: TimeInterval) -> UInt64 {
    let nanoseconds = seconds * 1e9
    guard nanoseconds > 0 else { return 0 }
    return nanoseconds >= 18_446_744_073_709_551_615.0 ? .max : UInt64(nanoseconds)
}
