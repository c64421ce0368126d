import Foundation

/// ``ImageProcessor/gaussianBlur(radius:)``: a true Gaussian (standard deviation `radius`),
/// applied as two 1-D passes with 16-bit fixed-point weights, edges extended. Blurring
/// premultiplied pixels is what keeps colour from bleeding out of transparent areas.
struct GaussianBlurProcessor: ImageProcessing {
    let radius: Double
    var identifier: String { "gaussianBlur(\(radius))" }

    /// Above this standard deviation the three-pass box approximation runs instead of the
    /// exact kernel: its cost does not grow with the radius, and its error is then below one
    /// level in the interior (the method Pillow uses at every radius).
    static let exactLimit = 3.0

    func process(_ bitmap: Bitmap) throws -> Bitmap {
        guard radius.isFinite, radius <= 100_000 else { throw ImageProcessingError.invalidParameter("blur radius \(radius)") }
        guard radius > 0 else { return bitmap }
        if radius > Self.exactLimit { return try BoxBlurApproximation.blurChecked(bitmap, sigma: radius) }
        let w = bitmap.width, h = bitmap.height
        // Limit the kernel to the picture: a wider one only repeats edge pixels.
        let reach = min(Int((radius * 3).rounded(.up)), max(w, h))
        let kernel = Self.kernel(sigma: radius, reach: reach)
        var tmp = [UInt8](repeating: 0, count: w * h * 4)
        var out = [UInt8](repeating: 0, count: w * h * 4)
        bitmap.withUnsafeBytes { src in
            tmp.withUnsafeMutableBufferPointer { dst in
                kernel.withUnsafeBufferPointer { k in
                    Self.pass(src, rowStride: bitmap.bytesPerRow, pixelStride: 4, into: dst, dstRowStride: w * 4,
                              dstPixelStride: 4, lines: h, length: w, kernel: k, reach: reach)
                }
            }
        }
        tmp.withUnsafeBufferPointer { src in
            out.withUnsafeMutableBufferPointer { dst in
                kernel.withUnsafeBufferPointer { k in Self.verticalPass(src, into: dst, width: w, height: h, kernel: k, reach: reach) }
            }
        }
        return try makeBitmap(width: w, height: h, bytes: out)
    }

    /// The vertical pass a row at a time (contiguous reads, one accumulator row), edges extended.
    static func verticalPass(_ src: UnsafeBufferPointer<UInt8>, into dst: UnsafeMutableBufferPointer<UInt8>,
                             width: Int, height: Int, kernel: UnsafeBufferPointer<UInt32>, reach: Int) {
        let n = width * 4
        var acc = [UInt32](repeating: 0, count: n)
        acc.withUnsafeMutableBufferPointer { acc in
            for y in 0..<height {
                for i in 0..<n { acc[i] = 32768 }
                for k in 0..<kernel.count {
                    let row = min(max(y + k - reach, 0), height - 1) * n, wt = kernel[k]
                    for i in 0..<n { acc[i] &+= wt &* UInt32(src[row + i]) }
                }
                let out = y * n
                for i in 0..<n { dst[out + i] = UInt8(truncatingIfNeeded: acc[i] >> 16) }
            }
        }
    }

    /// Weights for offsets `-reach...reach`, summing to exactly 65536.
    static func kernel(sigma: Double, reach: Int) -> [UInt32] {
        let raw = (-reach...reach).map { exp(-Double($0 * $0) / (2 * sigma * sigma)) }
        let total = raw.reduce(0, +)
        var weights = raw.map { UInt32(($0 / total * 65536).rounded()) }
        let sum = weights.reduce(0, +)
        // Put the rounding remainder on the centre tap.
        weights[reach] = UInt32(Int64(weights[reach]) + 65536 - Int64(sum))
        return weights
    }

    /// One 1-D pass over `lines` lines of `length` pixels; `rowStride` steps between lines,
    /// `pixelStride` along one.
    static func pass(_ src: UnsafeBufferPointer<UInt8>, rowStride: Int, pixelStride: Int,
                     into dst: UnsafeMutableBufferPointer<UInt8>, dstRowStride: Int, dstPixelStride: Int,
                     lines: Int, length: Int, kernel: UnsafeBufferPointer<UInt32>, reach: Int) {
        for line in 0..<lines {
            let base = line * rowStride, dbase = line * dstRowStride
            for i in 0..<length {
                var r: UInt32 = 32768, g: UInt32 = 32768, b: UInt32 = 32768, a: UInt32 = 32768
                let lo = i - reach, hi = i + reach
                if lo >= 0 && hi < length {
                    var o = base + lo * pixelStride
                    for k in 0..<kernel.count {
                        let wt = kernel[k]
                        r &+= wt &* UInt32(src[o]); g &+= wt &* UInt32(src[o + 1])
                        b &+= wt &* UInt32(src[o + 2]); a &+= wt &* UInt32(src[o + 3])
                        o += pixelStride
                    }
                } else {
                    for k in 0..<kernel.count {
                        let j = min(max(lo + k, 0), length - 1)
                        let o = base + j * pixelStride, wt = kernel[k]
                        r &+= wt &* UInt32(src[o]); g &+= wt &* UInt32(src[o + 1])
                        b &+= wt &* UInt32(src[o + 2]); a &+= wt &* UInt32(src[o + 3])
                    }
                }
                let d = dbase + i * dstPixelStride
                dst[d] = UInt8(truncatingIfNeeded: r >> 16); dst[d + 1] = UInt8(truncatingIfNeeded: g >> 16)
                dst[d + 2] = UInt8(truncatingIfNeeded: b >> 16); dst[d + 3] = UInt8(truncatingIfNeeded: a >> 16)
            }
        }
    }
}

