import Foundation

/// One step that transforms a decoded picture after resampling: a round avatar, a blur, a
/// sepia tone. Runs on the decode pool, never on the pipeline's actor.
///
/// ``identifier`` takes part in the memory key (``ImageKey/processors``): two processors with
/// the same identifier must produce the same pixels from the same input, and a processor whose
/// parameters change must change its identifier (put them in it: `"blur(r=4.0)"`).
public protocol ImageProcessing: Sendable {
    /// A stable name for this step and its parameters, part of every cache key.
    var identifier: String { get }
    /// Transforms `bitmap` (premultiplied RGBA8); throws to fail the request, which then
    /// reports ``ImagePipelineError/processingFailed(_:underlying:)``.
    func process(_ bitmap: Bitmap) throws -> Bitmap
}

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

/// Why a built-in processor could not run.
public enum ImageProcessingError: Error, Sendable, Equatable, CustomStringConvertible, PipelineFailure {
    /// A crop rectangle that does not overlap the picture.
    case cropOutsideImage(PixelRect, PixelSize)
    /// A parameter out of range (a negative or non-finite radius), with its name.
    case invalidParameter(String)

    /// One line a person can act on.
    public var description: String {
        switch self {
        case .cropOutsideImage(let rect, let size):
            return "crop rectangle \(rect.x),\(rect.y) \(rect.width)×\(rect.height) lies outside the \(size) picture"
        case .invalidParameter(let name): return "invalid processor parameter: \(name)"
        }
    }

    /// Always `true`: the same pixels and parameters fail the same way.
    public var isPermanent: Bool { true }
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

/// Builds a tightly packed bitmap of `width`×`height` from `bytes`; callers guarantee the count.
func makeBitmap(width: Int, height: Int, bytes: [UInt8]) throws -> Bitmap {
    guard let bitmap = Bitmap(width: width, height: height, bytesPerRow: width * 4, bytes: bytes) else {
        throw ImageProcessingError.invalidParameter("size \(width)×\(height)")
    }
    return bitmap
}

/// Multiplies every channel of premultiplied pixels by a coverage in 0...1: the correct way
/// to fade premultiplied colour (colour and alpha scale together).
@inline(__always)
func scalePixel(_ p: UnsafeMutableBufferPointer<UInt8>, _ offset: Int, _ coverage: Double) {
    for c in 0..<4 { p[offset + c] = UInt8((Double(p[offset + c]) * coverage).rounded()) }
}

/// Coverage of a pixel whose centre lies `distance` from a circle's centre, for radius `radius`:
/// 1 inside, 0 outside, linear across the one-pixel edge.
@inline(__always)
func circleCoverage(distance: Double, radius: Double) -> Double {
    min(1, max(0, radius - distance + 0.5))
}

/// ``ImageProcessor/crop(_:)``.
struct CropProcessor: ImageProcessing {
    let rect: PixelRect
    var identifier: String { "crop(\(rect.x),\(rect.y),\(rect.width),\(rect.height))" }

    func process(_ bitmap: Bitmap) throws -> Bitmap {
        guard rect.x.isFinite, rect.y.isFinite, rect.width.isFinite, rect.height.isFinite else {
            throw ImageProcessingError.invalidParameter("crop rectangle")
        }
        let x0 = max(0, Int(rect.x.rounded())), y0 = max(0, Int(rect.y.rounded()))
        let x1 = min(bitmap.width, Int((rect.x + rect.width).rounded()))
        let y1 = min(bitmap.height, Int((rect.y + rect.height).rounded()))
        guard x1 > x0, y1 > y0 else { throw ImageProcessingError.cropOutsideImage(rect, bitmap.size) }
        return try bitmap.cropped(x: x0, y: y0, width: x1 - x0, height: y1 - y0)
    }
}

extension Bitmap {
    /// The pixels of the given in-bounds rectangle, tightly packed.
    func cropped(x: Int, y: Int, width: Int, height: Int) throws -> Bitmap {
        if x == 0, y == 0, width == self.width, height == self.height { return self }
        var out = [UInt8](repeating: 0, count: width * height * 4)
        withUnsafeBytes { src in
            out.withUnsafeMutableBufferPointer { dst in
                for row in 0..<height {
                    let s = (y + row) * bytesPerRow + x * 4
                    for i in 0..<(width * 4) { dst[row * width * 4 + i] = src[s + i] }
                }
            }
        }
        return try makeBitmap(width: width, height: height, bytes: out)
    }
}

/// ``ImageProcessor/circle``.
struct CircleProcessor: ImageProcessing {
    var identifier: String { "circle" }

