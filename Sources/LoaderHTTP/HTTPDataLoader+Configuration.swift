import PipelineCore

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

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
        /// Slots of ``maxTotalConnections`` that only a host with no transfer running may take,
        /// so slow hosts holding every other slot cannot make a new host wait: its first
        /// request starts at once (its next ones wait for a general slot, or for its first to
        /// end). Default 4 (fewer when ``maxTotalConnections`` − ``maxConnectionsPerHost`` is
        /// less, so one host alone still gets its ``maxConnectionsPerHost``): with the default
        /// limits four slow hosts fill the 20 general slots (not all 24), and four more
        /// hosts still start at once. At most ``maxTotalConnections`` − 1.
        public var connectionsReservedForNewHosts: Int
        /// How long a transfer runs before it gives up its slot of ``maxTotalConnections`` to a
        /// waiting request of a host with nothing running, in seconds: it goes on, as one of the
        /// ``maxLongTransfers``, and the waiting request starts. So however many slow hosts hold
        /// every slot (24 ports, 24 names of one server, thousands of requests over them), a
        /// request to another host starts within this time instead of waiting for their answers.
        /// `nil`: transfers keep their slots to the end. Default 2.
        public var longTransferTime: TimeInterval?
        /// The most transfers that gave up their slots (``longTransferTime``) at once. One more
        /// makes room by ending the earliest started transfer of the host with the most of them,
        /// which fails with `ImagePipelineError.overloaded(_:limit:detail:)`
        /// (`Limit.longTransfers`): a slow host's answers cannot hold connections without bound.
        /// Default twice ``maxTotalConnections`` (48).
        public var maxLongTransfers: Int
        /// The most requests that may wait for a connection slot; one more fails at once with
        /// `ImagePipelineError.overloaded(_:limit:detail:)` (`Limit.queuedRequests`),
        /// before anything is sent. Default 4,096: a few screens of prefetches, and about
        /// 26 MB of queue at ``queuedRequestBaseBytes`` plus a typical URL and headers each.
        /// Every request passes through the queue, if only until the engine's next turn: at
        /// least 1. A visible request finding the queue full (by count or bytes) pushes out the
        /// newest waiting prefetches instead, as many as make room (they fail with that error),
        /// and is refused without pushing any out when even that would not make room.
        public var maxQueuedRequests: Int
        /// The most bytes the requests waiting for a connection slot may hold together, each
        /// counted as ``queuedRequestBaseBytes`` plus its URLs' and headers' UTF-8 bytes; over it
        /// fails at once with `ImagePipelineError.overloaded(_:limit:detail:)`
        /// (`Limit.queuedBytes`). Default 32 MiB: ``maxQueuedRequests``
        /// requests with URLs and headers of 2 KB each, or 500 with 60 KB URLs.
        public var maxQueuedBytes: Int
        /// The most body bytes all transfers in flight may hold together (each holds the room
        /// its body grew to, doubling as the bytes arrive, up to its declared `Content-Length`:
        /// a declared length is not claimed before its bytes come).
        /// A transfer whose body does not fit fails at once with
        /// `ImagePipelineError.overloaded(_:limit:detail:)` (`Limit.downloadMemory`)
        /// and gives its bytes back; nothing waits, so transfers cannot wait on each other. A
        /// transfer holding the only bytes in flight always grows (up to ``maxBodyBytes``), so a
        /// picture within ``maxBodyBytes`` loads when it is alone. Once a transfer ends its body
        /// is the caller's and no longer counts. Default
        /// ``defaultMaxDownloadMemory(maxBodyBytes:cgroupRoot:physicalMemory:)``.
        public var maxDownloadMemory: Int64
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
        /// The longest one attempt may take, in seconds, from when it enters the loader's queue
        /// to its last byte: the time it waited for a connection slot counts (an attempt that
        /// waited 9 s of 10 has 1 s left for its transfer; a retry or a redirect hop starts a new
        /// one, queued again, so a whole request may take up to (1 + ``maxRetries``) ×
        /// (1 + ``maxRedirects``) times this, plus the retries' delays). An attempt
        /// still waiting at its deadline fails with `ImagePipelineError.overloaded(_:limit:detail:)`
        /// (`Limit.queueTime`); one sent is over it with
        /// `ImagePipelineError.timeout(_:)`. `nil` for none (a request may then wait
        /// indefinitely). Default 60: a 5 MB picture needs 700 kbit/s to make it; raise it for
        /// large downloads over slow links.
        public var totalTimeout: TimeInterval?
        /// The longest a request may wait for a connection slot, in seconds (the earlier of this
        /// and ``totalTimeout`` applies); a request still waiting then fails with
        /// `ImagePipelineError.overloaded(_:limit:detail:)` (`Limit.queueTime`),
        /// on time even while no slot frees. `nil`: only ``totalTimeout``. Default 30, half the
        /// default total: a request that waited that long still has as long for its transfer,
        /// and its caller learns "overloaded, try later" instead of a timeout at the very end.
        public var maxQueueTime: TimeInterval?
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
                    maxHeaderBytes: Int = 128 << 10, headersKeptAcrossOrigins: Set<String> = ["Accept"],
                    connectionsReservedForNewHosts: Int? = nil, maxQueuedRequests: Int = 4_096,
                    maxQueuedBytes: Int = 32 << 20, maxQueueTime: TimeInterval? = 30, maxDownloadMemory: Int64? = nil,
                    longTransferTime: TimeInterval? = 2, maxLongTransfers: Int? = nil) {
            self.maxConnectionsPerHost = maxConnectionsPerHost
            self.maxTotalConnections = maxTotalConnections
            self.connectionsReservedForNewHosts = connectionsReservedForNewHosts
                ?? min(4, max(0, max(1, maxTotalConnections) - max(1, maxConnectionsPerHost)))
            self.maxQueuedRequests = maxQueuedRequests
            self.maxQueuedBytes = maxQueuedBytes
            self.maxQueueTime = maxQueueTime
            self.longTransferTime = longTransferTime
            self.maxLongTransfers = maxLongTransfers ?? 2 * max(1, maxTotalConnections)
            self.maxDownloadMemory = maxDownloadMemory ?? Self.defaultMaxDownloadMemory(maxBodyBytes: maxBodyBytes)
            self.maxBodyBytes = maxBodyBytes
            self.connectTimeout = connectTimeout
            self.idleTimeout = idleTimeout
            self.lowSpeedLimit = lowSpeedLimit
            self.lowSpeedTime = lowSpeedTime
            self.totalTimeout = totalTimeout
            self.maxRedirects = maxRedirects
            self.allowsInsecureRedirects = allowsInsecureRedirects
            self.requiresHTTPS = requiresHTTPS
            self.maxRetries = maxRetries
            self.retryBaseDelay = retryBaseDelay
            self.maxRetryDelay = maxRetryDelay
            self.headers = headers
            self.authorization = authorization
            self.caBundlePath = caBundlePath
            self.userAgent = userAgent
            self.connectionPolicy = connectionPolicy
            self.maxHeaderBytes = maxHeaderBytes
            self.headersKeptAcrossOrigins = headersKeptAcrossOrigins
            self = clamped
        }

        /// This configuration with every limit in its range: at least one connection per host
        /// and in all, reserved slots below the total, at least one queued request, no negative
        /// byte, retry or redirect count. `init` and the loader apply it, so a property set out
        /// of range after `init` is clamped when the loader is made.
        var clamped: Configuration {
            var limits = self
            limits.maxConnectionsPerHost = max(1, maxConnectionsPerHost)
            limits.maxTotalConnections = max(1, maxTotalConnections)
            limits.connectionsReservedForNewHosts = min(max(0, connectionsReservedForNewHosts), limits.maxTotalConnections - 1)
            limits.maxQueuedRequests = max(1, maxQueuedRequests)
            limits.maxLongTransfers = max(0, maxLongTransfers)
            limits.maxQueuedBytes = max(0, maxQueuedBytes)
            limits.maxDownloadMemory = max(1, maxDownloadMemory)
            limits.lowSpeedLimit = max(0, lowSpeedLimit)
            limits.maxRedirects = max(0, maxRedirects)
            limits.maxRetries = max(0, maxRetries)
            limits.maxHeaderBytes = max(1, maxHeaderBytes)
            return limits
        }

        /// An eighth of the memory this process may use (`ContainerMemory.available`: the smaller
        /// of physical memory and the cgroup's limit), at least one `maxBodyBytes` picture and at
        /// most four: 200 MB with the default 50 MB body limit on a large machine, 64 MiB in a
        /// 512 MiB container. An eighth leaves room for the core's own budgets (a quarter for
        /// decodes, a fifth for the memory cache); four pictures at the body limit is already
        /// more than any screen shows at once, while 48 parallel gzip bombs cut off at 50 MB
        /// each held 964 MB without it.
        public static func defaultMaxDownloadMemory(maxBodyBytes: Int64, cgroupRoot: String = "/sys/fs/cgroup",
                                                    physicalMemory: UInt64 = ProcessInfo.processInfo.physicalMemory) -> Int64 {
            let eighth = Int64(clamping: ContainerMemory.available(cgroupRoot: cgroupRoot, physicalMemory: physicalMemory) / 8)
            let body = max(1, maxBodyBytes)
            return min(max(eighth, body), body.multipliedReportingOverflow(by: 4).overflow ? .max : body * 4)
        }

        /// The fixed part of ``maxQueuedBytes``' estimate of one waiting request, in bytes: the
        /// queued job (its header array, its URL objects, its places in the queue's tables) and
        /// the suspended `load` call waiting for it (its async frames, its merged headers).
        /// Measured as the growth of resident memory over 10,000 queued loads with
        /// 31-character URLs and the default headers: 7,550 to 8,240 bytes each over three runs,
        /// of which 1,300 to 1,650 are the calling task's own (a bare task suspended on a
        /// continuation, which the caller pays anyway) and 300 to 430 the URL objects: about
        /// 6,400 for the loader, which this plus the URL's and headers' text (81 bytes) meets
        /// within 5 %.
        public static let queuedRequestBaseBytes = 6_144

        /// ``idleTimeout`` in nanoseconds, saturating: a timeout too long for a `UInt64` of
        /// nanoseconds (1e300, `.infinity`) means none, and must not trap.
        var idleTimeoutNanoseconds: UInt64 { saturatingNanoseconds(idleTimeout) }

        /// How long after it is queued a request that has not left the queue fails, in
        /// nanoseconds: the earlier of ``maxQueueTime`` and ``totalTimeout`` (`nil`: never).
        var queueTimeNanoseconds: UInt64? {
            [maxQueueTime, totalTimeout].compactMap { $0 }.min().map(saturatingNanoseconds)
        }

        /// ``longTransferTime`` in nanoseconds, saturating (`nil`: never).
        var longTransferNanoseconds: UInt64? { longTransferTime.map(saturatingNanoseconds) }

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
