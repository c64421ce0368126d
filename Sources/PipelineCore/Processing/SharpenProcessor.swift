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

/// ``ImageProcessor/sharpen(sigma:x1:y2:y3:m1:m2:)``: libvips's unsharp mask `vips_sharpen`
/// (8.14, `libvips/convolution/sharpen.c`), with its numbers.
///
/// - The picture goes to LabS (L* × 327.67 in a signed short, truncated) the way
///   `vips_colourspace` takes 8-bit sRGB there: its 256-entry sRGB → linear table, its
///   RGB → XYZ matrix (D65), its cube-root table of 100,000 steps, interpolated.
/// - L is blurred with `vips_gaussmat(sigma, 0.1, separable, integer)` (``IntegerGaussianMask``)
///   as `vips_convsep` does at integer precision: rows, then columns, each pass rounded
///   (`(sum + scale / 2) / scale`) to a short, edges extended.
/// - The difference L − blur(L) indexes libvips's table of 65,536: slope `m1` within ±`x1`
///   L*, `m2` beyond, clipped to −`y3`…`y2` L*; the result is added to L and clipped to
///   0…32767.
/// - A pixel whose L changed goes back to sRGB as libvips's does (LabS → Lab → XYZ → linear,
///   then its 256-entry linear → sRGB table, interpolated and rounded); one whose L did not
///   change keeps its bytes (libvips round-trips it through Lab, which can move a channel by
///   one level). Alpha is never touched, and a transparent pixel keeps its bytes.
///
/// Straight pixels are sharpened as they are (libvips's own input); premultiplied ones are
/// made straight row by row first and premultiplied again after, so low-alpha colour is not
/// darkened into the mask. Transparent pixels count as what their colour says (black when
/// premultiplied), as in libvips.
///
/// One streaming pass: each source row is converted to L and blurred along the row into a
/// ring of `2·reach + 1` rows, which the column pass reads as it goes; no per-pixel allocation.
struct SharpenProcessor: ImageProcessing {
    let sigma: Double, x1: Double, y2: Double, y3: Double, m1: Double, m2: Double
    /// The difference → change table, built once per processor.
    private let curve: [Int16]

    /// The largest sigma: beyond it libvips's integer sums overflow (and its mask soon fails).
    static let maxSigma = 1000.0
    /// The largest slope or threshold libvips accepts.
    static let maxParameter = 1_000_000.0

    init(sigma: Double, x1: Double, y2: Double, y3: Double, m1: Double, m2: Double) {
        self.sigma = sigma; self.x1 = x1; self.y2 = y2; self.y3 = y3; self.m1 = m1; self.m2 = m2
        curve = Self.curve(x1: x1, y2: y2, y3: y3, m1: m1, m2: m2)
    }

    var identifier: String { "sharpen(\(sigma),x1=\(x1),y2=\(y2),y3=\(y3),m1=\(m1),m2=\(m2))" }

    var acceptsStraightAlpha: Bool { true }

    func process(_ bitmap: Bitmap) throws -> Bitmap {
        guard sigma > 0, sigma <= Self.maxSigma else { throw ImageProcessingError.invalidParameter("sharpen sigma \(sigma) (0 < sigma ≤ 1000)") }
        for (name, value) in [("x1", x1), ("y2", y2), ("y3", y3), ("m1", m1), ("m2", m2)]
        where !(value >= 0 && value <= Self.maxParameter) {
            throw ImageProcessingError.invalidParameter("sharpen \(name) \(value) (0…1000000)")
        }
        guard let mask = IntegerGaussianMask(sigma: sigma, minimumAmplitude: 0.1) else {
            throw ImageProcessingError.invalidParameter("sharpen sigma \(sigma) (mask too large)")
        }
        return try Self.sharpen(bitmap, mask: mask, curve: curve)
    }

    /// libvips's table: entry `i` is the change for a difference of `i − 32768` LabS units,
    /// rescaled to ±100 as `(i − 32767) / 327.67` (sic: one unit off, as libvips has it).
    static func curve(x1: Double, y2: Double, y3: Double, m1: Double, m2: Double) -> [Int16] {
        (0..<65536).map { i in
            let v = Double(i - 32767) / 327.67
            var y: Double
            if v < -x1 {
                y = (v + x1) * m2 + -x1 * m1
            } else if v < x1 {
                y = v * m1
            } else {
                y = (v - x1) * m2 + x1 * m1
            }
            if y < -y3 { y = -y3 }
            if y > y2 { y = y2 }
            // The change is added to L and clipped to 0…32767: anything beyond ±32767 is the same,
            // so a short holds it (half the cache a C int takes).
            return Int16(max(-32767, min(32767, (y * 327.67).rounded(.toNearestOrEven))))
        }
    }

