import PipelineCore

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// An image server's handler, with no HTTP library in its API: a ``ServerRequest`` in, a
/// ``ServerResponse`` out. `ImageServerHTTP` serves it over libmicrohttpd (`imgpipe serve`); a
/// Vapor or Hummingbird route can call ``respond(to:)`` the same way.
///
/// URLs are imgproxy's (``ImgproxyURL``): `GET /<signature>/<options>/plain/<source>@<ext>`.
/// What imgproxy has not: one source fetch per URL however many sizes and callers (the
/// pipeline's joining and disk cache), results kept by their canonical options and format in
/// ``Configuration/resultCache`` so a repeat is answered without decoding, and `ETag`/304.
public final class ImageServer: Sendable {
    /// What the server serves and how.
    public struct Configuration: Sendable {
        /// The pipeline that loads and decodes sources. Its loaders are the sources a URL may
        /// name: give it only `http`/`https` (under `ConnectionPolicy.publicOnly`) and, for
        /// `local:///`, a loader rooted in one folder; never `file` or `data`.
        public var pipeline: ImagePipeline
        /// The encoders responses are written with.
        public var encoders: EncoderRegistry
        /// How URLs are signed; no pair: unsigned URLs are accepted.
        public var signing: URLSigning
        /// Named option lists; `default` applies to every URL.
        public var presets: Presets
        /// Source URL prefixes a URL may name (`https://cdn.example.com/`); empty: any the
        /// pipeline's loaders accept (imgproxy's `IMGPROXY_ALLOWED_SOURCES`). A source is under
        /// a prefix when its scheme and host (and port) are the prefix's exactly, with no user
        /// name, and its path starts with the prefix's without `.` or `..` segments.
        public var allowedSources: [String]
        /// Schemes a source may have; others answer 403 before any loader is asked.
        public var allowedSchemes: Set<String>
        /// Where processed results are kept by their canonical options and format (a disk
        /// cache, or one tiered with Redis); `nil`: none.
        public var resultCache: (any DataCaching)?
        /// `Cache-Control: public, max-age=` of pictures, in seconds (imgproxy's
        /// `IMGPROXY_TTL`, default a year).
        public var ttl: Int
        /// Requests processed at once (imgproxy's `IMGPROXY_WORKERS`, default twice the cores).
        public var workers: Int
        /// Requests waiting for a worker before the next answers 429 (imgproxy's
        /// `IMGPROXY_REQUESTS_QUEUE_SIZE`); 0: no limit.
        public var queueSize: Int
        /// Seconds a request may take, queue included, before it answers 504 (`IMGPIPE_TIMEOUT`,
        /// default 10 as imgproxy's).
        public var timeout: Double
        /// Pick AVIF, WebP or JPEG XL from `Accept` when the URL names no format.
        public var autoAVIF: Bool
        public var autoWebP: Bool
        public var autoJXL: Bool
        /// `Access-Control-Allow-Origin`, or `nil` for none.
        public var allowOrigin: String?
        /// The watermark picture for `wm:` (straight or premultiplied RGBA), or `nil`: `wm:` answers 400.
        public var watermark: Bitmap?
        /// Called with one access-log line per request; `nil`: no log.
        public var accessLog: (@Sendable (String) -> Void)?
        /// Bytes of finished responses kept in memory for repeats (in front of ``resultCache``).
        public var resultMemoryBytes: Int
        /// Prefixed to every metric name (imgproxy's `IMGPROXY_PROMETHEUS_NAMESPACE`).
        public var metricsNamespace: String
        /// The anchor `gravity:sm` crops at: [`CropAnchor.attention`](/documentation/pipelinecore/cropanchor/attention) (libvips's,
        /// imgproxy's) by default; the `FaceDetection` product's `.faces` keeps faces. Part of
        /// every `sm` result's key, so results of another anchor are not served.
        public var smartAnchor: CropAnchor

        /// A configuration with imgproxy's defaults where they fit a public server, and ours
        /// where they did not (automatic AVIF and WebP on).
        public init(pipeline: ImagePipeline, encoders: EncoderRegistry) {
            self.pipeline = pipeline
            self.encoders = encoders
            signing = URLSigning()
            presets = Presets()
            allowedSources = []
            allowedSchemes = ["http", "https", "local"]
            resultCache = nil
            ttl = 31_536_000
            workers = 2 * ProcessInfo.processInfo.activeProcessorCount
            queueSize = 0
            timeout = 10
            autoAVIF = true
            autoWebP = true
            autoJXL = false
            allowOrigin = nil
            watermark = nil
            accessLog = nil
            resultMemoryBytes = 64 << 20
            metricsNamespace = ""
            smartAnchor = .attention
        }
    }

