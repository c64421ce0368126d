#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

// Pixel operations the built-in processors share.

/// Builds a tightly packed bitmap of `width`×`height` from `bytes`; callers guarantee the count.
func makeBitmap(width: Int, height: Int, pixelFormat: PixelFormat = .rgba8Premultiplied, bytes: [UInt8]) throws -> Bitmap {
    guard let bitmap = Bitmap(width: width, height: height, bytesPerRow: width * 4, pixelFormat: pixelFormat, bytes: bytes) else {
        throw ImageProcessingError.invalidParameter("size \(width)×\(height)")
    }
    return bitmap
}

/// The positions `start..<start + length` that lie within `0..<limit` (empty when none do).
func span(from start: Int, length: Int, within limit: Int) -> Range<Int> {
    let lower = min(limit, max(0, start))
    return lower..<max(lower, min(limit, start + length))
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
        return try makeBitmap(width: width, height: height, pixelFormat: pixelFormat, bytes: out)
    }

    /// The pixels inside `rect`, a whole-pixel rectangle within the bitmap.
    func cropped(_ rect: PixelRect) throws -> Bitmap {
        try cropped(x: Int(rect.x), y: Int(rect.y), width: Int(rect.width), height: Int(rect.height))
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
