#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// The memory-cache key: one decoded result per fetch URL, size, mode and crop anchor,
/// processing options and processors.
///
/// Two requests with equal keys share one decode and one cache entry. The download and
/// the disk cache are keyed more coarsely, by ``cacheURL`` alone.
public struct ImageKey: Hashable, Sendable {
    /// The fetch URL's identity in the caches: the URL that is actually fetched (after the URL
    /// builder picked a width bucket), or, when a cache key applies (``ImageRequest/cacheKey``,
    /// ``ImagePipeline/Configuration/cacheKey``), the URL standing for it
    /// (``ImagePipeline/cacheURL(for:)``), so a rotating `?token=` does not make a new entry.
    /// Not necessarily the URL fetched: that is ``ImagePipeline/fetchURL(for:)``.
    public var cacheURL: URL
    /// The size asked for.
    public var targetSize: TargetSize
    /// Fit or fill (ignored, and normalised to `.fit`, for ``TargetSize/original``).
    public var contentMode: ContentMode
    /// The fill's crop anchor (``CropAnchor/center`` for a fit, which crops nothing).
    public var cropAnchor: CropAnchor
    /// Options that change the pixels.
    public var processing: ProcessingOptions
    /// The request's processors, in order; compared by identifier. Keys that differ only
    /// here share the download and the decode (the key with no processors) but not the
    /// processing.
    public var processors: [ImageProcessor]

    /// Creates the key for `request` whose identity in the caches is `cacheURL`
    /// (``ImagePipeline/key(for:)`` computes it).
    public init(request: ImageRequest, cacheURL: URL) {
        self.cacheURL = cacheURL
        self.targetSize = request.targetSize
        self.contentMode = request.targetSize == .original ? .fit : request.contentMode
        self.cropAnchor = contentMode == .fill ? request.cropAnchor : .center
        self.processing = request.processing
        self.processors = request.processorList
    }

    /// This key without processors: the decode that processed keys share.
    public var unprocessed: ImageKey {
        var key = self
        key.processors = []
        return key
    }

    /// The cache identity, under its old name (it was never necessarily the URL fetched).
    @available(*, deprecated, renamed: "cacheURL")
    public var fetchURL: URL { cacheURL }

    /// ``init(request:cacheURL:)`` under its old label.
    @available(*, deprecated, renamed: "init(request:cacheURL:)")
    public init(request: ImageRequest, fetchURL: URL) { self.init(request: request, cacheURL: fetchURL) }
}
