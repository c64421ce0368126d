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

/// ``ImageProcessing/colorAdjustment(_:)``: the steps of a ``ColorAdjustment`` in one pass over
/// the pixels. The per-channel steps (offset, brightness, contrast, gamma) are 256-entry tables
/// made once per call; saturation and hue, which mix the channels, are computed per pixel.
/// Contrast needs the picture's mean grey first: one read-only pass before, only when it is asked for.
///
/// The steps are defined on straight colour (Pillow, ImageMagick and libvips all work there), so
/// the processor takes straight pixels as they are; premultiplied rows are made straight into the
/// output row, adjusted there and premultiplied back (only rows with a pixel that is not opaque
/// pay for it), which keeps it one pass.
struct ColorAdjustmentProcessor: ImageProcessing {
    let adjustment: ColorAdjustment

    var identifier: String { "colorAdjustment(\(adjustment.parameters))" }

    var acceptsStraightAlpha: Bool { true }

    func process(_ bitmap: Bitmap) throws -> Bitmap {
        try adjustment.validate()
        guard !adjustment.isIdentity, bitmap.width > 0, bitmap.height > 0 else { return bitmap }
        var tone = Self.offsetAndBrightness(adjustment)
        if adjustment.contrast != 1 {
            let mean = Self.meanLuma(bitmap, through: tone)
            tone = tone.map { Self.blend(mean, $0, adjustment.contrast) }
        }
        let gamma = adjustment.gamma == 1 ? nil : Self.gammaTable(adjustment.gamma)
        let saturation = adjustment.saturation == 1 ? nil : Self.saturationTable(adjustment.saturation)
        let hue = Self.hueShift(adjustment.hue)
        let width = bitmap.width, rowBytes = bitmap.width * 4, premultiplied = bitmap.pixelFormat.isPremultiplied
        var out = [UInt8](repeating: 0, count: rowBytes * bitmap.height)
        bitmap.withUnsafeBytes { source in
            out.withUnsafeMutableBufferPointer { target in
                for y in 0..<bitmap.height {
                    let from = UnsafeBufferPointer(rebasing: source[(y * bitmap.bytesPerRow)..<(y * bitmap.bytesPerRow + rowBytes)])
                    let row = UnsafeMutableBufferPointer(rebasing: target[(y * rowBytes)..<((y + 1) * rowBytes)])
                    var translucent = false
                    if premultiplied {
                        translucent = Bitmap.unpremultiply(from, into: row)
                    } else {
                        _ = row.initialize(from: from)
                    }
                    Self.adjust(row, width: width, tone: tone, saturation: saturation, hue: hue, gamma: gamma)
                    if translucent { Bitmap.premultiply(row) }
                }
            }
        }
        return try makeBitmap(width: bitmap.width, height: bitmap.height, pixelFormat: bitmap.pixelFormat, bytes: out)
    }

    /// Every step on one row of straight pixels, in place; alpha untouched.
    private static func adjust(_ row: UnsafeMutableBufferPointer<UInt8>, width: Int, tone: [UInt8], saturation: [UInt8]?,
                               hue: Double?, gamma: [UInt8]?) {
        tone.withUnsafeBufferPointer { tone in
            for x in 0..<width {
                let i = x * 4
                var r = tone[Int(row[i])], g = tone[Int(row[i + 1])], b = tone[Int(row[i + 2])]
                if let saturation {
                    let luma = Int(luma(r, g, b)) << 8
                    r = saturation[luma | Int(r)]; g = saturation[luma | Int(g)]; b = saturation[luma | Int(b)]
                }
                if let hue { rotateHue(&r, &g, &b, by: hue) }
                if let gamma { r = gamma[Int(r)]; g = gamma[Int(g)]; b = gamma[Int(b)] }
                row[i] = r; row[i + 1] = g; row[i + 2] = b
            }
        }
    }

    // MARK: - Tables

    /// The offset, then Pillow's brightness (a blend with black), as one table.
    private static func offsetAndBrightness(_ adjustment: ColorAdjustment) -> [UInt8] {
        (0...255).map { value in
            let lifted = UInt8(min(255, max(0, value + adjustment.brightnessOffset)))
            return adjustment.brightness == 1 ? lifted : blend(0, lifted, adjustment.brightness)
        }
    }

    /// Pillow's saturation blend for every luma and channel value, `blend(L, c)` at `L << 8 | c`:
    /// 65,536 blends made once instead of three per pixel.
    private static func saturationTable(_ factor: Double) -> [UInt8] {
        let single = Float(factor)
        return (0..<65_536).map { blend($0 >> 8, UInt8($0 & 255), single) }
    }

    /// libvips's `gamma` for 8-bit pictures, entry by entry as it computes its table:
    /// `(float) pow(v, 1/G)` times `(float) (1 / scale)` in single precision, `scale` being
    /// `pow(255, 1/G) / 255`, truncated. 255 stays 255 (libvips's single precision makes it 254
    /// for some exponents); where single precision overflows (tiny exponents) the exact value.
    private static func gammaTable(_ gamma: Double) -> [UInt8] {
        let exponent = 1 / gamma
        let inverseScale = Float(1 / (pow(255, exponent) / 255))
        return (0...255).map { value in
            guard value < 255 else { return 255 }
            let single = Float(pow(Double(value), exponent)) * inverseScale
            let level = single.isFinite ? Double(single) : 255 * pow(Double(value) / 255, exponent)
            return level.isNaN || level <= 0 ? 0 : level >= 255 ? 255 : UInt8(level)
        }
    }

