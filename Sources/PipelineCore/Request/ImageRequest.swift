#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// How a picture is fitted into the requested pixel size.
public enum ContentMode: String, Hashable, Sendable {
    /// The whole picture, scaled to fit inside the target; one side may be shorter.
    case fit
    /// The target filled exactly; the picture is scaled to cover it and cropped, keeping the
    /// part ``ImageRequest/cropAnchor`` says (the centre by default).
    case fill
}

/// Which pixel size a request asks for.
public enum TargetSize: Hashable, Sendable {
    /// The picture at its own (upright) size.
    case original
    /// The picture scaled to this size according to the request's ``ContentMode``.
    case pixels(PixelSize)

    /// `.pixels` for a size in points on a screen of `scale` pixels per point, rounded up to
    /// whole pixels (``PixelSize/init(_:scale:)``): `.points(PointSize(width: 160, height: 160),
    /// scale: 2)` is `.pixels(320×320)`. There is no points case: a target is always pixels, so
    /// the caches cannot tell the two spellings apart.
    public static func points(_ size: PointSize, scale: Double = 1) -> TargetSize {
        .pixels(PixelSize(size, scale: scale))
    }
}

/// How urgently a picture is wanted. Visible work starts before prefetches.
public enum ImagePriority: Int, Comparable, Hashable, Sendable {
    /// Speculative work for pictures that may soon be shown.
    case prefetch = 0
    /// A picture that is on screen now (or its equivalent on a server: a reply is waiting).
    case visible = 1

    /// Orders `prefetch` below `visible`.
    public static func < (lhs: ImagePriority, rhs: ImagePriority) -> Bool { lhs.rawValue < rhs.rawValue }
}

/// Which caches a request may read and whether it may load.
public enum CachePolicy: Hashable, Sendable {
    /// Memory cache, then disk cache, then the loader. The default.
    case useCaches
    /// Skip the memory and disk caches for reading; load again and store the result.
    case reloadIgnoringCaches
    /// Answer from the memory or disk cache only; never start a load. A miss throws
    /// ``ImagePipelineError/notCached``.
    case returnCacheDataDontLoad
}

/// What the pipeline does with a stale disk-cache entry.
public enum RevalidationPolicy: Hashable, Sendable {
    /// Serve the stale copy at once and revalidate in the background. The default.
    case staleWhileRevalidate
    /// Revalidate first and answer with the result (the stale copy if revalidation fails).
    case revalidateBeforeAnswering
}

/// Options that change the decoded pixels, and so take part in the ``ImageKey``.
public struct ProcessingOptions: Hashable, Sendable {
    /// Rotate and flip by the file's EXIF orientation so the result is upright. Default `true`.
    public var appliesOrientation: Bool
    /// What the decode fails on (``DecodingStrictness``, libvips's `fail_on`). Default
    /// ``DecodingStrictness/lenient``: a truncated JPEG then comes back with its missing rows
    /// grey and the truncation in ``ImageResponse/issues`` (and is not cached). The request's
    /// initialisers take this choice as `decoding:`, which says when to make it.
    public var decodingStrictness: DecodingStrictness
    /// Whether ``decodingStrictness`` is ``DecodingStrictness/strict``; setting `false` makes it
    /// ``DecodingStrictness/lenient``.
    public var strictDecoding: Bool {
        get { decodingStrictness == .strict }
        set { decodingStrictness = newValue ? .strict : .lenient }
    }
    /// Allow scaling a picture above its own size to reach the target. Default `false`,
    /// as in Nuke: a small picture comes back at its own size (cropped to the aspect in `.fill`).
    public var allowsUpscaling: Bool
    /// Convert pictures with an embedded colour profile to sRGB (codecs built on
    /// `ColorManagement`). Default `true`; `false` keeps the stored values
    /// (``DecodeOptions/convertsToSRGB``).
    public var convertsToSRGB: Bool
    /// The filter that resamples to the target after the decoder's shrink-on-load. Default
    /// ``ResamplingFilter/default``.
    public var resamplingFilter: ResamplingFilter
    /// The alpha representation of the response's bitmap. Default
    /// ``PixelFormat/rgba8Premultiplied``, for display. ``PixelFormat/rgba8Straight`` is for
    /// writing files: at full size the decoder's stored values come back exactly; resampled
    /// and processed pictures are computed premultiplied and made straight once at the end
    /// (``DecodeOptions/pixelFormat``). Part of the key, so the memory cache never answers one
    /// representation with the other.
    public var pixelFormat: PixelFormat
    /// Cut away a uniform border before resizing (``Trim``). Default `nil`: the whole picture.
    public var trim: Trim?
    /// Sharpen pictures the resize reduced by a large factor, before the request's processors
    /// (``ReductionSharpening``). Default `nil`: never.
    public var sharpening: ReductionSharpening?
    /// A rotation in 90° steps and mirror flips applied after the file's orientation, as one of
    /// the eight orientations: ``ImageOrientation/right`` turns 90° clockwise,
    /// ``ImageOrientation/upMirrored`` mirrors left to right, ``ImageOrientation/downMirrored``
    /// top to bottom; ``ImageOrientation/init(quarterTurnsClockwise:flop:flip:)`` builds any
    /// other. Default ``ImageOrientation/up``: none.
    ///
    /// It is folded into the decoder's orientation step (``DecodeOptions/transform``): the
    /// picture is turned once, by the file's orientation followed by this one, so a rotated
    /// thumbnail costs what an EXIF-rotated one does; the target size, a fill's crop and its
    /// anchor are then computed on the turned picture. With ``appliesOrientation`` `false` the
    /// file's orientation counts as ``ImageOrientation/up`` and this turns the stored pixels.
    public var transform: ImageOrientation