    func process(_ bitmap: Bitmap) throws -> Bitmap {
        let side = min(bitmap.width, bitmap.height)
        var out = try bitmap.cropped(x: (bitmap.width - side) / 2, y: (bitmap.height - side) / 2, width: side, height: side)
        let r = Double(side) / 2
        out.withUnsafeMutableBytes { p in
            for y in 0..<side {
                let dy = Double(y) + 0.5 - r
                for x in 0..<side {
                    let dx = Double(x) + 0.5 - r
                    let coverage = circleCoverage(distance: (dx * dx + dy * dy).squareRoot(), radius: r)
                    if coverage < 1 { scalePixel(p, (y * side + x) * 4, coverage) }
                }
            }
        }
        return out
    }
}

/// ``ImageProcessor/roundedCorners(radius:)``.
struct RoundedCornersProcessor: ImageProcessing {
    let radius: Double
    var identifier: String { "roundedCorners(\(radius))" }

    func process(_ bitmap: Bitmap) throws -> Bitmap {
        guard radius.isFinite, radius >= 0 else { throw ImageProcessingError.invalidParameter("corner radius \(radius)") }
        let w = bitmap.width, h = bitmap.height
        let r = min(radius, Double(min(w, h)) / 2)
        guard r > 0 else { return bitmap }
        var out = try makeBitmap(width: w, height: h, bytes: bitmap.unpaddedBytes())
        let span = Int(r.rounded(.up))
        out.withUnsafeMutableBytes { p in
            for y in 0..<h where y < span || y >= h - span {
                let cy = Double(y) + 0.5
                // The corner circle's centre for this row, if the row's centre is in a corner band.
                guard let centreY = cy < r ? r : (cy > Double(h) - r ? Double(h) - r : nil) else { continue }
                for x in 0..<w where x < span || x >= w - span {
                    let cx = Double(x) + 0.5
                    guard let centreX = cx < r ? r : (cx > Double(w) - r ? Double(w) - r : nil) else { continue }
                    let dx = cx - centreX, dy = cy - centreY
                    let coverage = circleCoverage(distance: (dx * dx + dy * dy).squareRoot(), radius: r)
                    if coverage < 1 { scalePixel(p, (y * w + x) * 4, coverage) }
                }
            }
        }
        return out
    }
}

extension Bitmap {
    /// The pixel bytes without row padding.
    func unpaddedBytes() -> [UInt8] {
        if bytesPerRow == width * 4 { return withUnsafeBytes { Array($0.prefix(width * height * 4)) } }
        var out = [UInt8](); out.reserveCapacity(width * height * 4)
        withUnsafeBytes { src in
            for y in 0..<height { out.append(contentsOf: src[(y * bytesPerRow)..<(y * bytesPerRow + width * 4)]) }
        }
        return out
    }
}

/// ``ImageProcessor/grayscale``.
struct GrayscaleProcessor: ImageProcessing {
    var identifier: String { "grayscale" }

    func process(_ bitmap: Bitmap) throws -> Bitmap {
        // Luma is linear in R, G, B, so it applies to premultiplied values directly
        // (Y·a = 0.2126 R·a + …) and stays ≤ alpha.
        var out = try makeBitmap(width: bitmap.width, height: bitmap.height, bytes: bitmap.unpaddedBytes())
        out.withUnsafeMutableBytes { p in
            var i = 0
            while i < p.count {
                let y = (2126 * UInt32(p[i]) + 7152 * UInt32(p[i + 1]) + 722 * UInt32(p[i + 2]) + 5000) / 10000
                let v = UInt8(min(y, UInt32(p[i + 3])))
                p[i] = v; p[i + 1] = v; p[i + 2] = v
                i += 4
            }
        }
        return out
    }
}