    // MARK: - Pillow's arithmetic

    /// Pillow's `Image.blend(degenerate, image, factor)` for one channel: `d + factor × (c − d)`
    /// in single precision, clipped to 0…255 and truncated toward zero, as `ImagingBlend` does.
    @inline(__always)
    static func blend(_ degenerate: Int, _ value: UInt8, _ factor: Double) -> UInt8 {
        blend(degenerate, value, Float(factor))
    }

    @inline(__always)
    private static func blend(_ degenerate: Int, _ value: UInt8, _ factor: Float) -> UInt8 {
        let t = Float(degenerate) + factor * Float(Int(value) - degenerate)
        return t <= 0 ? 0 : t >= 255 ? 255 : UInt8(t)
    }

    /// Pillow's `convert("L")`: ITU-R 601-2 luma in 16-bit fixed point, rounded.
    @inline(__always)
    private static func luma(_ r: UInt8, _ g: UInt8, _ b: UInt8) -> UInt32 {
        (UInt32(r) * 19595 + UInt32(g) * 38470 + UInt32(b) * 7471 + 0x8000) >> 16
    }

    /// The mean of the luma of `bitmap`'s straight colour after `tone`, each pixel weighted by its
    /// alpha, rounded to a level as Pillow's `int(mean + 0.5)`; for an opaque picture exactly
    /// Pillow's `ImageStat.Stat(im.convert("L")).mean`. 0 for a picture with nothing visible.
    private static func meanLuma(_ bitmap: Bitmap, through tone: [UInt8]) -> Int {
        var weighted: UInt64 = 0, weights: UInt64 = 0
        let rowBytes = bitmap.width * 4
        var straight = [UInt8](repeating: 0, count: rowBytes)
        bitmap.withUnsafeBytes { source in
            straight.withUnsafeMutableBufferPointer { row in
                for y in 0..<bitmap.height {
                    let from = UnsafeBufferPointer(rebasing: source[(y * bitmap.bytesPerRow)..<(y * bitmap.bytesPerRow + rowBytes)])
                    if bitmap.pixelFormat.isPremultiplied {
                        Bitmap.unpremultiply(from, into: row)
                    } else {
                        _ = row.initialize(from: from)
                    }
                    var sum: UInt64 = 0, alpha: UInt64 = 0
                    for i in stride(from: 0, to: rowBytes, by: 4) {
                        let a = UInt64(row[i + 3])
                        sum += UInt64(luma(tone[Int(row[i])], tone[Int(row[i + 1])], tone[Int(row[i + 2])])) * a
                        alpha += a
                    }
                    weighted += sum
                    weights += alpha
                }
            }
        }
        guard weights > 0 else { return 0 }
        return Int(Double(weighted) / Double(weights) + 0.5)
    }

    // MARK: - Hue

    /// The hue rotation in sextants (60° each) in 0..<6, or `nil` for none.
    private static func hueShift(_ degrees: Double) -> Double? {
        var sextants = (degrees / 60).truncatingRemainder(dividingBy: 6)
        if sextants < 0 { sextants += 6 }
        return sextants == 0 || sextants >= 6 ? nil : sextants
    }

    /// ImageMagick's HSL hue rotation (`ConvertRGBToHSL`, then `ConvertHSLToRGB`) on 8-bit
    /// colour: lightness and saturation are kept, so the largest and smallest channels keep their
    /// values and only the middle one is computed, rounded to the nearest level. The hue is a
    /// position on a circle of six times the chroma (whole numbers before the shift), so the only
    /// division is the one that finds the new sextant.
    @inline(__always)
    private static func rotateHue(_ r: inout UInt8, _ g: inout UInt8, _ b: inout UInt8, by shift: Double) {
        let high = max(r, g, b), low = min(r, g, b)
        guard high > low else { return }
        let c = Int(high - low), chroma = Double(high - low)
        let position: Int
        if r == high {
            position = g >= b ? Int(g) - Int(b) : 6 * c + Int(g) - Int(b)
        } else if g == high {
            position = 2 * c + Int(b) - Int(r)
        } else {
            position = 4 * c + Int(r) - Int(g)
        }
        var p = Double(position) + shift * chroma
        if p >= 6 * chroma { p -= 6 * chroma }
        let sextant = min(5, Int(p / chroma))
        let into = p - Double(sextant) * chroma
        let middle = UInt8(min(255, Double(low) + (sextant & 1 == 0 ? into : chroma - into) + 0.5))
        switch sextant {
        case 0: (r, g, b) = (high, middle, low)
        case 1: (r, g, b) = (middle, high, low)
        case 2: (r, g, b) = (low, high, middle)
        case 3: (r, g, b) = (low, middle, high)
        case 4: (r, g, b) = (middle, low, high)
        default: (r, g, b) = (high, low, middle)
        }
    }
}
