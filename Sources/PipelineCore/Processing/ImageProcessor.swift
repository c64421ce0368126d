import Foundation

/// A processor as the memory key holds it (``ImageKey/processors``): any ``ImageProcessing``,
/// compared and hashed by its ``ImageProcessing/identifier``. A request takes its processors as
/// `[any ImageProcessing]` and wraps them here, so a custom processor needs no wrapper at the
/// call site (`processors: [Sepia(), .circle]`). The built-ins are static members of
/// ``ImageProcessing`` where `Self` is this type (`.circle`, `.grayscale`,
/// `.gaussianBlur(radius:)`, `.roundedCorners(radius:)`, `.crop(_:)`, `.process(id:_:)`), so
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

    /// Runs the wrapped step, which works on premultiplied pixels: a straight bitmap is
    /// premultiplied first and the result made straight again (the pipeline premultiplies once
    /// before a whole list instead).
    public func process(_ bitmap: Bitmap) throws -> Bitmap {
        guard !bitmap.pixelFormat.isPremultiplied else { return try base.process(bitmap) }
        return try base.process(bitmap.premultiplied()).straightened()
    }

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

    /// Grey by Rec. 709 luma (0.2126 R + 0.7152 G + 0.0722 B on the stored values), alpha kept.
    public static var grayscale: ImageProcessor { ImageProcessor(GrayscaleProcessor()) }

    /// Keeps `rect` (output pixels, rounded to whole pixels, clipped to the picture).
    public static func crop(_ rect: PixelRect) -> ImageProcessor { ImageProcessor(CropProcessor(rect: rect)) }

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
