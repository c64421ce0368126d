import LazyLibraries
import PipelineCore
import Synchronization

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Loads `http` and `https` URLs with libcurl's multi interface.
///
/// All requests of one loader share one curl multi handle, driven by one dedicated thread:
/// connections are kept alive and reused, HTTP/2 is multiplexed when the server offers it, and
/// at most ``Configuration/maxConnectionsPerHost`` transfers run per host. Requests beyond the
/// limits wait in the loader's own queue, visible ones before prefetches, so a priority raised
/// while waiting (a visible caller joined a prefetch) takes effect.
///
/// Cancelling the calling task removes the transfer from the multi handle at once, which
/// closes its connection. Transient failures (connection errors, headers cut off, 5xx, 429)
/// are retried with exponential backoff and jitter.
///
/// The loader follows redirects itself, one transfer per hop, so each hop is checked like the
/// first request: its scheme (`http`/`https` only; never `https` to `http` unless allowed),
/// the ``Configuration/connectionPolicy`` (hosts, ports, and every address curl connects to),
/// and its headers (after a hop to another origin, only
/// ``Configuration/headersKeptAcrossOrigins`` are sent).
///
/// Only a complete answer is a success: a 200 or 203 with a non-empty body (or a 304 to a
/// conditional request). A 206, a 204 or any other status, an empty body, headers cut off, a
/// `Content-Encoding` curl cannot decode (it asks for and decodes gzip, deflate, br and zstd),
/// a transfer slower than ``Configuration/lowSpeedLimit`` or over ``Configuration/totalTimeout``
/// all fail, so nothing broken reaches the disk cache. Failures are ``HTTPError`` (status,
/// transport, body), `ImagePipelineError.notFound(_:status:)` for 404 and 410, and the
/// core's `truncated`, `tooLarge` and `timeout`.
///
/// The loader is bounded under load: its queue by count and bytes
/// (``Configuration/maxQueuedRequests``, ``Configuration/maxQueuedBytes``) and by time (the
/// ``Configuration/totalTimeout`` counts from when a request is queued), its downloads in
/// flight by the memory they hold together (``Configuration/maxDownloadMemory``); a request
/// over one fails with the core's `overloaded` ("try again later", the origin not asked or
/// not blamed). Some connection slots are kept for hosts with nothing running
/// (``Configuration/connectionsReservedForNewHosts``), so slow hosts holding every other slot
/// cannot make a healthy host wait.
public final class HTTPDataLoader: DataLoading {
    /// What the loader was created with.
    public let configuration: Configuration
    /// Made at the first request (``engine``): until then libcurl is not loaded.
    private let startedEngine = Mutex<CurlMultiEngine?>(nil)
    private let lastID = Atomic<UInt64>(0)

    /// `http` and `https`, or `https` alone when ``Configuration/requiresHTTPS`` is set.
    public var schemes: Set<String> { configuration.requiresHTTPS ? ["https"] : ["http", "https"] }

    /// Creates a loader with its own connection pool.
    public init(configuration: Configuration = Configuration()) {
        self.configuration = configuration.clamped
    }

    /// The engine, made (and libcurl loaded) the first time it is asked for.
    var engine: CurlMultiEngine {
        startedEngine.withLock { engine in
            if let engine { return engine }
            let made = CurlMultiEngine(configuration: configuration)
            engine = made
            return made
        }
    }

    /// Requests waiting for a connection slot (not yet sent): for tests and diagnostics.
    public var queuedCount: Int { startedEngine.withLock { $0?.queuedCount } ?? 0 }

    /// The body bytes the transfers in flight hold together now, against
    /// ``Configuration/maxDownloadMemory``: for tests and diagnostics.
    public var downloadBytesInUse: Int64 { startedEngine.withLock { $0?.downloadMemory.inUse } ?? 0 }

    /// The most body bytes the transfers in flight held together since the loader was created.
    public var peakDownloadBytes: Int64 { startedEngine.withLock { $0?.downloadMemory.peakInUse } ?? 0 }

