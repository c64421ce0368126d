#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Porter–Duff "source over" on one pixel, the arithmetic every compositing processor shares
/// (overlay, flatten): in premultiplied units of 0…1, `out = top + base × (1 − top.alpha)`.
///
/// Pixels are read in either ``PixelFormat`` and written in the base's, so a straight base stays
/// straight (what Pillow's `Image.alpha_composite` computes, to a level) and a premultiplied one
/// premultiplied, without a round trip through the other format.
struct SourceOver {
    /// A premultiplied colour in 0…1.
    struct Premultiplied {
        var r, g, b, a: Double

        /// `bytes` at `offset`, read as `format` and scaled by `opacity`.
        @inline(__always)
        init(_ bytes: UnsafeBufferPointer<UInt8>, _ offset: Int, _ format: PixelFormat, opacity: Double = 1) {
            a = Double(bytes[offset + 3]) / 255 * opacity
            let scale = format.isPremultiplied ? opacity / 255 : a / 255
            r = Double(bytes[offset]) * scale
            g = Double(bytes[offset + 1]) * scale
            b = Double(bytes[offset + 2]) * scale
        }

        init(_ color: RGBAColor) {
            a = Double(color.alpha) / 255
            r = Double(color.red) / 255 * a
            g = Double(color.green) / 255 * a
            b = Double(color.blue) / 255 * a
        }

        /// This colour over `base`.
        @inline(__always)
        func over(_ base: Premultiplied) -> Premultiplied {
            var out = base
            let keep = 1 - a
            out.r = r + base.r * keep
            out.g = g + base.g * keep
            out.b = b + base.b * keep
            out.a = a + base.a * keep
            return out
        }

        /// Writes this colour at `offset` as `format`, rounded to the nearest level.
        @inline(__always)
        func write(_ bytes: UnsafeMutableBufferPointer<UInt8>, _ offset: Int, _ format: PixelFormat) {
            let alpha = (a * 255).rounded()
            bytes[offset + 3] = UInt8(min(255, max(0, alpha)))
            // Straight: colour divided back out (transparent black where nothing is left).
            let scale = format.isPremultiplied ? 255 : (a > 0 ? 255 / a : 0)
            let ceiling = format.isPremultiplied ? alpha : 255
            bytes[offset] = UInt8(min(ceiling, max(0, (r * scale).rounded())))
            bytes[offset + 1] = UInt8(min(ceiling, max(0, (g * scale).rounded())))
            bytes[offset + 2] = UInt8(min(ceiling, max(0, (b * scale).rounded())))
        }
    }
}
