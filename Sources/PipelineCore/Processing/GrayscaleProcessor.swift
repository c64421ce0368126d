#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

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
