#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

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
