#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// The sRGB transfer curve (IEC 61966-2-1) in double precision, where the code that needs it
/// follows a reference that computes it so: BlurHash (woltapp's reference) and the attention
/// crop (`vips_colourspace`'s sRGB → XYZ). Sharpening keeps its own single-precision tables,
/// as libvips's sharpen computes them.
enum SRGBTransfer {
    /// 8-bit sRGB to linear light 0…1, one entry per value.
    static let linear: [Double] = (0..<256).map { byte in
        let value = Double(byte) / 255
        return value <= 0.04045 ? value / 12.92 : pow((value + 0.055) / 1.055, 2.4)
    }
}
