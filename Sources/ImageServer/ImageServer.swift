import Foundation
import PipelineCore

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
        /// pipeline's loaders accept (imgproxy's `IMGPROXY_ALLOWED_SOURCES`).
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
        }
    }

    /// The configuration it was made with.
    public let configuration: Configuration
    let renderer: Renderer

    /// A server with `configuration`.
    public init(configuration: Configuration) {
        self.configuration = configuration
        renderer = Renderer(pipeline: configuration.pipeline, encoders: configuration.encoders)
    }

    /// Answers `request`: `/health`, or a picture URL. Never throws: every failure is a
    /// response with its status and a one-line body.
    public func respond(to request: ServerRequest) async -> ServerResponse {
        guard request.method == "GET" || request.method == "HEAD" else {
            return .text(405, "only GET and HEAD are served", headers: ["Allow": "GET, HEAD"])
        }
        if request.path == "/health" { return .text(200, "imgpipe is running") }
        do {
            let url = try ImgproxyURL.parse(request.path, signing: configuration.signing, presets: configuration.presets)
            let source = try checkedSource(url.source)
            let choice = OutputChoice(explicit: url.options.format, accepted: [])
            let image = try await renderer.render(url.options, source: source, choice: choice)
            return ServerResponse(status: 200, headers: ["Content-Type": image.format.mimeType ?? "application/octet-stream"], body: image.data)
        } catch {
            return .text(error.status, error.message)
        }
    }

    /// The source URL if its scheme and prefix are allowed.
    private func checkedSource(_ text: String) throws(ServerError) -> URL {
        guard let url = URL(string: text), let scheme = url.scheme?.lowercased(),
              configuration.allowedSchemes.contains(scheme)
        else {
            throw ServerError(.forbidden, "source not allowed: \(MessageText.escaped(text, limit: MessageText.urlLimit))")
        }
        if !configuration.allowedSources.isEmpty, !configuration.allowedSources.contains(where: { text.hasPrefix($0) }) {
            throw ServerError(.forbidden, "source not allowed: \(MessageText.escaped(text, limit: MessageText.urlLimit))")
        }
        return url
    }
}
