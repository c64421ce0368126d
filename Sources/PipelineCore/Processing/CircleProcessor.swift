#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

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
