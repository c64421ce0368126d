#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// What a decoder learns from a picture's header without decoding any pixels.
public struct ImageInfo: Hashable, Sendable {
    /// The container format.
    public var format: ImageFormat
    /// The stored size in pixels, before orientation is applied.
    public var size: PixelSize
    /// The EXIF (or container) orientation. Default ``ImageOrientation/up``.
    public var orientation: ImageOrientation
    /// Whether the picture may have transparent pixels.
    public var hasAlpha: Bool
    /// How many frames the file holds (1 for a still picture). Decoders return the first.
    public var frameCount: Int
    /// Progressive JPEG or interlaced (Adam7) PNG.
    public var isProgressive: Bool
    /// Colour components as stored (1 gray, 3 colour, 4 CMYK or colour with alpha), if known.
    public var componentCount: Int?
    /// Bits per sample as stored, if known.
    public var bitDepth: Int?
    /// The embedded colour profile (ICC), if the file has one. Default `nil`: none, sRGB assumed.
    public var colorProfile: ColorProfileInfo?
    /// Whether the picture is drawn rather than stored (a vector format such as SVG): ``size``
    /// is its natural size, and the decoder renders any ``DecodeOptions/targetSize`` sharp,
    /// larger than ``size`` too. Default `false`.
    ///
    /// For such a picture the pipeline plans the render at the requested size, upscaling
    /// included whatever ``ProcessingOptions/allowsUpscaling`` says (there is no full-size
    /// raster to enlarge), and checks the pixel limit against the size it renders, not the
    /// natural one: a 10⁸ × 10⁸ canvas fails at its natural size and renders fitted in 64 × 64.
    public var isVector = false

    /// Creates an info value.
    public init(format: ImageFormat, size: PixelSize, orientation: ImageOrientation = .up, hasAlpha: Bool = false,
                frameCount: Int = 1, isProgressive: Bool = false, componentCount: Int? = nil, bitDepth: Int? = nil) {
        self.format = format
        self.size = size
        self.orientation = orientation
        self.hasAlpha = hasAlpha
        self.frameCount = frameCount
        self.isProgressive = isProgressive
        self.componentCount = componentCount
        self.bitDepth = bitDepth
    }

    /// The size once orientation is applied.
    public var uprightSize: PixelSize { orientation.uprightSize(of: size) }
}

/// What a picture's embedded colour profile says about itself. Filled in by the codec modules
/// (which read the profile with lcms2 through `ColorManagement`); the core only carries it.
public struct ColorProfileInfo: Hashable, Sendable {
    /// The profile's description tag (`desc`), e.g. "Adobe RGB (1998)", if it has one.
    public var description: String?
    /// The profile's data colour space as its ICC signature reads, e.g. `RGB`, `GRAY`, `CMYK`.
    public var colorSpace: String
    /// The size of the ICC data in bytes.
    public var byteCount: Int
    /// Why the profile cannot be applied (unreadable, or not an RGB profile), or `nil` when it can.
    public var problem: String?

    /// Creates a profile description.
    public init(description: String?, colorSpace: String, byteCount: Int, problem: String? = nil) {
        self.description = description
        self.colorSpace = colorSpace
        self.byteCount = byteCount
        self.problem = problem
    }
}

