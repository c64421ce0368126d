import CacheRedis
import Dispatch
import FaceDetection
import ImagePipelineKit
import ImageServer
import ImageServerHTTP
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

/// `serve`'s options. Each is also read from the environment variable imgproxy names with
/// `IMGPROXY_`, here `IMGPIPE_` (``ServeOptions/environmentNames``), so a deployment moves by
/// renaming; a flag given on the command line wins.
struct ServeOptions: OptionGroup {
    let bind = Option("bind", "HOST:PORT", .server, "listen here (default 127.0.0.1:8080; imgproxy's is :8080, every interface)", .text)
    let key = Option("key", "HEX", .server, "a URL signing key, hex (repeatable, paired with --salt in order); none: unsigned URLs",
                     repeatable: true, .text)
    let salt = Option("salt", "HEX", .server, "a URL signing salt, hex (repeatable)", repeatable: true, .text)
    let signatureSize = Option("signature-size", "N", .server, "bytes of the HMAC kept in signatures, 1-32 (default 32)",
                               .wholeNumber(in: 1...32))
    let allowedSource = Option("allowed-source", "PREFIX", .server, "serve only sources under PREFIX, redirects only to its host (repeatable)",
                               repeatable: true, .text)
    let allowLoopback = Option("allow-loopback-sources", "BOOL", .server, "let sources resolve to loopback addresses (default false)",
                               .boolean)
    let allowPrivate = Option("allow-private-sources", "BOOL", .server,
                              "let sources resolve to private networks (default false; imgproxy's is true)", .boolean)
    let localRoot = Option("local-root", "DIR", .server, "serve local:///path sources from DIR (default: none)", .text)
    let ttl = Option("ttl", "S", .server, "Cache-Control max-age of pictures, and how long results are kept (default 31536000)",
                     .wholeNumber(in: 0...(10 * 31_536_000)))
    let workers = Option("workers", "N", .server, "pictures made at once (default 2 × cores)", .positiveInteger)
    let queueSize = Option("queue-size", "N", .server, "requests waiting for a worker before 429 (default 0: no limit)",
                           .wholeNumber(in: 0...1_000_000))
    let requestTimeout = Option("request-timeout", "S", .server, "seconds a request may take before 504 (default 10)", .positiveSeconds)
    let autoWebP = Option("auto-webp", "BOOL", .server, "answer WebP to clients that accept it, without an extension (default true)",
                          .boolean)
    let autoAVIF = Option("auto-avif", "BOOL", .server, "answer AVIF to clients that accept it, first (default true)", .boolean)
    let autoJXL = Option("auto-jxl", "BOOL", .server, "answer JPEG XL to clients that accept it (default false)", .boolean)
    let presets = Option("presets", "LIST", .server, "named option lists: name=rs:fit:300:300/q:80,… ('default' applies to all)", .text)
    let allowOrigin = Option("allow-origin", "ORIGIN", .server, "Access-Control-Allow-Origin of responses (default: none)", .text)
    let prometheusBind = Option("prometheus-bind", "HOST:PORT", .server, "serve /metrics (Prometheus) on this address", .text)
    let redisURL = Option("redis-url", "URL", .server, "share sources and results with a fleet through Redis: redis://HOST:PORT", .text)
    let redisSecret = Option("redis-secret", "HEX", .server, "the fleet's Redis value secret, hex, ≥16 bytes (or 'unauthenticated')",
                             .text)
    let watermark = Option("watermark", "FILE", .server, "the picture wm: places", .text)
    let maxClients = Option("max-clients", "N", .server, "open connections at most (default 2048)", .positiveInteger)
    let gracePeriod = Option("shutdown-grace", "S", .server, "on SIGTERM, seconds in-flight requests may finish (default 2 × request timeout)",
                             .positiveSeconds)
    let allowSVG = Option("allow-svg", "BOOL", .server,
                          "decode SVG sources (default false: librsvg can abort the process or run unbounded on hostile documents)", .boolean)
    let prometheusNamespace = Option("prometheus-namespace", "NAME", .server, "prefix of every metric name (default: none)", .text)
    let smartGravity = Option("smart-gravity", "HOW", .server,
                              "what g:sm keeps: attention (libvips's, the default) or faces (OpenCV's, else attention; needs opencv-data)",
                              SmartGravity.parser)
    let quiet = Flag("quiet", .server, "write no access-log line per request")