    /// The configuration it was made with.
    public let configuration: Configuration
    /// The counters `/metrics` shows (``ServerMetrics/prometheusText()``).
    public let metrics: ServerMetrics
    let renderer: Renderer
    private let gate: RequestGate
    private let results: ResultStore
    private let flights = SingleFlight<StoredResult>()

    /// A server with `configuration`.
    public init(configuration: Configuration) {
        self.configuration = configuration
        metrics = ServerMetrics(namespace: configuration.metricsNamespace)
        renderer = Renderer(pipeline: configuration.pipeline, encoders: configuration.encoders, watermark: configuration.watermark)
        gate = RequestGate(workers: configuration.workers, queueSize: configuration.queueSize)
        results = ResultStore(memoryBytes: configuration.resultMemoryBytes, shared: configuration.resultCache,
                              decoders: configuration.pipeline.configuration.decoders)
    }

    /// Answers `request`: `/health`, a source's info (`/info/<signature>/<options>/plain/<source>`,
    /// `SourceInfo`), or a picture URL. Never throws: every failure is a
    /// response with its status and a one-line body. `HEAD` is answered as `GET` (the transport
    /// sends no body).
    public func respond(to request: ServerRequest) async -> ServerResponse {
        let started = ContinuousClock.now
        let requestID = Self.requestID(request.headers["X-Request-ID"])
        var response: ServerResponse
        var failure: ServerError.Kind?
        if request.path == "/health" {
            response = .text(200, "imgpipe is running")
        } else {
            metrics.requestStarted()
            do {
                response = request.path.hasPrefix("/info/") ? try await info(for: request) : try await picture(for: request)
            } catch let error as ServerError {
                failure = error.kind
                response = .text(error.status, error.message, headers: ["Cache-Control": "no-cache"])
                if error.kind == .tooManyRequests { response.headers["Retry-After"] = "1" }
            } catch is CancellationError {
                failure = .unavailable
                response = .text(503, "the request was cancelled", headers: ["Cache-Control": "no-cache"])
            } catch {
                failure = .internalError
                response = .text(500, "internal error", headers: ["Cache-Control": "no-cache"])
            }
            metrics.requestFinished(status: response.status, seconds: Self.seconds(since: started), error: failure)
        }
        response.headers["X-Request-ID"] = requestID
        if let origin = configuration.allowOrigin { response.headers["Access-Control-Allow-Origin"] = origin }
        response.headers["X-Content-Type-Options"] = "nosniff"
        response.headers["Content-Security-Policy"] = "script-src 'none'; sandbox"
        if let log = configuration.accessLog {
            let path = Self.loggedPath(request.path)
            let milliseconds = printfFormat("%.1f", Self.seconds(since: started) * 1000)
            // The client's Accept last (it may hold spaces), so that negotiation can be checked from the log.
            let accept = request.headers["Accept"].map { MessageText.escaped($0, limit: MessageText.urlLimit) } ?? "-"
            log("\(requestID) \(MessageText.escaped(request.method, limit: 16)) \(path) \(response.status) \(response.body.count)B \(milliseconds)ms accept=\(accept)")
        }
        return response
    }

    /// The picture `request` asks for, from the result store or made now.
    private func picture(for request: ServerRequest) async throws -> ServerResponse {
        guard request.method == "GET" || request.method == "HEAD" else {
            throw ServerError(.methodNotAllowed, "only GET and HEAD are served")
        }
        let now = configuration.pipeline.configuration.now()
        let url = try ImgproxyURL.parse(request.path, signing: configuration.signing, presets: configuration.presets, now: now)
        // `sm` parses as attention; the configured smart anchor takes its place (and its key).
        let options = url.options.withSmartAnchor(configuration.smartAnchor)
        let source = try checkedSource(url.source)
        let choice = outputChoice(options: options, accept: request.headers["Accept"])
        let key = ResultStore.key(options: options, source: source, choice: choice)
        let result: StoredResult
        if let (hit, tier) = await results.lookup(key, now: now) {
            metrics.hit(tier)
            result = hit
        } else {
            let timeout = ServerError(.timeout, "the picture took longer than \(Self.format(configuration.timeout)) s")
            result = try await withDeadline(configuration.timeout, onTimeout: timeout) { [self] in
                try await flights.value(for: key) { [self] in try await make(options, source: source, choice: choice, key: key) }
            }
        }
        return response(result, options: options, source: source, negotiated: choice.explicit == nil, request: request, now: now)
    }

