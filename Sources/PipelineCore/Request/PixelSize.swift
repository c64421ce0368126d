/// A size in pixels: the unit every request, header and bitmap speaks in.
public struct PixelSize: Hashable, Sendable, CustomStringConvertible {
    /// Width in pixels.
    public var width: Int
    /// Height in pixels.
    public var height: Int

    /// Creates a size of `width` × `height` pixels.
    public init(width: Int, height: Int) {
        self.width = width
        self.height = height
    }

    /// The number of pixels, `width × height`, saturating instead of overflowing.
    public var pixelCount: Int {
        let (product, overflow) = width.multipliedReportingOverflow(by: height)
        return overflow ? Int.max : product
    }

    /// The size with width and height swapped (a 90° rotation).
    public var transposed: PixelSize { PixelSize(width: height, height: width) }

    /// `true` when both sides are at least one pixel.
    public var isValid: Bool { width > 0 && height > 0 }

    /// `"640×480"`.
    public var description: String { "\(width)×\(height)" }
}