/// How a decoder should decode.
public struct DecodeOptions: Hashable, Sendable {
    /// The upright size the whole picture will be scaled to, or `nil` for full size.
    ///
    /// A decoder returns a bitmap at least this large in both dimensions (it may shrink on the
    /// way, e.g. JPEG DCT scaling, and may return exactly this size); the pipeline's resampler
    /// finishes to the exact size. It never has to allocate the full-size bitmap to do so.
    public var targetSize: PixelSize?
    /// Turn the result upright by the file's orientation. Default `true`.
    public var appliesOrientation: Bool
    /// A turn applied after the file's orientation (``ProcessingOptions/transform``), or, with
    /// ``appliesOrientation`` `false`, to the stored pixels. Default ``ImageOrientation/up``.
    ///
    /// Decoders never see it: ``ImageDecodingSession/decodeChecked(_:)`` asks a decoder for the
    /// stored pixels when it is not `.up` and turns them once by ``orientation(for:)``, where
    /// the decoder would have turned them by the file's orientation alone. ``targetSize`` is
    /// then the size of the turned picture.
    public var transform: ImageOrientation = .up
    /// Whether the pipeline cuts a part out of the picture once it is scaled to ``targetSize``
    /// (a fill whose box has another shape than the picture). Default `false`. A decoder that
    /// resamples as it reads may still do so (the crop is then cut from its result, as for PNG
    /// and HEIF); one that can also return the full-size picture may keep to that when this is
    /// set, so the crop is resampled straight from the source pixels (JPEG XL does: its
    /// resampling as it leaves libjxl is for fits).
    public var cutsAfterScaling = false
    /// What the decode fails on (libvips's `fail_on`): ``ImageDecodingSession/decodeChecked(_:)``
    /// throws for the worst ``DecodedImage/issues`` it refuses. Default
    /// ``DecodingStrictness/lenient``.
    public var strictness: DecodingStrictness
    /// Whether ``strictness`` is ``DecodingStrictness/strict`` (a codec may then ask its library
    /// to stop at the first warning); setting `false` makes it ``DecodingStrictness/lenient``.
    public var strict: Bool {
        get { strictness == .strict }
        set { strictness = newValue ? .strict : .lenient }
    }
    /// What the source may cost (``Limits``): its pixel count, an animation's frames and
    /// pixels, a codec's work and its colour profile. Default ``Limits/default``.
    public var limits: Limits
    /// ``Limits/maxPixelCount`` of ``limits``.
    public var maxPixelCount: Int {
        get { limits.maxPixelCount }
        set { limits.maxPixelCount = newValue }
    }
    /// ``Limits/maxAnimationFrameCount`` of ``limits``: for ``AnimatedImageDecoding``, failing
    /// with ``ImagePipelineError/overLimit(_:limit:actual:)`` for ``Limit/animationFrames``.
    public var maxAnimationFrameCount: Int {
        get { limits.maxAnimationFrameCount }
        set { limits.maxAnimationFrameCount = newValue }
    }
    /// ``Limits/maxAnimationPixelCount`` of ``limits``: checked with ``maxAnimationFrameCount``,
    /// failing with ``Limit/animationPixels``.
    public var maxAnimationPixelCount: Int {
        get { limits.maxAnimationPixelCount }
        set { limits.maxAnimationPixelCount = newValue }
    }
    /// Convert pixels stored with an embedded colour profile to sRGB. Default `true`. With
    /// `false` the stored values are returned unchanged; ``ImageInfo/colorProfile`` still
    /// reports the profile.
    public var convertsToSRGB: Bool
    /// The filter a decoder that resamples as it reads (PNG, GIF, HEIF, some WebP) uses to reach
    /// ``targetSize``; shrink-on-load (JPEG DCT scaling, libwebp's scaling) comes first.
    /// Default ``ResamplingFilter/default``.
    public var resamplingFilter: ResamplingFilter
    /// The alpha representation of the returned bitmap. Default
    /// ``PixelFormat/rgba8Premultiplied`` (for display). With ``PixelFormat/rgba8Straight`` a
    /// full-size decode keeps the values the file stores exactly (libpng, libwebp, libheif and
    /// giflib all give straight alpha); a smaller target is still resampled on premultiplied
    /// pixels (no fringes) and the result made straight once. Opaque pictures are the same
    /// bytes in both. A decoder that ignores this option returns premultiplied pixels; the
    /// pipeline converts them.
    public var pixelFormat: PixelFormat

    /// The default ``maxAnimationFrameCount`` (``Limits/maxAnimationFrameCount``, where the reason is).
    public static var defaultMaxAnimationFrameCount: Int { Limits.default.maxAnimationFrameCount }

    /// The default ``maxAnimationPixelCount`` (``Limits/maxAnimationPixelCount``, where the reason is).
    public static var defaultMaxAnimationPixelCount: Int { Limits.default.maxAnimationPixelCount }