    /// The environment variable of each option (imgproxy's names with `IMGPIPE_`), and the
    /// common options serve reads.
    static let environmentNames: [String: String] = [
        "bind": "IMGPIPE_BIND", "key": "IMGPIPE_KEY", "salt": "IMGPIPE_SALT", "signature-size": "IMGPIPE_SIGNATURE_SIZE",
        "allowed-source": "IMGPIPE_ALLOWED_SOURCES", "allow-loopback-sources": "IMGPIPE_ALLOW_LOOPBACK_SOURCE_ADDRESSES",
        "allow-private-sources": "IMGPIPE_ALLOW_PRIVATE_SOURCE_ADDRESSES", "local-root": "IMGPIPE_LOCAL_FILESYSTEM_ROOT",
        "ttl": "IMGPIPE_TTL", "workers": "IMGPIPE_WORKERS", "queue-size": "IMGPIPE_REQUESTS_QUEUE_SIZE",
        "request-timeout": "IMGPIPE_TIMEOUT", "auto-webp": "IMGPIPE_AUTO_WEBP", "auto-avif": "IMGPIPE_AUTO_AVIF",
        "auto-jxl": "IMGPIPE_AUTO_JXL", "presets": "IMGPIPE_PRESETS", "allow-origin": "IMGPIPE_ALLOW_ORIGIN",
        "prometheus-bind": "IMGPIPE_PROMETHEUS_BIND", "prometheus-namespace": "IMGPIPE_PROMETHEUS_NAMESPACE",
        "allow-svg": "IMGPIPE_ALLOW_SVG", "redis-url": "IMGPIPE_REDIS_URL", "redis-secret": "IMGPIPE_REDIS_SECRET",
        "watermark": "IMGPIPE_WATERMARK_PATH", "max-clients": "IMGPIPE_MAX_CLIENTS", "shutdown-grace": "IMGPIPE_GRACEFUL_STOP_TIMEOUT",
        "cache-dir": "IMGPIPE_CACHE_DIR", "max-pixels": "IMGPIPE_MAX_SRC_RESOLUTION_PIXELS", "timeout": "IMGPIPE_DOWNLOAD_TIMEOUT",
        "memory-cache-mb": "IMGPIPE_MEMORY_CACHE_MB", "smart-gravity": "IMGPIPE_SMART_GRAVITY",
    ]
}

/// `serve --smart-gravity`'s value: the anchor `g:sm` crops at.
enum SmartGravity {
    static var parser: ValueParser<CropAnchor> {
        ValueParser { text, option in
            switch text.lowercased() {
            case "attention": return .attention
            case "faces": return .faces
            default: throw UsageError(message: "\(option) needs attention or faces, got '\(text)'")
            }
        }
    }
}

extension ValueParser where Value == Bool {
    /// `true`/`false` as imgproxy's environment reads them (`1`, `t`, `true`, `yes`; `0`, `f`, `false`, `no`).
    static var boolean: ValueParser {
        ValueParser { text, option in
            switch text.lowercased() {
            case "1", "t", "true", "yes", "on": return true
            case "0", "f", "false", "no", "off": return false
            default: throw UsageError(message: "\(option) needs true or false, got '\(text)'")
            }
        }
    }
}

/// The invocation's values with the environment behind them: a flag given wins, else its
/// `IMGPIPE_` variable (checked by the same parser; a list variable is comma-separated).
struct ServeSettings {
    let invocation: Invocation
    let environment: [String: String]

    subscript<Value>(option: Option<Value>) -> Value? {
        get throws {
            if let given = invocation[option] { return given }
            return try fromEnvironment(option).last
        }
    }

    func all<Value>(_ option: Option<Value>) throws -> [Value] {
        let given = invocation.all(option)
        return given.isEmpty ? try fromEnvironment(option) : given
    }

