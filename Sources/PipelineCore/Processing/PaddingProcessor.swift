#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// ``ImageProcessor/padded(to:background:gravity:)``: the picture placed on a canvas of an exact
/// size ("letterbox", CSS's `contain`), the rest filled with a colour.
struct PaddingProcessor: ImageProcessing {
    let size: PixelSize
    let background: RGBAColor
    let gravity: CropAnchor

    var identifier: String { "padded(\(size.width)x\(size.height),\(background),\(gravity))" }

    var acceptsStraightAlpha: Bool { true }

    func process(_ bitmap: Bitmap) throws -> Bitmap {
        guard size.isValid, size.pixelCount <= 1 << 28 else {
            throw ImageProcessingError.invalidParameter("padded size \(size.width)×\(size.height)")
        }
        if bitmap.size == size { return bitmap }
        let format = bitmap.pixelFormat
        let fill = background.bytes(in: format)
        var canvas = [UInt8](repeating: 0, count: size.pixelCount * 4)
        for i in stride(from: 0, to: canvas.count, by: 4) {
            (canvas[i], canvas[i + 1], canvas[i + 2], canvas[i + 3]) = fill
        }
        // The picture's pixels are copied as they are (a larger picture is cropped around the gravity).
        let (fx, fy) = gravity.point ?? (0.5, 0.5)
        let x0 = Int((fx * Double(size.width - bitmap.width)).rounded())
        let y0 = Int((fy * Double(size.height - bitmap.height)).rounded())
        let xs = span(from: x0, length: bitmap.width, within: size.width)
        bitmap.withUnsafeBytes { src in
            for y in span(from: y0, length: bitmap.height, within: size.height) where !xs.isEmpty {
                let s = (y - y0) * bitmap.bytesPerRow + (xs.lowerBound - x0) * 4, d = (y * size.width + xs.lowerBound) * 4
                canvas.replaceSubrange(d..<(d + xs.count * 4), with: src[s..<(s + xs.count * 4)])
            }
        }
        return try makeBitmap(width: size.width, height: size.height, pixelFormat: format, bytes: canvas)
    }
}