    /// Loads `request.url`, conditionally when it carries a validator.
    /// - Throws: ``HTTPError`` (``HTTPError/libraryUnavailable(_:)`` when libcurl, opened at the
    ///   first request, is not installed) or `ImagePipelineError` (not found, truncated, too
    ///   large, timeout, overloaded), or `CancellationError` when the task is cancelled.
    public func load(_ request: DataLoadRequest) async throws -> DataLoadResult {
        do { try LazyLibrary.curl.load() } catch { throw HTTPError.libraryUnavailable(error) }
        var hostKey = try allowedOrigin(of: request.url)
        var url = request.url
        var crossOrigin = false
        var redirects = 0
        var attempt = 0
        while true {
            try Task.checkCancellation()
            let outcome = try await perform(request, url: url, hostKey: hostKey, crossOrigin: crossOrigin)
            switch outcome {
            case .cancelled:
                throw CancellationError()
            case .redirected(let location):
                redirects += 1
                let target = try redirectTarget(location, from: url)
                guard redirects <= configuration.maxRedirects else {
                    throw HTTPError.network(.tooManyRedirects,
                                            message: "more than \(configuration.maxRedirects) redirects; the next was to \(MessageText.url(target))")
                }
                hostKey = try allowedOrigin(of: target)
                crossOrigin = crossOrigin || !Self.sameOrigin(url, target)
                url = target
                attempt = 0
            case .completed(let status, let metadata, let body):
                if status == 304 {
                    guard let validator = request.validator else { throw HTTPError.badStatus(code: 304) }
                    return .notModified(metadata.updatingStoredResponse(validator).metadata())
                }
                // The transfer lets only 200, 203 and 304 through; this holds if that changes.
                guard status == 200 || status == 203 else {
                    if status == 404 || status == 410 { throw ImagePipelineError.notFound(request.url, status: status) }
                    throw HTTPError.badStatus(code: status)
                }
                guard !body.isEmpty else { throw HTTPError.emptyBody }
                var result = metadata.metadata()
                if CurlTransfer.contentCodings(metadata.contentEncoding).isEmpty {
                    if let expected = metadata.contentLength, expected != Int64(body.count) {
                        throw ImagePipelineError.truncated(expected: expected, received: Int64(body.count))
                    }
                } else {
                    // Decoded by curl (which checked the encoded length): these bytes' own length.
                    result.contentLength = Int64(body.count)
                }
                return .data(body, result)
            case .failed(let error, let metadata):
                guard attempt < configuration.maxRetries, Self.isTransient(error) else { throw error }
                attempt += 1
                try await Task.sleep(nanoseconds: saturatingNanoseconds(retryDelay(attempt: attempt, metadata: metadata)))
            }
        }
    }

