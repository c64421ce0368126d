#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Where a response's pixels came from, and what was done to make them: the label a grid's
/// debug overlay or a server's log shows (Coil's `DataSource`, Nuke's `cacheType`).
public enum ImageSource: String, Hashable, Sendable {
    /// The memory cache had this very picture: no loading, no decoding, no processing.
    case memory
    /// The memory cache had the picture before the request's processors; they ran on it now
    /// (no loading, no decoding).
    case processedFromMemory
    /// The disk cache, without asking the origin.
    case disk
    /// A processed rendition on disk (any ``DiskCachePolicy`` but `originals`): the small
    /// encoded result was decoded; the original was neither read nor decoded.
    case rendition
    /// The disk cache, after the origin confirmed it is current (HTTP 304).
    case revalidated
    /// A loader, over a network (``LoadOrigin/network``: LoaderHTTP's).
    case network
    /// A loader, without a network (``LoadOrigin/local``: a file, a `data:` URL).
    case local
    /// A loader that did not say where its bytes came from (``ResponseMetadata/origin`` `nil`:
    /// a custom loader that does not set it).
    case loader

    /// How a loader's ``ResponseMetadata/origin`` is reported.
    init(_ origin: LoadOrigin?) {
        switch origin {
        case .network: self = .network
        case .local: self = .local
        case nil: self = .loader
        }
    }
}

/// A decoded picture as the memory cache keeps it: its pixels and what describes them, apart
/// from what belongs to one call (Nuke's `ImageContainer`). ``ImageResponse`` wraps one with
/// where it came from this time.
public struct ImageContainer: Sendable {
    /// The pixels, exactly the planned output size, in the request's
    /// ``ProcessingOptions/pixelFormat`` (premultiplied unless straight was asked).
    public var bitmap: Bitmap
    /// The picture's own size, upright (unless orientation was turned off).
    public var originalSize: PixelSize
    /// The container format of the compressed bytes.
    public var format: ImageFormat
    /// What the codec saw in data it still decoded (``DecodeIssue``), and what the pipeline
    /// adds (a revalidation that did not decode, as a warning). A container whose issues
    /// include a truncation (``isComplete`` `false`) is never cached.
    public var issues: [DecodeIssue]
    /// The messages of ``issues``.
    public var warnings: [String] { issues.map(\.message) }
    /// `false` when the data ended before the picture did (a ``DecodeIssue/Severity/truncated``
    /// issue): part of the picture is filled in, and no cache keeps it.
    public var isComplete: Bool { !issues.includesTruncation }
    /// The picture's placeholder hash (``ThumbHash``), of the whole upright picture before any
    /// crop or processor, when the pipeline made one (``ImagePipeline/Configuration/makesPlaceholders``).
    public var placeholder: ThumbHash?
    /// The ICC profile the pixels are in when they were not converted to sRGB
    /// (``ProcessingOptions/convertsToSRGB`` `false`) and the file's profile describes them.
    public var iccProfile: Data?
    /// What a rendition made from this picture is tagged with (the original bytes' tag and
    /// info), when it may be made; `nil` for a rendition's own decode.
    var renditionOrigin: RenditionOrigin?

    /// Creates a container; each of `warnings` is a ``DecodeIssue/Severity/warning``.
    public init(bitmap: Bitmap, originalSize: PixelSize, format: ImageFormat, warnings: [String] = [],
                placeholder: ThumbHash? = nil, iccProfile: Data? = nil) {
        self.bitmap = bitmap
        self.originalSize = originalSize
        self.format = format
        self.issues = warnings.map(DecodeIssue.warning)
        self.placeholder = placeholder
        self.iccProfile = iccProfile
    }
}

/// A decoded picture at the requested size, and how it was obtained: the cached
/// ``ImageContainer`` and what belongs to this call (where it came from, the URL fetched, the
/// bytes downloaded, whether it is stale or a preview).
public struct ImageResponse: Sendable {
    /// The picture: what the memory cache keeps.
    public var container: ImageContainer
    /// Where it came from.
    public var source: ImageSource
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

    /// Creates a response.
    public init(container: ImageContainer, source: ImageSource, fetchURL: URL? = nil) {
        self.container = container
        self.source = source
        self.fetchURL = fetchURL
        self.downloadedBytes = 0
        self.isStale = false
        self.isPreview = false
    }

    /// Creates a response.
    public init(bitmap: Bitmap, source: ImageSource, originalSize: PixelSize, format: ImageFormat, warnings: [String] = []) {
        self.init(container: ImageContainer(bitmap: bitmap, originalSize: originalSize, format: format, warnings: warnings),
                  source: source)
    }

    /// The pixels (``ImageContainer/bitmap``).
    public var bitmap: Bitmap {
        get { container.bitmap }
        set { container.bitmap = newValue }
    }
    /// The picture's own size, upright (``ImageContainer/originalSize``).
    public var originalSize: PixelSize {
        get { container.originalSize }
        set { container.originalSize = newValue }
    }
    /// The container format of the compressed bytes (``ImageContainer/format``).
    public var format: ImageFormat {
        get { container.format }
        set { container.format = newValue }
    }
    /// What the codec saw in data it still decoded (``ImageContainer/issues``).
    public var issues: [DecodeIssue] {
        get { container.issues }
        set { container.issues = newValue }
    }
    /// The messages of ``issues`` (``ImageContainer/warnings``).
    public var warnings: [String] { container.warnings }
    /// Whether the data held the whole picture (``ImageContainer/isComplete``).
    public var isComplete: Bool { container.isComplete }
    /// The placeholder hash (``ImageContainer/placeholder``): what
    /// ``ImagePipeline/placeholder(for:)`` answers later from the disk entry. Store it beside
    /// the URL (a server's API, a database row) to paint a cell before anything loads.
    public var placeholder: ThumbHash? {
        get { container.placeholder }
        set { container.placeholder = newValue }
    }
    /// The ICC profile the pixels are in when they were not converted to sRGB
    /// (``ImageContainer/iccProfile``): pass it as ``EncodeOptions/iccProfile`` to write them
    /// with their colours. `nil` when the pixels are sRGB.
    public var iccProfile: Data? {
        get { container.iccProfile }
        set { container.iccProfile = newValue }
    }
    var renditionOrigin: RenditionOrigin? {
        get { container.renditionOrigin }
        set { container.renditionOrigin = newValue }
    }
}