    private func fromEnvironment<Value>(_ option: Option<Value>) throws -> [Value] {
        guard let name = ServeOptions.environmentNames[option.spec.name], let text = environment[name], !text.isEmpty else { return [] }
        let pieces = option.spec.repeatable ? text.split(separator: ",").map { $0.trimmingSpacesAndTabs() } : [text]
        return try pieces.map { piece in
            do {
                guard let value = try option.spec.convert(piece) as? Value else { throw UsageError(message: "\(name): unreadable value") }
                return value
            } catch let error as UsageError {
                throw UsageError(message: "\(name): " + error.message.replacingOccurrences(ofASCII: "--\(option.spec.name) ", with: ""))
            }
        }
    }
}

extension Command {
    /// `imgpipe serve`: an imgproxy-compatible image server.
    static let serve = Command(
        name: "serve", synopsis: "",
        summary: "serve pictures over HTTP with imgproxy's URLs (/SIGNATURE/OPTIONS/plain/SOURCE@EXT), caching results",
        positionals: .count(0...0), options: ServeOptions(),
        // Always public-only (loopback and private networks by their own flags); each request is
        // one picture; the access log replaces --verbose.
        ignoredCommon: ["public-only", "concurrency", "verbose"],
        run: { options, invocation in
            let settings = ServeSettings(invocation: invocation, environment: ProcessInfo.processInfo.environment)
            let server = try await ServeSetup(options, settings)
            return try await server.run()
        })
}

/// What `serve` builds from its settings: the pipeline, the image server, the listeners.
struct ServeSetup {
    let imageServer: ImageServer
    let bind: (host: String, port: Int)
    let metricsBind: (host: String, port: Int)?
    let maxClients: Int
    let gracePeriod: Double
    let timeout: Double
    let quiet: Bool