/// The three-pass box approximation of a Gaussian (box widths chosen so the three passes
/// together have the Gaussian's variance, two sizes mixed as in Kovesi's method), edges
/// extended: what ``ImageProcessor/gaussianBlur(radius:)`` uses above a standard deviation of 3,
/// and the baseline of `Benchmarks/processors.sh`.
public enum BoxBlurApproximation {
    /// Blurs `bitmap` with three box passes per axis approximating a Gaussian of `sigma`
    /// (returned unchanged for a `sigma` that is not positive and finite).
    public static func blur(_ bitmap: Bitmap, sigma: Double) -> Bitmap {
        (try? blurChecked(bitmap, sigma: sigma)) ?? bitmap
    }

    static func blurChecked(_ bitmap: Bitmap, sigma: Double) throws -> Bitmap {
        guard sigma > 0, sigma.isFinite else { return bitmap }
        let w = bitmap.width, h = bitmap.height
        var a = bitmap.unpaddedBytes(), b = [UInt8](repeating: 0, count: w * h * 4)
        for r in radii(sigma: sigma) {
            let r = min(r, max(w, h))
            a.withUnsafeBufferPointer { s in b.withUnsafeMutableBufferPointer { d in horizontal(s, d, w, h, r) } }
            b.withUnsafeBufferPointer { s in a.withUnsafeMutableBufferPointer { d in vertical(s, d, w, h, r) } }
        }
        return try makeBitmap(width: w, height: h, bytes: a)
    }

    /// The three box radii whose passes together have variance `sigma`².
    static func radii(sigma: Double) -> [Int] {
        let ideal = (4 * sigma * sigma + 1).squareRoot()
        var lower = Int(ideal)
        if lower % 2 == 0 { lower -= 1 }
        lower = max(lower, 1)
        let wl = Double(lower)
        let m = Int(((12 * sigma * sigma - 3 * wl * wl - 12 * wl - 9) / (-4 * wl - 4)).rounded())
        return (0..<3).map { $0 < m ? (lower - 1) / 2 : (lower + 1) / 2 }
    }

    private static func horizontal(_ s: UnsafeBufferPointer<UInt8>, _ d: UnsafeMutableBufferPointer<UInt8>,
                                   _ w: Int, _ h: Int, _ r: Int) {
        let n = UInt64(2 * r + 1), half = n / 2, recip = (UInt64(1) << 32) / n + 1
        // (sum + half) / n as a multiply and shift: exact for boxes up to 4095 wide (256·n² < 2^32),
        // at most one level low beyond.
        @inline(__always) func div(_ v: UInt32) -> UInt8 { UInt8(truncatingIfNeeded: ((UInt64(v) + half) &* recip) >> 32) }
        for y in 0..<h {
            let row = y * w * 4
            var s0: UInt32 = 0, s1: UInt32 = 0, s2: UInt32 = 0, s3: UInt32 = 0
            for k in -r...r {
                let o = row + min(max(k, 0), w - 1) * 4
                s0 += UInt32(s[o]); s1 += UInt32(s[o + 1]); s2 += UInt32(s[o + 2]); s3 += UInt32(s[o + 3])
            }
            for x in 0..<w {
                let o = row + x * 4
                d[o] = div(s0); d[o + 1] = div(s1); d[o + 2] = div(s2); d[o + 3] = div(s3)
                let add = row + min(x + r + 1, w - 1) * 4, sub = row + max(x - r, 0) * 4
                s0 = s0 &+ UInt32(s[add]) &- UInt32(s[sub]); s1 = s1 &+ UInt32(s[add + 1]) &- UInt32(s[sub + 1])
                s2 = s2 &+ UInt32(s[add + 2]) &- UInt32(s[sub + 2]); s3 = s3 &+ UInt32(s[add + 3]) &- UInt32(s[sub + 3])
            }
        }
    }

    private static func vertical(_ s: UnsafeBufferPointer<UInt8>, _ d: UnsafeMutableBufferPointer<UInt8>,
                                 _ w: Int, _ h: Int, _ r: Int) {
        let n = w * 4, count = UInt64(2 * r + 1), half = count / 2, recip = (UInt64(1) << 32) / count + 1
        var sums = [UInt32](repeating: 0, count: n)
        sums.withUnsafeMutableBufferPointer { sum in
            for k in -r...r {
                let row = min(max(k, 0), h - 1) * n
                for i in 0..<n { sum[i] += UInt32(s[row + i]) }
            }
            for y in 0..<h {
                let out = y * n
                for i in 0..<n { d[out + i] = UInt8(truncatingIfNeeded: ((UInt64(sum[i]) + half) &* recip) >> 32) }
                let add = min(y + r + 1, h - 1) * n, sub = max(y - r, 0) * n
                for i in 0..<n { sum[i] = sum[i] &+ UInt32(s[add + i]) &- UInt32(s[sub + i]) }
            }
        }
    }
}