    /// The info endpoint (`SourceInfo`): the path after `/info` is a picture URL's, signed,
    /// parsed and its source checked the same way; the work takes a worker of the gate and the
    /// same deadline as a picture.
    private func info(for request: ServerRequest) async throws -> ServerResponse {
        guard request.method == "GET" || request.method == "HEAD" else {
            throw ServerError(.methodNotAllowed, "only GET and HEAD are served")
        }
        let now = configuration.pipeline.configuration.now()
        let url = try ImgproxyURL.parse(String(request.path.dropFirst("/info".count)), signing: configuration.signing,
                                        presets: configuration.presets, now: now)
        let options = url.options
        let source = try checkedSource(url.source)
        let timeout = ServerError(.timeout, "the info took longer than \(Self.format(configuration.timeout)) s")
        let described = try await withDeadline(configuration.timeout, onTimeout: timeout) { [self] in
            try await gate.run { try await renderer.info(options, source: source) }
        }
        var headers = HTTPFields()
        var maxAge = configuration.ttl
        if let expires = options.expires { maxAge = min(maxAge, max(0, Int(expires.timeIntervalSince(now)))) }
        headers["Cache-Control"] = "public, max-age=\(maxAge)"
        headers["Content-Type"] = "application/json"
        return ServerResponse(status: 200, headers: headers, body: described.json)
    }

    /// Renders, derives the `ETag` and keeps the result: one worker of the gate while it runs.
    private func make(_ options: RenderOptions, source: URL, choice: OutputChoice, key: String) async throws -> StoredResult {
        let queued = ContinuousClock.now
        return try await gate.run {
            metrics.span("queue", seconds: Self.seconds(since: queued))
            metrics.imageStarted()
            defer { metrics.imageFinished() }
            let started = ContinuousClock.now
            let image = try await renderer.render(options, source: source, choice: choice)
            metrics.span("downloading", seconds: image.downloadSeconds)
            metrics.span("processing", seconds: max(0, Self.seconds(since: started) - image.downloadSeconds))
            let validator = image.sourceValidator ?? SHA256.hexDigest(image.data)
            let etag = "\"" + SHA256.hexDigest(Array("\(key)\n\(validator)".utf8)).prefix(32) + "\""
            let freshUntil = configuration.pipeline.configuration.now().addingTimeInterval(TimeInterval(configuration.ttl))
            let result = StoredResult(data: image.data, format: image.format, etag: etag, freshUntil: freshUntil)
            await results.store(result, for: key)
            return result
        }
    }

    /// The 200 (or 304) for `result`, with its caching and naming headers.
    private func response(_ result: StoredResult, options: RenderOptions, source: URL, negotiated: Bool,
                          request: ServerRequest, now: Date) -> ServerResponse {
        var headers = HTTPFields()
        var maxAge = configuration.ttl
        if let expires = options.expires { maxAge = min(maxAge, max(0, Int(expires.timeIntervalSince(now)))) }
        headers["Cache-Control"] = "public, max-age=\(maxAge)"
        headers["ETag"] = result.etag
        if negotiated, configuration.autoAVIF || configuration.autoWebP || configuration.autoJXL { headers["Vary"] = "Accept" }
        if let match = request.headers["If-None-Match"], Self.matches(match, etag: result.etag) {
            return ServerResponse(status: 304, headers: headers)
        }
        headers["Content-Type"] = result.format.mimeType ?? "application/octet-stream"
        let name = Self.fileName(options.filename, source: source, format: result.format)
        headers["Content-Disposition"] = "\(options.returnAttachment ? "attachment" : "inline"); filename=\"\(name)\""
        return ServerResponse(status: 200, headers: headers, body: result.data)
    }

    /// The formats this request may be answered in: the URL's, or those its `Accept` names
    /// that the server picks automatically and can encode.
    func outputChoice(options: RenderOptions, accept: String?) -> OutputChoice {
        if let format = options.format { return OutputChoice(explicit: format, accepted: []) }
        let accepted = Self.acceptedTypes(accept ?? "")
        var formats = Set<ImageFormat>()
        let automatic: [(ImageFormat, Bool)] = [(.avif, configuration.autoAVIF), (.webp, configuration.autoWebP),
                                                 (OutputNegotiation.jxl, configuration.autoJXL)]
        for (format, enabled) in automatic where enabled {
            if let mime = format.mimeType, accepted.contains(mime), configuration.encoders.encoder(for: format) != nil {
                formats.insert(format)
            }
        }
        return OutputChoice(explicit: nil, accepted: formats)
    }