    init(_ options: ServeOptions, _ settings: ServeSettings) async throws {
        let common = CommonOptions.declared
        bind = try Self.address(try settings[options.bind] ?? "127.0.0.1:8080", name: "--bind")
        metricsBind = try settings[options.prometheusBind].map { try Self.address($0, name: "--prometheus-bind") }
        maxClients = try settings[options.maxClients] ?? 2048
        timeout = try settings[options.requestTimeout] ?? 10
        gracePeriod = try settings[options.gracePeriod] ?? 2 * timeout
        quiet = settings.invocation[options.quiet]

        // Sources: http(s) under the public-only policy (loopback and private networks only when
        // asked for), local:/// below one folder when one is given; never file: or data:.
        var policy = ConnectionPolicy.publicOnly
        if try settings[options.allowLoopback] == true { policy.allowedRanges.insert(.loopback) }
        if try settings[options.allowPrivate] == true { policy.allowedRanges.insert(.privateNetwork) }
        let allowedHosts = settings.invocation.all(common.allowHost)
        let allowedSources = try settings.all(options.allowedSource)
        if !allowedHosts.isEmpty {
            policy.allowedHosts = allowedHosts.map { HostPattern($0) }
        } else if !allowedSources.isEmpty {
            // The allowed sources' hosts bound the redirects too: the server checks the URL
            // asked for, and an allowed origin that redirects elsewhere (an open redirect) would
            // otherwise fetch any public host. (imgproxy checks only the URL asked for.)
            policy.allowedHosts = allowedSources.compactMap { URL(string: $0)?.host(percentEncoded: false) }
                .filter { !$0.isEmpty }.map { HostPattern($0) }
        }
        // SVG only when asked for: librsvg cannot be stopped mid-render and aborts the process
        // on some documents (issue 41), which on a server ends every request in flight.
        let decoders = try settings[options.allowSVG] == true
            ? Environment.decoders
            : DecoderRegistry(Environment.decoders.all.reversed().filter { !$0.formats.contains(.svg) })
        let networkTimeout = try settings[common.timeout] ?? 5
        // A fleet shares sources and results through Redis; its fetch lease makes one origin
        // fetch per source URL across every replica at a time.
        let shared = try settings[options.redisURL].map { try Self.redis($0, secret: try settings[options.redisSecret]) }
        // The origin's bounds follow two settings only: `--timeout` for a transfer that stops
        // (connecting, silence, or under 256 B/s for that long) and the request deadline for the
        // whole download and its wait for a connection, instead of the loader's own 10/60/30 s.
        let http = HTTPDataLoader(configuration: HTTPDataLoader.Configuration(
            connectTimeout: networkTimeout, idleTimeout: networkTimeout, lowSpeedTime: networkTimeout, totalTimeout: timeout,
            headers: ["Accept": decoders.acceptHeader()], connectionPolicy: policy, maxQueueTime: timeout))
        var loaders = LoaderRegistry().registering(shared.map { SharedTierLoader(base: http, tier: $0) } ?? http)
        var schemes: Set<String> = ["http", "https"]
        if let root = try settings[options.localRoot] {
            loaders.register(try RootedFileLoader(root: URL(fileURLWithPath: root)))
            schemes.insert("local")
        }

        // Caches: a disk cache of sources and results (and Redis behind it for a fleet).
        var dataCache: (any DataCaching)?
        if !settings.invocation[common.noDiskCache] {
            let directory = try settings[common.cacheDirectory]
            do {
                dataCache = try directory.map { try DiskCache(directory: URL(fileURLWithPath: $0)) } ?? DiskCache(name: "imgpipe-serve")
            } catch {
                throw UsageError(message: "cannot use \(directory ?? "the user cache directory") as a disk cache: \(localizedDescription(of: error))")
            }
        }
        if let shared { dataCache = dataCache.map { TieredDataCache(local: $0, shared: shared) } ?? shared }
        // No decoded pictures kept by default: repeats come from the result store (encoded,
        // 30–100 times smaller), and requests for one picture at once share its decode anyway.
        // Measured (120 distinct 512-px results of 2000-px JPEGs, 8 at a time): peak RSS
        // 152 MB with 32 MiB of decoded pictures, 92 MB with none.
        let memoryMB = try settings[common.memoryCacheMB] ?? 0
        var configuration = ImagePipeline.Configuration(
            decoders: decoders, loaders: loaders, memoryCache: MemoryCache(costLimit: min(memoryMB, 1 << 30) << 20),
            diskCache: dataCache, maxPixelCount: try settings[common.maxPixels] ?? CommonOptions.defaultMaxPixels)
        configuration.maxConcurrentDecodes = ProcessInfo.processInfo.activeProcessorCount
        // A placeholder hash is for an app's grid; a server never asks for one.
        configuration.makesPlaceholders = false
        let pipeline = ImagePipeline(configuration: configuration)

        var server = ImageServer.Configuration(pipeline: pipeline, encoders: Encoders.registry)
        server.allowedSchemes = schemes
        server.signing = try URLSigning(keys: try settings.all(options.key), salts: try settings.all(options.salt),
                                        size: try settings[options.signatureSize] ?? 32)
        server.presets = try Presets(parsing: try settings[options.presets] ?? "")
        server.allowedSources = allowedSources
        server.resultCache = dataCache
        server.ttl = try settings[options.ttl] ?? server.ttl
        server.workers = try settings[options.workers] ?? server.workers
        server.queueSize = try settings[options.queueSize] ?? 0
        server.timeout = timeout
        server.autoWebP = try settings[options.autoWebP] ?? true
        server.autoAVIF = try settings[options.autoAVIF] ?? true
        server.autoJXL = try settings[options.autoJXL] ?? false
        server.allowOrigin = try settings[options.allowOrigin]
        server.metricsNamespace = try settings[options.prometheusNamespace] ?? ""
        server.smartAnchor = try settings[options.smartGravity] ?? .attention
        if server.smartAnchor == .faces {
            // A missing cascade stops the start, not the first `g:sm` request.
            do { try FaceDetector.shared.load() } catch { throw UsageError(message: "--smart-gravity faces: \(error)") }
        }
        if let path = try settings[options.watermark] {
            do {
                server.watermark = try await pipeline.image(for: WriteRequest.make(URL(fileURLWithPath: path))).bitmap
            } catch {
                throw UsageError(message: "--watermark: \(Sources.failure(error, for: URL(fileURLWithPath: path)))")
            }
        }
        if !quiet { server.accessLog = { line in ServeLog.write(line) } }
        imageServer = ImageServer(configuration: server)
    }