    /// Creates options with `limits`, of which `maxPixelCount`, `maxAnimationFrameCount` and
    /// `maxAnimationPixelCount`, when given, replace theirs.
    /// `strict` `true` is ``DecodingStrictness/strict``; `strictness`, when given, replaces it.
    public init(targetSize: PixelSize? = nil, appliesOrientation: Bool = true, strict: Bool = false,
                strictness: DecodingStrictness? = nil,
                limits: Limits = .default, maxPixelCount: Int? = nil, maxAnimationFrameCount: Int? = nil,
                maxAnimationPixelCount: Int? = nil, convertsToSRGB: Bool = true,
                resamplingFilter: ResamplingFilter = .default, pixelFormat: PixelFormat = .rgba8Premultiplied) {
        self.targetSize = targetSize
        self.appliesOrientation = appliesOrientation
        self.strictness = strictness ?? (strict ? .strict : .lenient)
        self.limits = limits
        if let maxPixelCount { self.limits.maxPixelCount = maxPixelCount }
        if let maxAnimationFrameCount { self.limits.maxAnimationFrameCount = maxAnimationFrameCount }
        if let maxAnimationPixelCount { self.limits.maxAnimationPixelCount = maxAnimationPixelCount }
        self.convertsToSRGB = convertsToSRGB
        self.resamplingFilter = resamplingFilter
        self.pixelFormat = pixelFormat
    }

    /// The one turn that makes the result from `info`'s stored pixels: the file's orientation
    /// (when ``appliesOrientation``), then ``transform``.
    public func orientation(for info: ImageInfo) -> ImageOrientation {
        (appliesOrientation ? info.orientation : .up).followed(by: transform)
    }

    /// The size of the result for a picture of `info` at full size: its stored size turned by
    /// ``orientation(for:)``.
    public func orientedSize(of info: ImageInfo) -> PixelSize {
        orientation(for: info).uprightSize(of: info.size)
    }

    /// Throws ``ImagePipelineError/tooManyPixels(_:limit:)`` when `info` is over the limit,
    /// and ``ImagePipelineError/corruptData(format:message:)`` for an empty size.
    public func checkPixelLimit(_ info: ImageInfo) throws {
        guard info.size.isValid else {
            throw ImagePipelineError.corruptData(format: info.format, message: "the header gives a size of \(info.size)")
        }
        if info.size.pixelCount > maxPixelCount {
            throw ImagePipelineError.tooManyPixels(info.size, limit: maxPixelCount)
        }
    }

    /// The most frames an animation on `canvas` may have under both animation limits
    /// (``maxAnimationFrameCount``, and ``maxAnimationPixelCount`` over the canvas): a walk
    /// that counts frames may stop at one more than this, the count is over a limit then.
    public func animationFramesAllowed(on canvas: PixelSize) -> Int {
        let byPixels = canvas.pixelCount > 0 ? maxAnimationPixelCount / canvas.pixelCount : Int.max
        return max(0, min(maxAnimationFrameCount, byPixels))
    }

    /// The most bytes the frame decoder of an animation of more than one frame may hold at once
    /// (``AnimatedImageDecoding/estimatedAnimationMemory(_:)``: its canvases, the copy of an
    /// earlier one it keeps, the frame it hands out): what the largest still picture's RGBA8
    /// bitmap takes, ``maxPixelCount`` × 4 bytes (400,000,000 by default). Frames are composited
    /// at canvas size whatever size they are asked at, so a canvas under the still limit can
    /// still cost several times a still: a 136-byte WebP declaring a 10000×10000 canvas held
    /// four 400 MB canvases (1.21 GB) for two 1×1 frames. Under it: a WebP or GIF canvas of
    /// 25 or 33 megapixels, a JPEG XL one of 10 (libjxl's float buffers counted).
    public var maxAnimationCanvasBytes: Int {
        let (bytes, overflow) = maxPixelCount.multipliedReportingOverflow(by: 4)
        return overflow ? .max : bytes
    }

    /// Throws ``ImagePipelineError/overLimit(_:limit:actual:)`` (``Limit/animationCanvases``)
    /// when an animation of `info` whose frame decoder holds `bytes` at once
    /// (``AnimatedImageDecoding/estimatedAnimationMemory(_:)``) is over
    /// ``maxAnimationCanvasBytes``: checked before a canvas is allocated. A file of one frame
    /// is a still picture, held to ``maxPixelCount`` only.
    public func checkAnimationCanvases(_ info: AnimationInfo, bytes: Int) throws {
        guard info.frameCount > 1, bytes > maxAnimationCanvasBytes else { return }
        throw ImagePipelineError.overLimit(.animationCanvases, limit: maxAnimationCanvasBytes, actual: bytes)
    }