    /// The media types `accept` names with a non-zero weight, lowercased.
    static func acceptedTypes(_ accept: String) -> Set<String> {
        var types = Set<String>()
        for item in accept.split(separator: ",").prefix(64) {
            let parts = item.split(separator: ";").map { $0.trimmingSpacesAndTabs().lowercased() }
            guard let type = parts.first, !type.isEmpty else { continue }
            let refused = parts.dropFirst().contains { Self.isZeroWeight($0.filter { $0 != " " }) }
            if !refused { types.insert(type) }
        }
        return types
    }

    /// Whether a (lowercased, space-free) media-type parameter is a zero weight: `q=0`, `q=0.`, `q=0.000`.
    private static func isZeroWeight(_ parameter: String) -> Bool {
        guard parameter.hasPrefix("q=0") else { return false }
        let rest = parameter.dropFirst(3)
        return rest.isEmpty || (rest.first == "." && rest.dropFirst().allSatisfy { $0 == "0" })
    }

    /// Whether an `If-None-Match` value names `etag` (weak comparison, as RFC 9110 asks for it).
    static func matches(_ header: String, etag: String) -> Bool {
        header.split(separator: ",").prefix(64).contains { item in
            let tag = item.trimmingSpacesAndTabs()
            return tag == "*" || (tag.hasPrefix("W/") ? String(tag.dropFirst(2)) : tag) == etag
        }
    }

    /// `Content-Disposition`'s file name: `filename` (or the source's last path component without
    /// its extension) with the format's extension, reduced to characters safe in a quoted string.
    static func fileName(_ filename: String?, source: URL, format: ImageFormat) -> String {
        var base = filename ?? source.deletingPathExtension().lastPathComponent
        base = String(base.unicodeScalars.prefix(128).map { scalar -> Character in
            let allowed = Self.isASCIIAlphanumeric(scalar) || "-_.+ ".unicodeScalars.contains(scalar)
            return allowed ? Character(scalar) : "_"
        })
        if base.isEmpty || base == "/" { base = "image" }
        return base + "." + (format.fileExtension ?? format.description)
    }

    /// `path` as the access log shows it: escaped and bounded (``MessageText``), and with every
    /// space percent-encoded, so that a request line's raw spaces (which the transport lets
    /// through) cannot add fields to the line (`/a 200 1B 0.1ms`).
    static func loggedPath(_ path: String) -> String {
        let escaped = MessageText.escaped(path, limit: MessageText.urlLimit)
        var shown = ""
        for scalar in escaped.unicodeScalars {
            if scalar.properties.generalCategory == .spaceSeparator {
                shown += String(scalar).utf8.map { "%" + String($0, radix: 16, uppercase: true) }.joined()
            } else {
                shown.unicodeScalars.append(scalar)
            }
        }
        return shown
    }

    /// The client's request ID when it is a short token, else a new random one.
    static func requestID(_ given: String?) -> String {
        if let given, (1...64).contains(given.count),
           given.unicodeScalars.allSatisfy({ isASCIIAlphanumeric($0) || "-_.".unicodeScalars.contains($0) }) {
            return given
        }
        var generator = SystemRandomNumberGenerator()
        return String(generator.next(), radix: 16) + String(generator.next(), radix: 16)
    }

    static func seconds(since start: ContinuousClock.Instant) -> Double {
        let elapsed = ContinuousClock.now - start
        return Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
    }

    private static func format(_ seconds: Double) -> String { printfFormat("%g", seconds) }

    /// An ASCII letter or digit.
    private static func isASCIIAlphanumeric(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar {
        case "a"..."z", "A"..."Z", "0"..."9": return true
        default: return false
        }
    }

    /// The source URL if its scheme and prefix are allowed.
    private func checkedSource(_ text: String) throws(ServerError) -> URL {
        let shown = MessageText.escaped(text, limit: MessageText.urlLimit)
        guard let url = URL(string: text), let scheme = url.scheme?.lowercased(), configuration.allowedSchemes.contains(scheme) else {
            throw ServerError(.forbidden, "source not allowed: \(shown) (allowed schemes: \(configuration.allowedSchemes.sorted().joined(separator: ", ")))")
        }
        if !configuration.allowedSources.isEmpty, !AllowedSources.allows(text, prefixes: configuration.allowedSources) {
            throw ServerError(.forbidden, "source not allowed: \(shown) (not under the allowed sources)")
        }
        return url
    }
}
