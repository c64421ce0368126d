import Foundation

/// Where a response's pixels came from.
public enum ImageSource: String, Hashable, Sendable {
    /// The memory cache: no loading, no decoding.
    case memory
    /// The disk cache, without asking the origin.
    case disk
    /// A processed rendition on disk (any ``DiskCachePolicy`` but `originals`): the small
    /// encoded result was decoded; the original was neither read nor decoded.
    case rendition
    /// The disk cache, after the origin confirmed it is current (HTTP 304).
    case revalidated
    /// A loader (network or file).
    case network
}

/// A decoded picture at the requested size, and how it was obtained.
public struct ImageResponse: Sendable {
    /// The pixels, exactly the planned output size, in the request's
    /// ``ProcessingOptions/pixelFormat`` (premultiplied unless straight was asked).
    public var bitmap: Bitmap
    /// Where it came from.
    public var source: ImageSource
    /// The picture's own size, upright (unless orientation was turned off).
    public var originalSize: PixelSize
    /// The container format of the compressed bytes.
    public var format: ImageFormat
    /// The codec's warnings about corrupt-but-decodable data.
    public var warnings: [String]
    /// The URL the request maps to (after the URL builder): what was or would have been
    /// downloaded. `nil` only for responses made outside a pipeline.
    public var fetchURL: URL?
    /// Bytes a loader delivered for this answer: 0 from memory, from the disk cache and after a
    /// 304. Callers that shared one download each see its size.
    public var downloadedBytes: Int
    /// `true` when a stale disk copy answered while a background revalidation runs
    /// (``RevalidationPolicy/staleWhileRevalidate``); the picture may change once it is done.
    /// Always `false` from memory.
    public var isStale: Bool
    /// `true` for a preview: a coarser picture decoded from the part of a progressive download
    /// that had arrived (``ImageTask/previews``), at the requested size. Never cached.
    public var isPreview: Bool
    /// The picture's placeholder hash (``ThumbHash``), of the whole upright picture before any
    /// crop or processor, when the pipeline made one (``ImagePipeline/Configuration/makesPlaceholders``):
    /// what ``ImagePipeline/placeholder(for:)`` answers later from the disk entry. Store it
    /// beside the URL (a server's API, a database row) to paint a cell before anything loads.
    public var placeholder: ThumbHash?
    /// What a rendition made from this response is tagged with (the original bytes' tag and
    /// info), when it may be made; `nil` for a rendition's own decode.
    var renditionOrigin: RenditionOrigin?

    /// Creates a response.
    public init(bitmap: Bitmap, source: ImageSource, originalSize: PixelSize, format: ImageFormat, warnings: [String] = []) {
        self.bitmap = bitmap
        self.source = source
        self.originalSize = originalSize
        self.format = format
        self.warnings = warnings
        self.fetchURL = nil
        self.downloadedBytes = 0
        self.isStale = false
        self.isPreview = false
        self.placeholder = nil
    }
}