    /// Creates options; the defaults suit almost every caller.
    public init(appliesOrientation: Bool = true, strictDecoding: Bool = false, allowsUpscaling: Bool = false,
                convertsToSRGB: Bool = true, resamplingFilter: ResamplingFilter = .default,
                pixelFormat: PixelFormat = .rgba8Premultiplied, trim: Trim? = nil, sharpening: ReductionSharpening? = nil,
                transform: ImageOrientation = .up) {
        self.appliesOrientation = appliesOrientation
        self.transform = transform
        self.decodingStrictness = strictDecoding ? .strict : .lenient
        self.allowsUpscaling = allowsUpscaling
        self.convertsToSRGB = convertsToSRGB
        self.resamplingFilter = resamplingFilter
        self.pixelFormat = pixelFormat
        self.trim = trim
        self.sharpening = sharpening
    }
}

/// A request for one picture: where it is, how big it will be shown and how to get it.
public struct ImageRequest: Hashable, Sendable {
    /// The picture's URL as the app knows it (before the URL builder picks a fetch URL).
    public var url: URL { didSet { resolutionMemo.reset() } }
    /// The pixel size wanted. Default ``TargetSize/original``.
    public var targetSize: TargetSize { didSet { resolutionMemo.reset() } }
    /// Fit or fill. Default ``ContentMode/fit``.
    public var contentMode: ContentMode { didSet { resolutionMemo.reset() } }
    /// Which part a ``ContentMode/fill`` keeps: the centre, an edge, a focal point, or a smart
    /// strategy's choice. Part of the key for fills; ignored for fits. Default
    /// ``CropAnchor/center``.
    public var cropAnchor: CropAnchor { didSet { resolutionMemo.reset() } }
    /// Visible or prefetch. Default ``ImagePriority/visible``.
    public var priority: ImagePriority { didSet { resolutionMemo.reset() } }
    /// Which caches to use. Default ``CachePolicy/useCaches``.
    public var cachePolicy: CachePolicy { didSet { resolutionMemo.reset() } }
    /// What to do with a stale disk entry. Default ``RevalidationPolicy/staleWhileRevalidate``.
    public var revalidation: RevalidationPolicy { didSet { resolutionMemo.reset() } }
    /// Options that change the pixels (and the memory key).
    public var processing: ProcessingOptions { didSet { resolutionMemo.reset() } }
    /// Extra request headers for loaders that speak HTTP. Not part of any cache key.
    public var headers: [String: String] { didSet { resolutionMemo.reset() } }
    /// Steps applied in order after decoding and resampling, on the decode pool (a round
    /// avatar, a blur): the built-ins and custom ones side by side, `[Sepia(), .circle]`. Their
    /// identifiers take part in the memory key. Default none.
    ///
    /// Reads back the processors as given (`request.processors.first as? Sepia`).
    public var processors: [any ImageProcessing] {
        get { processorList.map(\.base) }
        set { processorList = newValue.map(ImageProcessor.init) }
    }
    /// ``processors`` as the key holds them: wrapped, so that the request's synthesised
    /// `Hashable` compares and hashes them by identifier.
    var processorList: [ImageProcessor] { didSet { resolutionMemo.reset() } }
    /// Overrides ``ImagePipeline/Configuration/diskCachePolicy`` for this request when set.
    /// Not part of any key. Default `nil`.
    public var diskCachePolicy: DiskCachePolicy? { didSet { resolutionMemo.reset() } }
    /// The picture's identity in the caches instead of its URL, for URLs that change while the
    /// picture does not (a signed URL with a rotating `?token=`, an asset id behind several
    /// CDN hosts). When set, the memory key, the joining of downloads in flight, the disk-cache
    /// entry and the undecodable-bytes memory use it (with the URL builder's variant, such as
    /// the width bucket, kept apart); the download still uses `url`. Overrides
    /// ``ImagePipeline/Configuration/cacheKey``. Default `nil`: the fetch URL is the identity.
    public var cacheKey: String? { didSet { resolutionMemo.reset() } }
    /// Overrides ``ImagePipeline/Configuration/freshnessPolicy`` for the bytes this request
    /// downloads or revalidates when set. Not part of any key. Default `nil`.
    public var freshnessPolicy: FreshnessPolicy? { didSet { resolutionMemo.reset() } }
    /// What a pipeline resolved this value to (`ResolutionMemo`), shared by its copies; every
    /// stored property above resets it when set, so a changed value resolves anew.
    var resolutionMemo = ResolutionMemo()