    /// Throws ``ImagePipelineError/overLimit(_:limit:actual:)`` when an animation of `frameCount`
    /// frames on `canvas` is over ``maxAnimationFrameCount`` (``Limit/animationFrames``)
    /// or ``maxAnimationPixelCount`` (``Limit/animationPixels``), the frame count first.
    /// With `exact` `false`, `frameCount` is where a walk stopped counting (at most one more
    /// than ``animationFramesAllowed(on:)``), so the error's `actual` is `nil`: the real count
    /// is not known.
    public func checkAnimationLimits(canvas: PixelSize, frameCount: Int, exact: Bool = true) throws {
        if frameCount > maxAnimationFrameCount {
            throw ImagePipelineError.overLimit(.animationFrames, limit: maxAnimationFrameCount, actual: exact ? frameCount : nil)
        }
        let (pixels, overflow) = canvas.pixelCount.multipliedReportingOverflow(by: frameCount)
        if overflow || pixels > maxAnimationPixelCount {
            throw ImagePipelineError.overLimit(.animationPixels, limit: maxAnimationPixelCount,
                                               actual: exact && !overflow ? pixels : nil)
        }
    }
}

/// A decoded picture and what the decoder learned on the way.
public struct DecodedImage: Sendable {
    /// The upright (unless orientation was turned off) RGBA8 pixels, premultiplied or straight
    /// as ``DecodeOptions/pixelFormat`` asked (for decoders that honour it).
    public var bitmap: Bitmap
    /// The header information, with the stored size.
    public var info: ImageInfo
    /// What the codec saw in data it still decoded (``DecodeIssue``: truncated, an error it
    /// recovered from, a warning), in the order it saw them. Empty for a clean file.
    public var issues: [DecodeIssue]
    /// The messages of ``issues``.
    public var warnings: [String] { issues.map(\.message) }
    /// The ICC profile the pixels' values are in, when the decoder left them as stored
    /// (``DecodeOptions/convertsToSRGB`` `false`) and the file's profile describes them (RGB,
    /// readable): what an encoder embeds to keep the colours (``EncodeOptions/iccProfile``).
    /// `nil` when the values are sRGB. Default `nil`.
    public var iccProfile: Data?

    /// Creates a decoded picture; each of `warnings` is a ``DecodeIssue/Severity/warning``.
    public init(bitmap: Bitmap, info: ImageInfo, warnings: [String] = [], iccProfile: Data? = nil) {
        self.init(bitmap: bitmap, info: info, issues: warnings.map(DecodeIssue.warning), iccProfile: iccProfile)
    }

    /// Creates a decoded picture with what the codec saw.
    public init(bitmap: Bitmap, info: ImageInfo, issues: [DecodeIssue], iccProfile: Data? = nil) {
        self.bitmap = bitmap
        self.info = info
        self.issues = issues
        self.iccProfile = iccProfile
    }
}

/// A codec's decoding side. Registered in a ``DecoderRegistry``, which chooses it by the magic
/// bytes in ``signatures``.
///
/// A decoder opens one ``ImageDecodingSession`` per picture: the header is parsed once, the
/// caller reads ``ImageDecodingSession/info`` (size, orientation) and then asks for pixels at
/// the size it needs. The pixel limit, the target clamp and strictness are applied in one
/// place, ``ImageDecodingSession/decodeChecked(_:)``, not in every codec.
///
/// Implementations are called on the pipeline's decode pool (never on the pipeline actor) and
/// may block. For bad input they throw (``ImagePipelineError/corruptData(format:message:)`` and
/// ``ImagePipelineError/unsupported(format:message:)``, or an error type of their own; the
/// pipeline wraps it in ``ImagePipelineError/decodingFailed(_:underlying:)`` with the URL),
/// never crash.
public protocol ImageDecoding: Sendable {
    /// The formats this decoder handles, as the leading bytes that identify them.
    var signatures: [ImageSignature] { get }

    /// Whether this decoder takes `data`. Default: one of ``signatures`` matches. Override to
    /// decline data of your format you cannot handle (an older decoder then gets a chance).
    func canDecode(_ data: Data) -> Bool

    /// Opens a session over `data` (parsing the header once) and runs `body` with it. The
    /// session is valid only inside `body`; every resource it holds is freed when this returns
    /// or throws.
    func withSession<R>(for data: Data, _ body: (any ImageDecodingSession) throws -> R) throws -> R
}

/// One picture opened by a decoder: the header already parsed.
public protocol ImageDecodingSession {
    /// What the header says: format, stored size, orientation.
    var info: ImageInfo { get }

    /// Decodes the first frame, at least as large as `options.targetSize` (which is never larger
    /// than the upright size). Called at most once per session, after the caller checked the
    /// pixel limit: prefer ``decodeChecked(_:)``, which does.
    func decode(_ options: DecodeOptions) throws -> DecodedImage

