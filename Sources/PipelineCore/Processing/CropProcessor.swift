#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

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
