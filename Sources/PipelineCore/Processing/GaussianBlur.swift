import Foundation

/// ``ImageProcessor/gaussianBlur(radius:)``: a true Gaussian (standard deviation `radius`),
/// applied as two 1-D passes with 16-bit fixed-point weights, edges extended. Blurring
/// premultiplied pixels is what keeps colour from bleeding out of transparent areas.
struct GaussianBlurProcessor: ImageProcessing {
    let radius: Double
    var identifier: String { "gaussianBlur(\(radius))" }

    func process(_ bitmap: Bitmap) throws -> Bitmap {
        guard radius.isFinite else { throw ImageProcessingError.invalidParameter("blur radius \(radius)") }
        guard radius > 0 else { return bitmap }
        // Limit the kernel to the picture: a wider one only repeats edge pixels.
        let reach = min(Int((radius * 3).rounded(.up)), max(bitmap.width, bitmap.height))
        let kernel = Self.kernel(sigma: radius, reach: reach)
        let w = bitmap.width, h = bitmap.height
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
                kernel.withUnsafeBufferPointer { k in
                    // Columns: a "line" is a column, stepping one row per pixel.
                    Self.pass(src, rowStride: 4, pixelStride: w * 4, into: dst, dstRowStride: 4,
                              dstPixelStride: w * 4, lines: w, length: h, kernel: k, reach: reach)
                }
            }
        }
        return try makeBitmap(width: w, height: h, bytes: out)
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

/// The three-pass box approximation of a Gaussian (each box of width chosen so the three
/// together have the Gaussian's variance), for comparison in the benchmark: the method
/// Pillow's `GaussianBlur` uses. Not a processor of its own.
public enum BoxBlurApproximation {
    /// Blurs `bitmap` with three box passes per axis approximating a Gaussian of `sigma`.
    public static func blur(_ bitmap: Bitmap, sigma: Double) -> Bitmap {
        guard sigma > 0, sigma.isFinite else { return bitmap }
        // Box radius r with 3 passes: variance 3·((2r+1)² − 1)/12 = σ².
        let r = max(1, Int(((4 * sigma * sigma + 1).squareRoot() - 1).rounded() / 2))
        let w = bitmap.width, h = bitmap.height
        var a = bitmap.unpaddedBytes(), b = [UInt8](repeating: 0, count: w * h * 4)
        for _ in 0..<3 {
            box(&a, &b, lines: h, length: w, lineStride: w * 4, pixelStride: 4, r: r)
            box(&b, &a, lines: w, length: h, lineStride: 4, pixelStride: w * 4, r: r)
        }
        return Bitmap(width: w, height: h, bytesPerRow: w * 4, bytes: a) ?? bitmap
    }

    private static func box(_ src: inout [UInt8], _ dst: inout [UInt8], lines: Int, length: Int,
                            lineStride: Int, pixelStride: Int, r: Int) {
        let n = UInt32(2 * r + 1)
        src.withUnsafeBufferPointer { s in
            dst.withUnsafeMutableBufferPointer { d in
                for line in 0..<lines {
                    let base = line * lineStride
                    for c in 0..<4 {
                        var sum: UInt32 = 0
                        for k in -r...r { sum += UInt32(s[base + min(max(k, 0), length - 1) * pixelStride + c]) }
                        for i in 0..<length {
                            d[base + i * pixelStride + c] = UInt8(truncatingIfNeeded: (sum + n / 2) / n)
                            let add = min(i + r + 1, length - 1), sub = max(i - r, 0)
                            sum = sum + UInt32(s[base + add * pixelStride + c]) - UInt32(s[base + sub * pixelStride + c])
                        }
                    }
                }
            }
        }
    }
}