    /// Creates a request for `url` at `targetSize`.
    ///
    /// `decoding` says whether a damaged file fails or comes back with what could be decoded;
    /// the stricter of it and `processing`'s (``ProcessingOptions/decodingStrictness``) applies. Default ``DecodingStrictness/lenient``, for display; a server that writes what it
    /// decodes to files or caches should pass ``DecodingStrictness/strict``.
    public init(
        url: URL,
        targetSize: TargetSize = .original,
        contentMode: ContentMode = .fit,
        cropAnchor: CropAnchor = .center,
        priority: ImagePriority = .visible,
        cachePolicy: CachePolicy = .useCaches,
        revalidation: RevalidationPolicy = .staleWhileRevalidate,
        processing: ProcessingOptions = ProcessingOptions(),
        headers: [String: String] = [:],
        decoding: DecodingStrictness = .lenient,
        processors: [any ImageProcessing] = [],
        freshnessPolicy: FreshnessPolicy? = nil
    ) {
        self.url = url
        self.targetSize = targetSize
        self.contentMode = contentMode
        self.cropAnchor = cropAnchor
        self.priority = priority
        self.cachePolicy = cachePolicy
        self.revalidation = revalidation
        self.processing = processing
        if decoding > self.processing.decodingStrictness { self.processing.decodingStrictness = decoding }
        self.headers = headers
        self.processorList = processors.map(ImageProcessor.init)
        self.freshnessPolicy = freshnessPolicy
    }

    /// Creates a request for `url` at `width` × `height` pixels.
    ///
    /// `decoding`: ``DecodingStrictness/lenient`` (the default) shows what a damaged file holds;
    /// ``DecodingStrictness/strict`` fails it (for a server that stores what it decodes).
    public init(url: URL, width: Int, height: Int, contentMode: ContentMode = .fit,
                priority: ImagePriority = .visible, decoding: DecodingStrictness = .lenient,
                processors: [any ImageProcessing] = []) {
        self.init(url: url, targetSize: .pixels(PixelSize(width: width, height: height)),
                  contentMode: contentMode, priority: priority, decoding: decoding, processors: processors)
    }

    /// Creates a request for `url` at a view's size in points on a screen of `scale` pixels per
    /// point: 160 × 160 pt at `scale` 2 asks for 320 × 320 pixels. The size is resolved to
    /// pixels here (``PixelSize/init(_:scale:)``, rounding up), so the request and its key are
    /// the same as the pixel request's: `ImageRequest(url: u, size: PointSize(width: 160,
    /// height: 160), scale: 2)` and `ImageRequest(url: u, width: 320, height: 320)` share one
    /// cache entry.
    ///
    /// `size` is the view's size in points, `scale` the screen's pixels per point (1, 2 or 3;
    /// default 1); `decoding` as in ``init(url:width:height:contentMode:priority:decoding:processors:)``.
    public init(url: URL, size: PointSize, scale: Double = 1, contentMode: ContentMode = .fit,
                priority: ImagePriority = .visible, decoding: DecodingStrictness = .lenient,
                processors: [any ImageProcessing] = []) {
        self.init(url: url, targetSize: .points(size, scale: scale),
                  contentMode: contentMode, priority: priority, decoding: decoding, processors: processors)
    }
}