    /// Listens until SIGTERM or SIGINT, then stops accepting and lets in-flight requests finish
    /// for the grace period.
    func run() async throws -> Int32 {
        let server = imageServer
        let http = try HTTPServer(configuration: HTTPServer.Configuration(host: bind.host, port: bind.port, requestTimeout: .seconds(timeout + 1),
                                                                          connectionLimit: maxClients)) { request in
            await server.respond(to: request)
        }
        let metrics = try metricsBind.map { address in
            try HTTPServer(configuration: HTTPServer.Configuration(host: address.host, port: address.port)) { request in
                request.path == "/metrics"
                    ? ServerResponse(status: 200, headers: ["Content-Type": "text/plain; version=0.0.4"],
                                     body: Data(server.metrics.prometheusText().utf8))
                    : .text(404, "only /metrics is served here")
            }
        }
        func shown(_ host: String, _ port: Int) -> String { "http://" + (host.contains(":") ? "[\(host)]" : host) + ":\(port)" }
        ServeLog.write("imgpipe serve: listening on \(shown(bind.host, http.port))"
                       + (metrics.map { " (metrics on \(shown(metricsBind?.host ?? "", $0.port))/metrics)" } ?? ""))
        await StopSignal.wait()
        ServeLog.write("imgpipe serve: stopping (in-flight requests have \(Int(gracePeriod)) s)")
        await http.shutdown(gracePeriod: .seconds(gracePeriod))
        await metrics?.shutdown(gracePeriod: .seconds(1))
        return 0
    }

    /// `HOST:PORT`, `:PORT` (every interface) or `[V6]:PORT`.
    static func address(_ text: String, name: String) throws -> (host: String, port: Int) {
        guard let colon = text.lastIndex(of: ":"), let port = Int(text[text.index(after: colon)...]), (0...65535).contains(port) else {
            throw UsageError(message: "\(name) needs HOST:PORT, got '\(text)'")
        }
        var host = String(text[..<colon])
        if host.hasPrefix("["), host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
        return (host.isEmpty ? "0.0.0.0" : host, port)
    }

    /// The Redis tier for `redis://HOST:PORT`, authenticated by `secret` (hex, or `unauthenticated`).
    static func redis(_ text: String, secret: String?) throws -> RedisCache {
        guard let url = URL(string: text), url.scheme == "redis", let host = url.host, !host.isEmpty else {
            throw UsageError(message: "--redis-url needs redis://HOST:PORT, got '\(MessageText.escaped(text, limit: 100))'")
        }
        let authentication: RedisCache.Configuration.Authentication
        switch secret {
        case "unauthenticated": authentication = .unauthenticated
        case let hex?:
            guard let bytes = URLSigning.bytes(hex: hex), bytes.count >= RedisCache.Configuration.minimumSecretBytes else {
                throw UsageError(message: "--redis-secret needs at least \(RedisCache.Configuration.minimumSecretBytes) bytes in hex")
            }
            authentication = .secret(bytes)
        case nil:
            throw UsageError(message: "--redis-url needs --redis-secret HEX (the fleet's shared secret) or --redis-secret unauthenticated")
        }
        do {
            return try RedisCache(configuration: .init(host: host, port: url.port ?? 6379, authentication: authentication))
        } catch {
            throw UsageError(message: "--redis-url: \(error)")
        }
    }
}

/// `serve`'s lines on stdout, written at once (unbuffered), whole lines only.
enum ServeLog {
    static func write(_ line: String) {
        try? FileOutput.standardOutput.write(contentsOf: Data((line + "\n").utf8))
    }
}

/// Waits for SIGTERM or SIGINT (their default actions are turned off while the server runs).
enum StopSignal {
    /// The signal sources, kept for the life of the process (a source released is a source cancelled).
    private final class Sources: @unchecked Sendable {
        // Written once, under the lock, and never read: it only keeps the sources alive.
        private let lock = Mutex(())
        private var kept: [any DispatchSourceSignal] = []
        func keep(_ sources: [any DispatchSourceSignal]) { lock.withLock { _ in kept = sources } }
    }

    private static let sources = Sources()

    static func wait() async {
        let queue = DispatchQueue(label: "imgpipe.serve.signals")
        let (stream, continuation) = AsyncStream<Void>.makeStream()
        var made: [any DispatchSourceSignal] = []
        for number in [SIGTERM, SIGINT] {
            signal(number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: number, queue: queue)
            source.setEventHandler { continuation.yield() }
            source.resume()
            made.append(source)
        }
        sources.keep(made)
        for await _ in stream { return }
    }
}
