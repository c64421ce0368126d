#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// A processor as the memory key holds it (``ImageKey/processors``): any ``ImageProcessing``,
/// compared and hashed by its ``ImageProcessing/identifier``. A request takes its processors as
/// `[any ImageProcessing]` and wraps them here, so a custom processor needs no wrapper at the
/// call site (`processors: [Sepia(), .circle]`). The built-ins are static members of
/// ``ImageProcessing`` where `Self` is this type (`.circle`, `.grayscale`,
/// `.gaussianBlur(radius:)`, `.sharpen(sigma:)`, `.roundedCorners(radius:)`, `.crop(_:)`, `.process(id:_:)`), so
/// they read the same in a request's list and as `ImageProcessor.circle`.
public struct ImageProcessor: Hashable, Sendable, ImageProcessing {
    /// The wrapped step.
    public let base: any ImageProcessing

    /// Wraps `processor` (an ``ImageProcessor`` is not wrapped twice).
    public init(_ processor: any ImageProcessing) {
        base = (processor as? ImageProcessor)?.base ?? processor
    }

    /// The wrapped step's identifier.
    public var identifier: String { base.identifier }

    /// Runs the wrapped step. One that works on premultiplied pixels gets a straight bitmap
    /// premultiplied and its result made straight again (the pipeline premultiplies once before
    /// a whole list instead); one that ``ImageProcessing/acceptsStraightAlpha`` gets it as is.
    public func process(_ bitmap: Bitmap) throws -> Bitmap {
        guard !bitmap.pixelFormat.isPremultiplied, !base.acceptsStraightAlpha else { return try base.process(bitmap) }
        return try base.process(bitmap.premultiplied()).straightened()
    }

    /// The wrapped step's choice.
    public var acceptsStraightAlpha: Bool { base.acceptsStraightAlpha }

    /// Equal when the identifiers are.
    public static func == (lhs: ImageProcessor, rhs: ImageProcessor) -> Bool { lhs.identifier == rhs.identifier }

    /// Hashes the identifier.
    public func hash(into hasher: inout Hasher) { hasher.combine(identifier) }
}

// The built-ins are declared where `Self == ImageProcessor` so that `.circle` also resolves
// where an `any ImageProcessing` is expected (a request's `[any ImageProcessing]` list, beside
// a custom `Sepia()`), not only where an `ImageProcessor` is.
extension ImageProcessing where Self == ImageProcessor {
    /// Crops to the centred square and keeps only the inscribed circle: transparent outside,
    /// an antialiased edge one pixel wide.
    public static var circle: ImageProcessor { ImageProcessor(CircleProcessor()) }

    /// Rounds the four corners with `radius` output pixels (antialiased; clamped to half the
    /// shorter side).
    public static func roundedCorners(radius: Double) -> ImageProcessor {
        ImageProcessor(RoundedCornersProcessor(radius: radius))
    }

    /// A Gaussian blur whose standard deviation is `radius` output pixels (as Pillow's
    /// `GaussianBlur(radius)`), separable, edges extended. `radius` ≤ 0 leaves the picture as is.
    public static func gaussianBlur(radius: Double) -> ImageProcessor {
        ImageProcessor(GaussianBlurProcessor(radius: radius))
    }

    /// Unsharp masking as libvips's `vips_sharpen` defines it (8.14): L* of CIELAB blurred with
    /// its integer Gaussian of standard deviation `sigma` (output pixels), and the difference
    /// L − blur(L) mapped to a change of L*: slope `m1` for differences within ±`x1` L* (flat
    /// areas), `m2` beyond (edges), the result clipped to at most `y2` L* brighter and `y3`
    /// darker. The defaults are libvips's, for screen output; for more or less sharpening,
    /// change `m2`. Colour (a*, b*) and alpha are kept; a pixel whose L does not change keeps
    /// its bytes. `sigma` in (0, 1000], the others in 0…1,000,000, else the processor throws
    /// ``ImageProcessingError/invalidParameter(_:)``.
    public static func sharpen(sigma: Double = 0.5, x1: Double = 2, y2: Double = 10, y3: Double = 20,
                               m1: Double = 0, m2: Double = 3) -> ImageProcessor {
        ImageProcessor(SharpenProcessor(sigma: sigma, x1: x1, y2: y2, y3: y3, m1: m1, m2: m2))
    }

    /// Grey by Rec. 709 luma (0.2126 R + 0.7152 G + 0.0722 B on the stored values), alpha kept.
    public static var grayscale: ImageProcessor { ImageProcessor(GrayscaleProcessor()) }

    /// Brightness, contrast, saturation, hue and gamma in one pass, in that order, each as its
    /// reference defines it (Pillow's `ImageEnhance`, ImageMagick's `-modulate` hue, libvips's
    /// `gamma`: see ``ColorAdjustment``). Alpha is kept; an adjustment out of range throws
    /// ``ImageProcessingError/invalidParameter(_:)``. The shorthands below are this with one
    /// component set, and have its identifier.
    public static func colorAdjustment(_ adjustment: ColorAdjustment) -> ImageProcessor {
        ImageProcessor(ColorAdjustmentProcessor(adjustment: adjustment))
    }

    /// Pillow's `ImageEnhance.Brightness(im).enhance(factor)`: colour × `factor` (1 unchanged,
    /// 0 black, 0…1000).
    public static func brightness(_ factor: Double) -> ImageProcessor { .colorAdjustment(ColorAdjustment(brightness: factor)) }

