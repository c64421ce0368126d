import Foundation

extension ImagePipeline {
    /// Everything a pipeline is built from. The app builds the registries; nothing is global.
    public struct Configuration: Sendable {
        /// Decoders by magic bytes.
        public var decoders: DecoderRegistry
        /// Loaders by URL scheme.
        public var loaders: LoaderRegistry
        /// Picks the fetch URL. Default ``IdentityURLBuilder``.
        public var urlBuilder: any FetchURLBuilding
        /// The memory cache; pass one in to share it or to set its limits.
        public var memoryCache: MemoryCache<ImageKey, ImageResponse>
        /// The disk cache of compressed bytes, or `nil` for none. Default `nil`.
        public var diskCache: (any DataCaching)?
        /// The URL schemes whose bytes go through the disk cache. Default `["http", "https"]`:
        /// a `file` URL is on disk already, and a copy would only cost space.
        public var diskCachedSchemes: Set<String> = ["http", "https"]
        /// Whether processed results (renditions) go to ``diskCache`` too; a request may
        /// override it (``ImageRequest/diskCachePolicy``). Default ``DiskCachePolicy/originals``.
        public var diskCachePolicy: DiskCachePolicy = .originals
        /// Encodes renditions (``DiskCachePolicy/originalsAndRenditions``); without one no
        /// rendition is stored. Default `nil`. ``RenditionEncoder`` writes opaque results as JPEG
        /// and the others losslessly, with the encoders of an ``EncoderRegistry``;
        /// `PNGEncoder()` from `CodecPNG` alone writes every rendition as PNG.
        public var renditionEncoder: (any RenditionEncoding)?
        /// Decodes that run at once. Default: the number of active cores.
        public var maxConcurrentDecodes: Int
        /// The largest stored picture accepted, in pixels (checked from the header before
        /// decoding). Default 100,000,000.
        public var maxPixelCount: Int
        /// How long a permanent failure (404, undecodable bytes) is remembered and answered
        /// without trying again, in seconds. Default 10; 0 turns the negative cache off.
        public var negativeCacheLifetime: TimeInterval
        /// The most failures the negative cache remembers, per kind (fetch URLs, keys); the
        /// least recently used goes first. Default 1,000.
        public var negativeCacheLimit: Int = 1000
        /// Receives ``ImagePipelineEvent``s. Default `nil`.
        public var eventHandler: (@Sendable (ImagePipelineEvent) -> Void)?
        /// The clock for freshness and the negative cache. Default `Date.init`; tests move it.
        public var now: @Sendable () -> Date

        /// Creates a configuration from the app's registries.
        public init(decoders: DecoderRegistry, loaders: LoaderRegistry,
                    urlBuilder: any FetchURLBuilding = IdentityURLBuilder(),
                    memoryCache: MemoryCache<ImageKey, ImageResponse> = MemoryCache(),
                    diskCache: (any DataCaching)? = nil,
                    maxConcurrentDecodes: Int = ProcessInfo.processInfo.activeProcessorCount,
                    maxPixelCount: Int = 100_000_000,
                    negativeCacheLifetime: TimeInterval = 10,
                    eventHandler: (@Sendable (ImagePipelineEvent) -> Void)? = nil,
                    now: @escaping @Sendable () -> Date = { Date() }) {
            self.decoders = decoders
            self.loaders = loaders
            self.urlBuilder = urlBuilder
            self.memoryCache = memoryCache
            self.diskCache = diskCache
            self.maxConcurrentDecodes = maxConcurrentDecodes
            self.maxPixelCount = maxPixelCount
            self.negativeCacheLifetime = negativeCacheLifetime
            self.eventHandler = eventHandler
            self.now = now
        }
    }
}