    // MARK: - The pass

    private static func sharpen(_ bitmap: Bitmap, mask: IntegerGaussianMask, curve: [Int16]) throws -> Bitmap {
        let w = bitmap.width, h = bitmap.height, reach = mask.reach, stride = bitmap.bytesPerRow
        let premultiplied = bitmap.pixelFormat.isPremultiplied
        let window = min(2 * reach + 1, h), padded = w + 2 * reach
        let divide = Reciprocal(mask.scale)
        var out = [UInt8](repeating: 0, count: w * h * 4)
        // Scratch: L rows (edge-extended by `reach` each side) and row-blurred rows, one ring slot
        // per source row; the column sums; straight copies of the source rows.
        let lRing = UnsafeMutablePointer<Int32>.allocate(capacity: window * padded)
        let hRing = UnsafeMutablePointer<Int32>.allocate(capacity: window * w)
        let sums = UnsafeMutablePointer<Int32>.allocate(capacity: w)
        let straight = UnsafeMutablePointer<UInt8>.allocate(capacity: window * w * 4)
        let weights = UnsafeMutablePointer<Int32>.allocate(capacity: 2 * reach + 1)
        defer { lRing.deallocate(); hRing.deallocate(); sums.deallocate(); straight.deallocate(); weights.deallocate() }
        for (k, weight) in mask.weights.enumerated() { weights[k] = weight }
        let tables = LabTables.shared
        bitmap.withUnsafeBytes { bytes in
            guard let src = bytes.baseAddress else { return }
            out.withUnsafeMutableBufferPointer { outBuffer in
                curve.withUnsafeBufferPointer { curve in
                    guard let dst = outBuffer.baseAddress, let curve = curve.baseAddress else { return }
                    var ready = 0  // source rows converted and row-blurred so far
                    for y in 0..<h {
                        while ready <= min(y + reach, h - 1) {
                            let slot = ready % window
                            let pixels = straight + slot * w * 4
                            if premultiplied {
                                Bitmap.unpremultiply(UnsafeBufferPointer(start: src + ready * stride, count: w * 4),
                                                     into: UnsafeMutableBufferPointer(start: pixels, count: w * 4))
                            } else {
                                pixels.update(from: src + ready * stride, count: w * 4)
                            }
                            let l = lRing + slot * padded
                            for x in 0..<w {
                                l[reach + x] = tables.labS(pixels[4 * x], pixels[4 * x + 1], pixels[4 * x + 2])
                            }
                            for x in 0..<reach { l[x] = l[reach]; l[reach + w + x] = l[reach + w - 1] }
                            accumulate(into: sums, count: w, weights: weights, taps: 2 * reach + 1) { UnsafePointer(l + $0) }
                            let row = hRing + slot * w
                            for x in 0..<w { row[x] = divide(sums[x]) }
                            ready += 1
                        }
                        // Column pass for row y: rows y − reach … y + reach, clamped to the picture.
                        accumulate(into: sums, count: w, weights: weights, taps: 2 * reach + 1) { k in
                            UnsafePointer(hRing + (min(max(y + k - reach, 0), h - 1) % window) * w)
                        }
                        let slot = y % window
                        let pixels = straight + slot * w * 4, l = lRing + slot * padded + reach
                        let target = dst + y * w * 4
                        target.update(from: pixels, count: w * 4)
                        for x in 0..<w {
                            let v1 = l[x]
                            let change = Int32(curve[Int(v1 - divide(sums[x])) + 32768])
                            guard change != 0, pixels[4 * x + 3] != 0 else { continue }
                            let sharpened = min(max(v1 + change, 0), 32767)
                            tables.write(pixels + 4 * x, l: sharpened, into: target + 4 * x)
                        }
                        if premultiplied { Bitmap.premultiply(UnsafeMutableBufferPointer(start: target, count: w * 4)) }
                    }
                }
            }
        }
        return try makeBitmap(width: w, height: h, pixelFormat: bitmap.pixelFormat, bytes: out)
    }