    /// `levels` added to R, G and B, clipped (−255…255): imgproxy's `brightness`.
    public static func brightness(offset levels: Int) -> ImageProcessor {
        .colorAdjustment(ColorAdjustment(brightnessOffset: levels))
    }

    /// Pillow's `ImageEnhance.Contrast(im).enhance(factor)`: a blend with the picture's mean grey
    /// (1 unchanged, 0 flat grey, 0…1000).
    public static func contrast(_ factor: Double) -> ImageProcessor { .colorAdjustment(ColorAdjustment(contrast: factor)) }

    /// Pillow's `ImageEnhance.Color(im).enhance(factor)`: a blend with each pixel's luma
    /// (1 unchanged, 0 grey, 0…1000).
    public static func saturation(_ factor: Double) -> ImageProcessor { .colorAdjustment(ColorAdjustment(saturation: factor)) }

    /// The HSL hue rotated by `degrees`, as ImageMagick's `-modulate 100,100,(100 + degrees / 1.8)`.
    public static func hue(degrees: Double) -> ImageProcessor { .colorAdjustment(ColorAdjustment(hue: degrees)) }

    /// libvips's `gamma`: `255 × (c / 255)^(1/exponent)` (1 unchanged, above 1 lighter, 0.001…1000).
    public static func gamma(_ exponent: Double) -> ImageProcessor { .colorAdjustment(ColorAdjustment(gamma: exponent)) }

    /// Keeps `rect` (output pixels, rounded to whole pixels, clipped to the picture).
    public static func crop(_ rect: PixelRect) -> ImageProcessor { ImageProcessor(CropProcessor(rect: rect)) }

    /// Composites `picture` over the result ("source over"): a watermark, a badge, a frame.
    ///
    /// - `gravity` places it (the corner by default; a smart anchor is the centre), and
    ///   `offset` moves it that many output pixels in from the edge it is anchored to (right
    ///   and down from the centre), as imgproxy's watermark offsets do. Parts outside the base
    ///   are cut off.
    /// - `opacity` (0…1, default 1) scales its alpha.
    /// - `relativeSize` fits it inside that fraction of the base's width and height (imgproxy's
    ///   watermark `scale`), enlarging or shrinking with the Lanczos resampler; `nil` (the
    ///   default) keeps its own size.
    ///
    /// `picture` may be straight (best: the exact stored colours, as
    /// ``ImagePipeline/overlay(_:gravity:offset:opacity:relativeSize:drawnWithin:)`` loads it) or
    /// premultiplied, and so may the base: the result is in the base's format. `id` names the
    /// picture in the cache keys; `nil` (the default) uses a SHA-256 of its pixels, so a new
    /// picture under the same name can never answer from a cached result of the old one.
    public static func overlay(_ picture: Bitmap, id: String? = nil, gravity: CropAnchor = .bottomRight,
                               offset: (x: Int, y: Int) = (0, 0), opacity: Double = 1,
                               relativeSize: Double? = nil) -> ImageProcessor {
        let name = id ?? "sha256:" + String(SHA256.hexDigest(picture.unpaddedBytes() + Array("\(picture.size)\(picture.pixelFormat)".utf8)).prefix(32))
        return ImageProcessor(OverlayProcessor(picture: picture, id: name, gravity: gravity, offset: offset,
                                               opacity: opacity, relativeSize: relativeSize))
    }

    /// Places the picture on a canvas of exactly `size` filled with `background` (letterbox,
    /// CSS's `object-fit: contain`, vips's `--size WxH` followed by `embed`): after a `.fit`
    /// into the same size, the result has that size whatever the picture's aspect ratio.
    /// `gravity` says where the picture sits (the centre by default; a smart anchor is the
    /// centre). A picture larger than `size` on a side is cropped there around the gravity.
    /// The picture's own pixels are copied unchanged, transparency included: add
    /// ``flattened(onto:)`` to fill that too.
    public static func padded(to size: PixelSize, background: RGBAColor = .clear,
                              gravity: CropAnchor = .center) -> ImageProcessor {
        ImageProcessor(PaddingProcessor(size: size, background: background, gravity: gravity))
    }

    /// Composites the picture over `background`, so transparent and translucent pixels take
    /// that colour (opaque when `background` is): for a page of known colour or a format
    /// without alpha (ImageMagick's `-background C -flatten`).
    public static func flattened(onto background: RGBAColor) -> ImageProcessor {
        ImageProcessor(FlattenProcessor(background: background))
    }

    /// A processor made of a closure (Nuke's `.process(id:_:)`), for a step too small to deserve
    /// a type: `.process(id: "sepia(0.8)") { bitmap in try sepia(bitmap, 0.8) }`.
    ///
    /// `id` is the step's ``ImageProcessing/identifier``, part of every cache key, and the only
    /// thing the caches know about the closure: two closures with one `id` are taken to give the
    /// same pixels, so a cached result of one answers for the other. Change `id` whenever what
    /// the closure does changes (put its parameters in it: `"sepia(0.8)"`, `"watermark-v2"`),
    /// or old results keep answering from the memory and disk caches.
    ///
    /// `body` gets premultiplied RGBA8 (as every processor does) and runs on the decode pool;
    /// throwing fails the request with ``ImagePipelineError/processingFailed(_:underlying:)``.
    public static func process(id: String, _ body: @escaping @Sendable (Bitmap) throws -> Bitmap) -> ImageProcessor {
        ImageProcessor(ClosureProcessor(identifier: id, body: body))
    }
}
