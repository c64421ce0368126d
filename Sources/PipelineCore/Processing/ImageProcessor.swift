import Foundation

/// A processor in a request's list: any ``ImageProcessing``, compared and hashed by its
/// ``ImageProcessing/identifier``. The built-ins are static members (`.circle`, `.grayscale`,
/// `.gaussianBlur(radius:)`, `.roundedCorners(radius:)`, `.crop(_:)`).
public struct ImageProcessor: Hashable, Sendable, ImageProcessing {
    /// The wrapped step.
    public let base: any ImageProcessing

    /// Wraps `processor`.
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

extension ImageProcessor {
    /// Crops to the centred square and keeps only the inscribed circle: transparent outside,
    /// an antialiased edge one pixel wide.
    public static let circle = ImageProcessor(CircleProcessor())

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
    public static let grayscale = ImageProcessor(GrayscaleProcessor())

    /// Keeps `rect` (output pixels, rounded to whole pixels, clipped to the picture).
    public static func crop(_ rect: PixelRect) -> ImageProcessor { ImageProcessor(CropProcessor(rect: rect)) }
}
