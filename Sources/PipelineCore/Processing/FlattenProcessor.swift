#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// ``ImageProcessor/flattened(onto:)``: the picture composited over a colour, so transparency
/// becomes that colour (for a format without alpha, or a page of a known colour).
struct FlattenProcessor: ImageProcessing {
    let background: RGBAColor

    var identifier: String { "flattened(\(background))" }

    var acceptsStraightAlpha: Bool { true }

    func process(_ bitmap: Bitmap) throws -> Bitmap {
        let format = bitmap.pixelFormat
        let backdrop = SourceOver.Premultiplied(background)
        var out = try makeBitmap(width: bitmap.width, height: bitmap.height, pixelFormat: format, bytes: bitmap.unpaddedBytes())
        out.withUnsafeMutableBytes { pixels in
            for offset in stride(from: 0, to: pixels.count, by: 4) where pixels[offset + 3] < 255 {
                SourceOver.Premultiplied(UnsafeBufferPointer(pixels), offset, format).over(backdrop).write(pixels, offset, format)
            }
        }
        return out
    }
}