    /// One attempt at `url` (the request's, or a redirect's target): headers (with the auth
    /// hook's, unless a redirect crossed to another origin), then the transfer on the engine
    /// thread.
    private func perform(_ request: DataLoadRequest, url: URL, hostKey: Origin, crossOrigin: Bool) async throws -> TransferOutcome {
        var headers = configuration.headers
        headers.merge(request.headers) { _, own in own }
        if crossOrigin {
            let kept = Set(configuration.headersKeptAcrossOrigins.map { $0.lowercased() })
            headers = headers.filter { kept.contains($0.key.lowercased()) }
        }
        if let etag = request.validator?.etag { headers["If-None-Match"] = etag }
        if let date = request.validator?.lastModified { headers["If-Modified-Since"] = date }
        if !crossOrigin, let authorization = configuration.authorization {
            try await authorization(url, &headers)
            try Task.checkCancellation()
        }
        let id = lastID.add(1, ordering: .relaxed).newValue
        let engine = engine
        let sent = headers.sorted { $0.key < $1.key }.map { (name: $0.key, value: $0.value) }
        let queuedBytes = TransferJob.estimatedQueuedBytes(url: url.absoluteString, requestURL: url == request.url ? nil : request.url.absoluteString,
                                                           headers: sent)
        return await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                engine.submit(TransferJob(id: id, url: url, requestURL: request.url, hostKey: hostKey, priority: request.priority,
                                          headers: sent, progress: request.progress, didReceiveData: request.didReceiveData,
                                          continuation: continuation, queuedBytes: queuedBytes))
                // Cancelled before the job was queued: the handler already ran and found nothing.
                if Task.isCancelled { engine.cancel(id) }
            }
        } onCancel: {
            engine.cancel(id)
        }
    }

    /// Throws ``NetworkFailure/insecureScheme`` for a scheme the loader does not request, and
    /// the ``Configuration/connectionPolicy``'s refusal of the URL itself (hosts, ports, a host
    /// written as an address), judged on the host and port libcurl reads from the URL; names
    /// are judged by their addresses only when connecting.
    public func checkAllowed(_ url: URL) throws {
        _ = try allowedOrigin(of: url)
    }

    /// ``checkAllowed(_:)``'s checks, then the origin per-host limits count `url` under
    /// (``CurlURL/connectionOrigin(scheme:host:port:)``) from the same reading of the URL.
    private func allowedOrigin(of url: URL) throws -> Origin {
        let scheme = url.scheme?.lowercased() ?? ""
        guard scheme == "https" || (scheme == "http" && !configuration.requiresHTTPS) else {
            throw HTTPError.network(.insecureScheme, message: "'\(MessageText.escaped(scheme, limit: 40))' URLs are not allowed: \(MessageText.url(url))")
        }
        guard let (host, port) = CurlURL.hostAndPort(of: url.absoluteString), !host.isEmpty else {
            throw HTTPError.network(.other, message: "libcurl does not read a host in the URL: \(MessageText.url(url))")
        }
        if let refusal = configuration.connectionPolicy.refusal(for: url, host: host, port: port) { throw HTTPError.refused(refusal) }
        return CurlURL.connectionOrigin(scheme: scheme, host: host, port: port)
    }

    /// A redirect's target, resolved against the URL that answered, if the loader may follow
    /// it: `http` or `https` only (``NetworkFailure/forbiddenRedirect``), and never from
    /// `https` to `http` unless ``Configuration/allowsInsecureRedirects``
    /// (``NetworkFailure/insecureRedirect``).
    func redirectTarget(_ location: String, from url: URL) throws -> URL {
        let encoded = location.percentEncoded(allowing: Self.locationCharacters)
        guard let target = URL(string: encoded, relativeTo: url)?.absoluteURL, let scheme = target.scheme?.lowercased(),
              target.host?.isEmpty == false || !["http", "https"].contains(scheme) else {
            let shown = MessageText.escaped(location, limit: MessageText.urlLimit)
            throw HTTPError.network(.forbiddenRedirect, message: "a redirect to a Location that is not a URL was refused: \(shown)")
        }
        guard scheme == "http" || scheme == "https" else {
            throw HTTPError.network(.forbiddenRedirect,
                                    message: "a redirect to a \(MessageText.escaped(scheme, limit: 40)) URL was refused (only http and https are followed): "
                                        + MessageText.escaped(target.absoluteString, limit: MessageText.urlLimit))
        }
        let fromHTTPS = url.scheme?.lowercased() == "https"
        if scheme == "http" && (configuration.requiresHTTPS || (fromHTTPS && !configuration.allowsInsecureRedirects)) {
            throw HTTPError.network(.insecureRedirect, message: "a redirect from https to http was refused: \(MessageText.url(target))")
        }
        return target
    }

    /// The characters a `Location` keeps as they are; others (a space, non-ASCII letters a
    /// server sent raw) are percent-encoded, as curl does, before the URL is parsed.
    private static let locationCharacters = PercentEncodingSet.urlQueryAllowed.union(PercentEncodingSet("#%[]"))

    /// Whether `a` and `b` have one ``Origin``, their hosts and ports as libcurl reads them
    /// (``CurlURL/origin(of:)``).
    static func sameOrigin(_ a: URL, _ b: URL) -> Bool {
        guard let first = CurlURL.origin(of: a), let second = CurlURL.origin(of: b) else { return false }
        return first == second
    }

    /// Connection failures (a connection that closed inside the headers is one), 5xx and 429
    /// may go away by asking again; nothing else will.
    static func isTransient(_ error: any Error) -> Bool {
        switch error as? HTTPError {
        case .network(.connection, _), .incompleteHeaders: return true
        case .badStatus(let code): return code >= 500 || code == 429
        default: return false
        }
    }

    /// The wait before retry `attempt` (1-based), in seconds: `Retry-After` when the server
    /// sent one, else base × 2^(attempt−1) with ±50 % jitter; capped by the configuration.
    func retryDelay(attempt: Int, metadata: HTTPResponseHeaders?) -> TimeInterval {
        if let retryAfter = metadata?.retryAfter {
            return min(max(0, retryAfter), configuration.maxRetryDelay)
        }
        let base = configuration.retryBaseDelay * pow(2, Double(attempt - 1))
        return min(base * Double.random(in: 0.5...1.5), configuration.maxRetryDelay)
    }
}