    /// `sums[x] = Σₖ weights[k] · tap(k)[x]` for x in `0..<count`: one plain loop over the row
    /// per tap, which the compiler vectorises. Sums stay below 2³¹: L ≤ 32767 and the weights of
    /// a mask for σ ≤ ``maxSigma`` add up to less than 65,536.
    @inline(__always)
    private static func accumulate(into sums: UnsafeMutablePointer<Int32>, count: Int, weights: UnsafePointer<Int32>,
                                   taps: Int, _ tap: (Int) -> UnsafePointer<Int32>) {
        let first = tap(0), w0 = weights[0]
        for x in 0..<count { sums[x] = w0 &* first[x] }
        for k in 1..<max(taps, 1) {
            let row = tap(k), weight = weights[k]
            for x in 0..<count { sums[x] &+= weight &* row[x] }
        }
    }
}

/// libvips's integer rounding `(n + d / 2) / d` for a fixed divisor `d` and 0 ≤ n < 2³¹, as
/// the high half of a multiply by `m = ⌈2⁶⁴ / d⌉`: exact, since `n · (m − 2⁶⁴/d) / 2⁶⁴ < 1/d`
/// whenever `n · d < 2⁶⁴`.
private struct Reciprocal {
    let half: UInt64, multiplier: UInt64

    init(_ divisor: Int) {
        half = UInt64(divisor / 2)
        // ⌈2⁶⁴ / 1⌉ does not fit: 0 stands for "divide by 1" (a mask's centre weight is 20, so
        // libvips's masks never sum to 1; kept exact all the same).
        multiplier = divisor <= 1 ? 0 : UInt64.max / UInt64(divisor) + 1
    }

    @inline(__always)
    func callAsFunction(_ n: Int32) -> Int32 {
        guard multiplier != 0 else { return n }
        return Int32(truncatingIfNeeded: (UInt64(UInt32(bitPattern: n)) &+ half).multipliedFullWidth(by: multiplier).high)
    }
}

/// libvips 8.14's 8-bit sRGB ↔ LabS arithmetic, float for float: `vips_v2Y_8` and
/// `vips_Y2v_8` (`LabQ2sRGB.c`), `vips_col_scRGB2XYZ` / `vips_col_XYZ2scRGB`, the cube-root
/// table of `XYZ2Lab.c`, `Lab2LabS` / `LabS2Lab` and `Lab2XYZ.c`.
private final class LabTables: Sendable {
    static let shared = LabTables()

    /// 8-bit sRGB → linear light 0…1.
    let linear: [Float]
    /// Linear light × 255 at whole steps → 8-bit sRGB, plus a copy of the last for interpolation.
    let encode: [Int32]
    /// The cube root (the linear segment below 0.008856) at `i / 100,000`.
    let cubeRoot: [Float]

    private static let quant = 100_000
    private static let white = (x: 95.0470, y: 100.0, z: 108.8827)

    private init() {
        linear = (0..<256).map { i in
            let f = Float(i) / 255
            return f <= 0.04045 ? Float(Double(f) / 12.92) : Float(pow((Double(f) + 0.055) / (1 + 0.055), 2.4))
        }
        var encode = (0..<256).map { i -> Int32 in
            let f = Float(i) / 255
            let v = f <= 0.0031308 ? Float(12.92 * Double(f)) : Float((1.0 + 0.055) * pow(Double(f), 1.0 / 2.4) - 0.055)
            return Int32(Double(255 * v).rounded(.toNearestOrEven))
        }
        encode.append(encode[255])
        self.encode = encode
        cubeRoot = (0..<Self.quant).map { i in
            let y = Float(Double(i) / Double(Self.quant))
            return y < 0.008856 ? Float(7.787 * Double(y) + 16.0 / 116.0) : Float(cbrt(Double(y)))
        }
    }

    /// The table's interpolated cube root of `value / white` (`vips_col_XYZ2Lab_helper`).
    @inline(__always)
    private func root(_ value: Float, _ white: Double) -> Float {
        let n = Float(Double(Float(Self.quant) * value) / white)
        // `VIPS_CLIP(0, (int) n, QUANT_ELEMENTS - 2)`, with n kept finite and in Int's range first.
        let i = min(max(Int(n.isNaN ? 0 : max(min(n, 1e9), -1e9)), 0), Self.quant - 2)
        let f = n - Float(i)
        return cubeRoot.withUnsafeBufferPointer { t in t[i] + f * (t[i + 1] - t[i]) }
    }

