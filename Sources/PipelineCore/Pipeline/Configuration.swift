#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

extension ImagePipeline {
    /// Everything a pipeline is built from. The app builds the registries; nothing is global.
    public struct Configuration: Sendable {
        /// Decoders by magic bytes.
        public var decoders: DecoderRegistry
        /// Loaders by URL scheme.
        public var loaders: LoaderRegistry
        /// Picks the fetch URL. Default ``IdentityURLBuilder``.
        public var urlBuilder: any FetchURLBuilding
        /// The memory cache; pass one in to share it or to set its limits. The pipeline gives
        /// each entry a cost of its pixels (``Bitmap/cost``) plus what it holds besides them: the
        /// key's and response's URLs (UTF-8 bytes), processor identifiers, warnings, and 1,280 bytes
        /// of fixed overhead, so ``MemoryCache/costLimit`` bounds the memory even for tiny
        /// pictures with long URLs.
        public var memoryCache: MemoryCache<ImageKey, ImageContainer>
        /// The disk cache of compressed bytes, or `nil` for none. Default `nil`.
        public var diskCache: (any DataCaching)?
        /// The URL schemes whose bytes go through the disk cache. Default `["http", "https"]`:
        /// a `file` URL is on disk already, and a copy would only cost space.
        public var diskCachedSchemes: Set<String> = ["http", "https"]
        /// Whether processed results (renditions) go to ``diskCache`` too; a request may
        /// override it (``ImageRequest/diskCachePolicy``). Default ``DiskCachePolicy/originals``.
        public var diskCachePolicy: DiskCachePolicy = .originals
        /// How long downloaded bytes stay fresh in ``diskCache``; a request may override it
        /// (``ImageRequest/freshnessPolicy``). Default ``FreshnessPolicy/http``: the origin's
        /// headers, with the heuristic for origins that send only `Last-Modified`.
        public var freshnessPolicy: FreshnessPolicy = .http
        /// Encodes renditions (``DiskCachePolicy/originalsAndRenditions``); without one no
        /// rendition is stored. Default `nil`. ``RenditionEncoder`` writes opaque results as JPEG
        /// and the others losslessly, with the encoders of an ``EncoderRegistry``;
        /// `PNGEncoder()` from `CodecPNG` alone writes every rendition as PNG.
        public var renditionEncoder: (any RenditionEncoding)?
        /// Decodes that run at once. Default: the number of active cores.
        public var maxConcurrentDecodes: Int
        /// The most memory, in bytes, that running decodes may hold by their estimates
        /// (``ImageDecodingSession/estimatedPeakMemory(_:)``); other decodes wait, visible ones
        /// first. A decode larger than the budget runs alone. `nil` admits by
        /// ``maxConcurrentDecodes`` only. Default ``defaultDecodeMemoryBudget(cgroupRoot:physicalMemory:)``.
        public var decodeMemoryBudget: Int? = Configuration.defaultDecodeMemoryBudget()
        /// The most memory, in bytes, that requests in flight (past the memory cache, waiting for
        /// their work) may hold together, each counted at what its tasks hold, measured: about
        /// 64 KiB for a request that starts work, 24 KiB for one that joins it, plus its URL.
        /// Over it a request fails at once with ``ImagePipelineError/overloaded(_:limit:detail:)``
        /// (``Limit/requestsInFlight``), unless it is visible and pushing out the newest
        /// prefetch, or the newest request of the host holding the most, makes room: a flood of
        /// requests to slow hosts cannot keep a healthy host out. `nil` bounds nothing (each
        /// request still holds its memory). Default
        /// ``defaultRequestMemoryBudget(cgroupRoot:physicalMemory:)``.
        public var requestMemoryBudget: Int? = Configuration.defaultRequestMemoryBudget()
        /// What one source may cost (``Limits``, where each default and its reason is): its
        /// pixel count, an animation's frames and pixels, a codec's work, its colour profile.
        /// The pipeline's decodes carry them (``DecodeOptions/limits``). Default ``Limits/default``.
        public var limits = Limits.default
        /// The largest stored picture accepted, in pixels (checked from the header before
        /// decoding): ``Limits/maxPixelCount`` of ``limits``.
        public var maxPixelCount: Int {
            get { limits.maxPixelCount }
            set { limits.maxPixelCount = newValue }
        }
        /// The most frames an animation may have (``ImagePipeline/animation(for:)``, checked from
        /// its header before any frame is decoded; over it fails with
        /// ``ImagePipelineError/overLimit(_:limit:actual:)``, ``Limit/animationFrames``).
        /// `image(for:)` of an animated file gives its first frame and is not refused by it.
        /// ``Limits/maxAnimationFrameCount`` of ``limits``.
        public var maxAnimationFrameCount: Int {
            get { limits.maxAnimationFrameCount }
            set { limits.maxAnimationFrameCount = newValue }
        }
        /// The most pixels an animation's frames may have together, canvas width × height ×
        /// frames (``ImagePipeline/animation(for:)``; ``Limit/animationPixels``), checked
        /// with ``maxAnimationFrameCount``. `image(for:)` is not refused by it.
        /// ``Limits/maxAnimationPixelCount`` of ``limits``.
        public var maxAnimationPixelCount: Int {
            get { limits.maxAnimationPixelCount }
            set { limits.maxAnimationPixelCount = newValue }
        }
        /// ``DecodingStrictness/strict`` makes every request strict (a damaged file fails
        /// instead of coming back partly grey), whatever the request says; ``DecodingStrictness/lenient``,
        /// the default, leaves it to each request (`decoding:` in its initialiser). A server that
        /// writes what it decodes to files or caches sets `.strict`, so that a truncated upload
        /// is never stored as a grey picture.
        public var decodingStrictness: DecodingStrictness = .lenient
        /// How long a permanent failure (404, undecodable bytes) is remembered and answered
        /// without trying again, in seconds. Default 10; 0 turns the negative cache off.
        public var negativeCacheLifetime: TimeInterval
        /// The most failures the negative cache remembers, per kind (fetch URLs, keys); the
        /// least recently used goes first. Default 1,000.
        public var negativeCacheLimit: Int = 1000
        /// The most bytes the negative cache holds, per kind (fetch URLs, keys), counting each
        /// failure's key (a key whose URL is over 1 KiB is kept as its SHA-256), the stored
        /// error's URLs and messages, and 1,152 bytes of overhead; the least recently used
        /// goes first, and a failure that alone would cost more is not remembered (it is
        /// retried). Default ``defaultNegativeCacheByteLimit`` (2 MiB).
        public var negativeCacheByteLimit: Int = Configuration.defaultNegativeCacheByteLimit
        /// 2 MiB: a thousand failures of ordinary URLs fit many times over, while distinct
        /// failures of hostile multi-megabyte `data:` URLs cannot hold more than this.
        public static let defaultNegativeCacheByteLimit = 2 << 20
        /// Decode previews of progressive pictures while they download, for the callers that
        /// follow them (``ImageTask/previews``, ``ImageTargetBinding``), or `nil` for none.
        /// Default `nil`, as in Nuke: previews cost decode time (each decodes what has arrived
        /// so far) and a server has no use for them.
        public var previewPolicy: PreviewPolicy?
        /// Make a placeholder hash (``ThumbHash``) of every picture decoded from original bytes
        /// (``ImageResponse/placeholder``), kept with its disk entry for
        /// ``ImagePipeline/placeholder(for:)``. Default `true`: it is made from the decoded
        /// picture, shrunk to 100 px at most, and costs a fraction of a millisecond.
        public var makesPlaceholders = true
        /// Receives ``ImagePipelineEvent``s. Default `nil`.
        public var eventHandler: (@Sendable (ImagePipelineEvent) -> Void)?
        /// The clock for freshness and the negative cache. Default `Date.init`; tests move it.
        public var now: @Sendable () -> Date
        /// Maps a fetch URL (after the URL builder) to its identity in the caches, or `nil` to
        /// keep the URL: for signed or rotating-token URLs (Nuke's `imageId`, SDWebImage's
        /// cache-key filter). ``ImageRequest/cacheKey`` overrides it per request. A result that
        /// parses as an absolute URL is used as that URL; any other text stands for itself.
        /// Called on every lookup (``ImagePipeline/cachedImage(for:)`` too): keep it cheap, and
        /// never let two different pictures map to one identity. Default `nil`.
        /// ``ignoringQueryItems(_:)`` drops named query items.
        public var cacheKey: (@Sendable (URL) -> String?)?

