#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

extension Trim {
    /// The part of `bitmap` (upright, either pixel format) inside its uniform border, as
    /// libvips 8.14's `find_trim` computes it (`libvips/arithmetic/find_trim.c`): flatten onto
    /// the background, 3 × 3 median per channel (edges copied outwards, as `vips_rank` extends
    /// them), `|median − background| > threshold` on any channel marks the subject, and the box
    /// is the first marked column and row from each side. `nil` when there is nothing to cut:
    /// no border, or no subject at all (libvips then returns an empty box).
    ///
    /// The scan stops at the first marked pixel from each side of each row, so a picture with
    /// a thin border costs about the border's area, not the picture's.
    func box(in bitmap: Bitmap) -> PixelRect? {
        let w = bitmap.width, h = bitmap.height
        let premultiplied = bitmap.pixelFormat.isPremultiplied
        return bitmap.withUnsafeBytes { bytes -> PixelRect? in
            let corner = bitmap.pixel(x: 0, y: 0)
            // The border colour as an opaque one, as the top-left pixel straight when none was given.
            var straight = [corner.r, corner.g, corner.b, corner.a]
            if premultiplied && corner.a > 0 {
                straight.withUnsafeMutableBufferPointer { _ = Bitmap.unpremultiply(UnsafeBufferPointer($0), into: $0) }
            }
            let backdrop = background ?? RGBAColor(red: straight[0], green: straight[1], blue: straight[2])
            let bg = [Double(backdrop.red), Double(backdrop.green), Double(backdrop.blue)]
            // One channel of the pixel at (x, y) flattened onto the backdrop, edges extended.
            func flat(_ x: Int, _ y: Int, _ c: Int) -> UInt8 {
                let o = min(h - 1, max(0, y)) * bitmap.bytesPerRow + min(w - 1, max(0, x)) * 4
                let a = Double(bytes[o + 3])
                let colour = premultiplied ? Double(bytes[o + c]) : Double(bytes[o + c]) * a / 255
                return UInt8(min(255, (colour + bg[c] * (255 - a) / 255).rounded()))
            }
            var window = [UInt8](repeating: 0, count: 9)
            func isSubject(_ x: Int, _ y: Int) -> Bool {
                for c in 0..<3 {
                    var i = 0
                    for dy in -1...1 { for dx in -1...1 { window[i] = flat(x + dx, y + dy, c); i += 1 } }
                    window.sort()
                    if abs(Double(window[4]) - bg[c]) > threshold { return true }
                }
                return false
            }
            func rowHasSubject(_ y: Int) -> Bool { (0..<w).contains { isSubject($0, y) } }
            // Rows from the top and from the bottom (the border's area), then, between them, each
            // row only up to the leftmost and from the rightmost subject found so far.
            guard let top = (0..<h).first(where: rowHasSubject) else { return nil }
            let bottom = ((top..<h).reversed().first(where: rowHasSubject) ?? top) + 1
            var left = w, right = -1
            for y in top..<bottom {
                if let x = (0..<left).first(where: { isSubject($0, y) }) { left = x }
                if let x = ((max(left, right + 1))..<w).reversed().first(where: { isSubject($0, y) }) { right = x }
            }
            right = max(right, left)
            let box = PixelRect(x: Double(left), y: Double(top), width: Double(right + 1 - left), height: Double(bottom - top))
            return box == PixelRect(bitmap.size) ? nil : box
        }
    }
}