    /// LabS L of an sRGB colour.
    @inline(__always)
    func labS(_ r: UInt8, _ g: UInt8, _ b: UInt8) -> Int32 {
        let (lr, lg, lb) = linear.withUnsafeBufferPointer { t in (Double(t[Int(r)]), Double(t[Int(g)]), Double(t[Int(b)])) }
        let y = Float(100.0 * 0.2126 * lr + 100.0 * 0.7152 * lg + 100.0 * 0.07220 * lb)
        let cby = root(y, Self.white.y)
        let l = Float(116.0 * Double(cby) - 16.0)
        return min(max(Int32(Double(l) * (32767.0 / 100.0)), 0), 32767)
    }

    /// Writes the sRGB colour of `pixel` (straight RGB) with its LabS L replaced by `l`, alpha
    /// copied: forward to Lab as ``labS(_:_:_:)``, a* and b* through LabS, then back.
    @inline(__always)
    func write(_ pixel: UnsafePointer<UInt8>, l: Int32, into target: UnsafeMutablePointer<UInt8>) {
        let (lr, lg, lb) = linear.withUnsafeBufferPointer { t in (Double(t[Int(pixel[0])]), Double(t[Int(pixel[1])]), Double(t[Int(pixel[2])])) }
        let x = Float(100.0 * 0.4124 * lr + 100.0 * 0.3576 * lg + 100.0 * 0.18056 * lb)
        let y = Float(100.0 * 0.2126 * lr + 100.0 * 0.7152 * lg + 100.0 * 0.07220 * lb)
        let z = Float(100.0 * 0.0193 * lr + 100.0 * 0.1192 * lg + 100.0 * 0.9505 * lb)
        let cbx = root(x, Self.white.x), cby = root(y, Self.white.y), cbz = root(z, Self.white.z)
        let a = Float(500.0 * Double(cbx - cby)), b = Float(200.0 * Double(cby - cbz))
        // Lab2LabS truncates a* × 256 and b* × 256 to shorts; LabS2Lab divides back.
        let aS = Float(Double(Int16(clamping: Int(Double(a) * 256))) / 256)
        let bS = Float(Double(Int16(clamping: Int(Double(b) * 256))) / 256)
        let lStar = Float(Double(l) / (32767.0 / 100.0))
        // Lab2XYZ.
        let cubeY: Double, outY: Float
        if lStar < 8 {
            outY = Float((Double(lStar) * Self.white.y) / 903.3)
            cubeY = 7.787 * (Double(outY) / Self.white.y) + 16.0 / 116.0
        } else {
            cubeY = (Double(lStar) + 16.0) / 116.0
            outY = Float(Self.white.y * cubeY * cubeY * cubeY)
        }
        func unroot(_ t: Double, _ white: Double) -> Float {
            t < 0.2069 ? Float(white * (t - 0.13793) / 7.787) : Float(white * t * t * t)
        }
        let outX = unroot(Double(aS) / 500.0 + cubeY, Self.white.x)
        let outZ = unroot(cubeY - Double(bS) / 200.0, Self.white.z)
        // XYZ2scRGB.
        let (dx, dy, dz) = (Double(outX), Double(outY), Double(outZ))
        let red = Float(3.2406 / 100.0 * dx + -1.5372 / 100.0 * dy + -0.4986 / 100.0 * dz)
        let green = Float(-0.9689 / 100.0 * dx + 1.8758 / 100.0 * dy + 0.0415 / 100.0 * dz)
        let blue = Float(0.0557 / 100.0 * dx + -0.2040 / 100.0 * dy + 1.0570 / 100.0 * dz)
        if red.isNaN || green.isNaN || blue.isNaN {
            target[0] = 0; target[1] = 0; target[2] = 0
        } else {
            target[0] = srgb(red); target[1] = srgb(green); target[2] = srgb(blue)
        }
        target[3] = pixel[3]
    }

    /// `vips_col_scRGB2sRGB_8` for one channel: the table interpolated at `value × 255`, rounded.
    @inline(__always)
    private func srgb(_ value: Float) -> UInt8 {
        let f = min(max(value * 255, 0), 255)
        let i = Int(f)
        return encode.withUnsafeBufferPointer { t in
            let v = Float(t[i]) + Float(t[i + 1] - t[i]) * (f - Float(i))
            return UInt8(clamping: Int(Double(v).rounded(.toNearestOrEven)))
        }
    }
}