        /// A quarter of the memory this process may use (the smaller of physical memory and
        /// the cgroup's limit, as for ``MemoryCache/defaultCostLimit(cgroupRoot:physicalMemory:)``),
        /// between 64 MiB and 1 GiB: in a 512 MiB container 128 MiB, so four progressive
        /// 24-megapixel JPEGs (about 75 MiB of coefficients each) do not all start at once.
        public static func defaultDecodeMemoryBudget(cgroupRoot: String = "/sys/fs/cgroup",
                                                     physicalMemory: UInt64 = ProcessInfo.processInfo.physicalMemory) -> Int {
            let total = ContainerMemory.available(cgroupRoot: cgroupRoot, physicalMemory: physicalMemory)
            let quarter = Int(clamping: total / 4)
            return min(max(quarter, 64 << 20), 1 << 30)
        }

        /// A sixteenth of the memory this process may use (as for
        /// ``defaultDecodeMemoryBudget(cgroupRoot:physicalMemory:)``), between 16 MiB and 256 MiB:
        /// about 4,000 distinct requests in flight on a large machine, 500 in a 512 MiB container,
        /// more than an app shows at once and as many as `LoaderHTTP`'s queue holds by default.
        public static func defaultRequestMemoryBudget(cgroupRoot: String = "/sys/fs/cgroup",
                                                      physicalMemory: UInt64 = ProcessInfo.processInfo.physicalMemory) -> Int {
            let total = ContainerMemory.available(cgroupRoot: cgroupRoot, physicalMemory: physicalMemory)
            return min(max(Int(clamping: total / 16), 16 << 20), 256 << 20)
        }