    /// An estimate of the most memory, in bytes, that ``decode(_:)`` with `options` holds at
    /// once: the bitmap it returns plus the codec's own buffers (a progressive JPEG's
    /// coefficients, a lossless WebP's full ARGB picture, libheif's full decode). The pipeline
    /// admits decodes while the sum of their estimates fits its budget
    /// (``ImagePipeline/Configuration/decodeMemoryBudget``), so an estimate should be close to
    /// the real peak; a low one lets too much run at once, a high one only queues more.
    ///
    /// Default: the full stored size and the target size as RGBA8, for a decoder that decodes
    /// whole and then scales down. Codecs that decode straight to a smaller size override it.
    func estimatedPeakMemory(_ options: DecodeOptions) -> Int
}

extension ImageDecoding {
    /// The formats of ``signatures``.
    public var formats: Set<ImageFormat> { Set(signatures.map(\.format)) }

    /// Whether one of ``signatures`` matches the leading bytes of `data`.
    public func canDecode(_ data: Data) -> Bool {
        data.withUnsafeBytes { raw in
            let head = UnsafeRawBufferPointer(rebasing: raw.prefix(ImageFormat.sniffLength))
            return signatures.contains { $0.matches(head) }
        }
    }

    /// Reads the header alone: format, stored size, orientation. No pixel buffer is allocated.
    public func readInfo(_ data: Data) throws -> ImageInfo {
        try withSession(for: data) { $0.info }
    }

    /// Opens a session and decodes with ``ImageDecodingSession/decodeChecked(_:)``.
    public func decode(_ data: Data, options: DecodeOptions) throws -> DecodedImage {
        try withSession(for: data) { try $0.decodeChecked(options) }
    }
}

extension ImageDecodingSession {
    /// The full stored size plus the target size, as RGBA8 (see the requirement).
    public func estimatedPeakMemory(_ options: DecodeOptions) -> Int {
        info.size.pixelCount * 4 + (options.targetSize?.pixelCount ?? 0) * 4
    }

    /// Decodes with the checks every codec shares, in one place: refuses a picture over
    /// `options.maxPixelCount` (or with an empty size) before any pixel buffer exists, clamps
    /// the target to the upright size (`nil` when it asks for full size, so no codec is asked
    /// to upscale; a vector picture, ``ImageInfo/isVector``, is instead checked against the size
    /// it renders at and never clamped), and throws for the worst of the decoder's issues that
    /// `options.strictness` refuses: ``ImagePipelineError/truncatedData(format:message:)`` for
    /// data that ends early, else ``ImagePipelineError/corruptData(format:message:)``.
    public func decodeChecked(_ options: DecodeOptions) throws -> DecodedImage {
        let info = self.info
        var options = options
        if info.isVector {
            // Drawn at the target size: that is what the limit bounds, and nothing clamps it.
            let rendered = options.targetSize ?? info.size
            try options.checkPixelLimit(ImageInfo(format: info.format, size: rendered))
            options.targetSize = rendered == info.size ? nil : rendered
        } else {
            try options.checkPixelLimit(info)
        }
        if !info.isVector, let target = options.targetSize {
            let upright = options.orientedSize(of: info)
            let clamped = PixelSize(width: min(target.width, upright.width), height: min(target.height, upright.height))
            options.targetSize = !clamped.isValid || clamped == upright ? nil : clamped
        }
        var decoded: DecodedImage
        if options.transform == .up {
            decoded = try decode(options)
        } else {
            // The stored pixels, turned once by the file's orientation and the transform together
            // where the decoder would have turned them by the file's alone.
            let orientation = options.orientation(for: info)
            var stored = options
            stored.appliesOrientation = false
            stored.transform = .up
            stored.targetSize = options.targetSize.map { orientation.swapsDimensions ? $0.transposed : $0 }
            decoded = try decode(stored)
            decoded.bitmap = decoded.bitmap.oriented(orientation)
        }
        if let refused = decoded.issues.filter(options.strictness.refuses).max(by: { $0.severity < $1.severity }) {
            // The worst refused issue names the failure: a truncation is told apart from damage.
            throw refused.severity == .truncated
                ? ImagePipelineError.truncatedData(format: info.format, message: refused.message)
                : ImagePipelineError.corruptData(format: info.format, message: refused.message)
        }
        return decoded
    }
}