        /// Creates a configuration from the app's registries.
        public init(decoders: DecoderRegistry, loaders: LoaderRegistry,
                    urlBuilder: any FetchURLBuilding = IdentityURLBuilder(),
                    memoryCache: MemoryCache<ImageKey, ImageContainer> = MemoryCache(),
                    diskCache: (any DataCaching)? = nil,
                    maxConcurrentDecodes: Int = ProcessInfo.processInfo.activeProcessorCount,
                    maxPixelCount: Int? = nil,
                    negativeCacheLifetime: TimeInterval = 10,
                    eventHandler: (@Sendable (ImagePipelineEvent) -> Void)? = nil,
                    now: @escaping @Sendable () -> Date = { Date() }) {
            self.decoders = decoders
            self.loaders = loaders
            self.urlBuilder = urlBuilder
            self.memoryCache = memoryCache
            self.diskCache = diskCache
            self.maxConcurrentDecodes = maxConcurrentDecodes
            if let maxPixelCount { self.limits.maxPixelCount = maxPixelCount }
            self.negativeCacheLifetime = negativeCacheLifetime
            self.eventHandler = eventHandler
            self.now = now
        }

        /// A ``cacheKey`` mapping that drops the query items named `names` (`["token",
        /// "Signature", "Expires"]`) and keeps everything else in order: `…/a.jpg?w=320&token=x`
        /// → `…/a.jpg?w=320`. URLs without those items keep their identity. Works on the URL's
        /// text (names compared as written, not percent-decoded), which is several times cheaper
        /// than `URLComponents` on a path that runs per cell.
        public static func ignoringQueryItems(_ names: Set<String>) -> @Sendable (URL) -> String? {
            let names = names.map { Array($0.utf8) }
            return { url in
                let bytes = Array(url.absoluteString.utf8)
                let end = bytes.firstIndex(of: UInt8(ascii: "#")) ?? bytes.endIndex  // a fragment has no query
                guard let mark = bytes[..<end].firstIndex(of: UInt8(ascii: "?")) else { return nil }
                let items = bytes[(mark + 1)..<end].split(separator: UInt8(ascii: "&"), omittingEmptySubsequences: false)
                let kept = items.filter { item in
                    let name = item.prefix { $0 != UInt8(ascii: "=") }
                    return !names.contains { $0.elementsEqual(name) }
                }
                guard kept.count != items.count else { return nil }
                var result = Array(bytes[..<mark])
                for (index, item) in kept.enumerated() {
                    result.append(index == 0 ? UInt8(ascii: "?") : UInt8(ascii: "&"))
                    result += item
                }
                result += bytes[end...]
                return String(decoding: result, as: UTF8.self)
            }
        }
    }
}

/// What the stages ask of the configuration they were built from.
extension ImagePipeline.Configuration {
    /// Sends `event` to the ``eventHandler``, if any.
    func emit(_ event: ImagePipelineEvent) {
        eventHandler?(event)
    }

    /// Until when a permanent failure is remembered from now, or `nil` with no negative cache.
    func failureLifetime() -> Date? {
        guard negativeCacheLifetime > 0 else { return nil }
        return now().addingTimeInterval(negativeCacheLifetime)
    }

    /// The options an animation is opened with: the configured limits and `resamplingFilter`.
    func decodeOptions(resamplingFilter: ResamplingFilter) -> DecodeOptions {
        DecodeOptions(limits: limits, resamplingFilter: resamplingFilter)
    }
}
