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

/// ``ImageProcessor/gaussianBlur(radius:)``: a true Gaussian (standard deviation `radius`) up
/// to `exactLimit` (``ExactGaussianBlur``), the three-pass box approximation above
/// (``BoxBlurApproximation``). Blurring premultiplied pixels is what keeps colour from bleeding
/// out of transparent areas.
struct GaussianBlurProcessor: ImageProcessing {
    let radius: Double
    var identifier: String { "gaussianBlur(\(radius))" }

    /// Above this standard deviation the three-pass box approximation runs instead of the
    /// exact kernel: its cost does not grow with the radius (the exact kernel's does, linearly),
    /// and its error is then about one level in the interior (the method Pillow uses at every
    /// radius), more near the edges. Up to 12 the exact kernel is the faster of the two
    /// (both timed at every radius on 512×512 and 2048×2048 pictures: at 16 to 20 the two cross,
    /// depending on the picture's size), so the more accurate one runs wherever it costs less.
    /// `Benchmarks/processors.sh` times ``ImageProcessor/gaussianBlur(radius:)`` either side of it.
    static let exactLimit = 12.0

    func process(_ bitmap: Bitmap) throws -> Bitmap {
        guard radius.isFinite, radius <= 100_000 else { throw ImageProcessingError.invalidParameter("blur radius \(radius)") }
        guard radius > 0 else { return bitmap }
        if radius > Self.exactLimit { return try BoxBlurApproximation.blurChecked(bitmap, sigma: radius) }
        return try ExactGaussianBlur.blurChecked(bitmap, sigma: radius)
    }
}

/// The exact Gaussian blur: the sampled kernel `exp(-x²/2σ²)` for offsets up to ⌈3σ⌉ (at most
/// the picture's longer side), normalised, applied along rows then along columns, edges
/// extended. What ``ImageProcessor/gaussianBlur(radius:)`` runs up to a standard deviation of 12.
///
/// Every channel comes out as the true Gaussian of the input rounded to the nearest level
/// (within 0.6 of it up to σ 20, edges included; the products' dropped fractions, made good on
/// average, add noise that grows with the number of taps: within 0.9 at σ 60).
///
/// Fixed point, 16 bits throughout: weights are 16-bit
/// fractions summing to 2¹⁶, the horizontal pass keeps 7 fractional bits (values × 128), and
/// both passes add mirrored taps first (`w · (p[i-k] + p[i+k])`, the kernel is symmetric) and
/// multiply with the high half of a 16×16-bit product, so each inner loop is a plain loop over
/// a row of `UInt16`s that the compiler vectorises (eight lanes on SSE2, `pmulhuw`). Rows are
/// blurred horizontally into a ring of 2·⌈3σ⌉+1 rows, which the vertical pass reads row by row
/// as it goes: both passes stream along rows and the intermediate stays in cache. Sums only
/// grow with their inputs, so a colour never exceeds its alpha after blurring.
enum ExactGaussianBlur {
    /// Blurs `bitmap` (premultiplied RGBA8) with the exact Gaussian of standard deviation
    /// `sigma`, whatever its size (the cost grows with `sigma`); returned unchanged for a `sigma`
    /// that is not finite or below 0.2 (where the kernel rounds to the identity).
    static func blur(_ bitmap: Bitmap, sigma: Double) -> Bitmap {
        (try? blurChecked(bitmap, sigma: sigma)) ?? bitmap
    }

    /// Columns of the vertical pass's accumulator row done at a time (4 KiB: stays in L1).
    private static let block = 2048

    static func blurChecked(_ bitmap: Bitmap, sigma: Double) throws -> Bitmap {
        let w = bitmap.width, h = bitmap.height
        // Below σ 0.2 every off-centre weight rounds to 0 (e^-12.5 · 2¹⁶ < 0.5): the identity
        // (and 2σ² may be 0 in Double, making the kernel NaN).
        guard sigma >= 0.2, sigma.isFinite, w > 0, h > 0 else { return bitmap }
        // Limit the kernel to the picture: a wider one only repeats edge pixels (in Double first:
        // 3σ may not fit an Int).
        let reach = Int(min((sigma * 3).rounded(.up), Double(max(w, h))))
        let kernel = kernel(sigma: sigma, reach: reach)
        // A centre weight of the whole 2¹⁶: every other tap rounds to 0, the blur is the identity.
        guard kernel[reach] < 65536 else { return bitmap }
        let n = w * 4, window = min(2 * reach + 1, h), rowStride = bitmap.bytesPerRow
        // Each product's high half drops its fraction: half a unit per tap on average (the
        // centre and `reach` pairs), added back up front. The horizontal sums then stay at most
        // 32640 + 127, so a pair of them fits 16 bits; what that cap leaves out of the horizontal
        // bias the vertical one adds (sums below 32640 + 127 + 64 + 16384: no wrap), and the
        // result is clamped to 255.
        let loss = (reach + 1) / 2
        let biasH = UInt16(min(loss, 127)), biasV = UInt16(64 + min(loss + max(loss - 127, 0), 16384))
        var out = [UInt8](repeating: 0, count: n * h)
        // Scratch: the ring of horizontally blurred rows (row r in slot r % window), one source
        // row widened with `reach` copies of its edge pixels each side, the vertical pass's
        // accumulators, the taps' weights (centre, then offsets 1...reach) and row offsets.
        let ring = UnsafeMutablePointer<UInt16>.allocate(capacity: window * n)
        let padded = UnsafeMutablePointer<UInt16>.allocate(capacity: n + 8 * reach)
        let acc = UnsafeMutablePointer<UInt16>.allocate(capacity: min(n, block))
        let weights = UnsafeMutablePointer<UInt16>.allocate(capacity: reach + 1)
        let offsets = UnsafeMutablePointer<Int>.allocate(capacity: 4 * (reach + 1))
        defer { ring.deallocate(); padded.deallocate(); acc.deallocate(); weights.deallocate(); offsets.deallocate() }
        // Each weight fits 16 bits: the centre is less than the whole, the others under a third.
        for k in 0...reach { weights[k] = UInt16(truncatingIfNeeded: kernel[reach + k]) }
        // Where the taps k pixels left and right (or rows up and down) start.
        let left = offsets, right = offsets + (reach + 1), up = offsets + 2 * (reach + 1), down = offsets + 3 * (reach + 1)
        for k in 0...reach { left[k] = -4 * k; right[k] = 4 * k }
        let mid = padded + 4 * reach
        bitmap.withUnsafeBytes { bytes in
            guard let src = bytes.baseAddress else { return }
            out.withUnsafeMutableBufferPointer { out in
                guard let out = out.baseAddress else { return }
                var ready = 0  // rows blurred horizontally so far
                for y in 0..<h {
                    // Horizontal pass, rows up to y + reach: widen (× 128), extend the edges, convolve.
                    while ready <= min(y + reach, h - 1) {
                        let row = src + ready * rowStride
                        for i in 0..<n { mid[i] = UInt16(row[i]) &<< 7 }
                        for x in 0..<reach {
                            for c in 0..<4 {
                                padded[x * 4 + c] = mid[c]
                                mid[n + x * 4 + c] = mid[n - 4 + c]
                            }
                        }
                        convolve(into: ring + (ready % window) * n, count: n, centre: mid, lower: left, upper: right,
                                 base: UnsafePointer(mid), weights: weights, reach: reach, bias: biasH)
                        ready += 1
                    }
                    // Vertical pass for row y: rows y ± k, clamped to the picture, from the ring.
                    for k in 0...reach {
                        up[k] = (max(y - k, 0) % window) * n
                        down[k] = (min(y + k, h - 1) % window) * n
                    }
                    var j = 0
                    while j < n {
                        let count = min(block, n - j), base = UnsafePointer(ring + j)
                        convolve(into: acc, count: count, centre: base + up[0], lower: up, upper: down,
                                 base: base, weights: weights, reach: reach, bias: biasV)
                        let dst = out + y * n + j
                        for i in 0..<count { dst[i] = UInt8(truncatingIfNeeded: min(acc[i] &>> 7, 255)) }
                        j += count
                    }
                }
            }
        }
        return try makeBitmap(width: w, height: h, bytes: out)
    }

    /// `count` sums `bias + w₀·centre[i] + Σₖ wₖ·(base[lower[k] + i] + base[upper[k] + i])` for k
    /// in 1...reach, each product the high half of a 16×16-bit one, into `acc`. Taps four and two
    /// at a time, so the accumulators are loaded and stored once per group.
    private static func convolve(into acc: UnsafeMutablePointer<UInt16>, count: Int, centre: UnsafePointer<UInt16>,
                                 lower: UnsafePointer<Int>, upper: UnsafePointer<Int>, base: UnsafePointer<UInt16>,
                                 weights: UnsafePointer<UInt16>, reach: Int, bias: UInt16) {
        let w0 = weights[0]
        for i in 0..<count { acc[i] = bias &+ high(centre[i], w0) }
        var k = 1
        while k + 3 <= reach {
            let a0 = base + lower[k], b0 = base + upper[k], a1 = base + lower[k + 1], b1 = base + upper[k + 1]
            let a2 = base + lower[k + 2], b2 = base + upper[k + 2], a3 = base + lower[k + 3], b3 = base + upper[k + 3]
            let w0 = weights[k], w1 = weights[k + 1], w2 = weights[k + 2], w3 = weights[k + 3]
            for i in 0..<count {
                acc[i] &+= (high(a0[i] &+ b0[i], w0) &+ high(a1[i] &+ b1[i], w1)) &+ (high(a2[i] &+ b2[i], w2) &+ high(a3[i] &+ b3[i], w3))
            }
            k += 4
        }
        if k + 1 <= reach {
            let a0 = base + lower[k], b0 = base + upper[k], a1 = base + lower[k + 1], b1 = base + upper[k + 1]
            let w0 = weights[k], w1 = weights[k + 1]
            for i in 0..<count { acc[i] &+= high(a0[i] &+ b0[i], w0) &+ high(a1[i] &+ b1[i], w1) }
            k += 2
        }
        if k <= reach {
            let a0 = base + lower[k], b0 = base + upper[k], w0 = weights[k]
            for i in 0..<count { acc[i] &+= high(a0[i] &+ b0[i], w0) }
        }
    }

    /// The high half of `x · w` (both 16-bit): written so the compiler emits `pmulhuw`.
    @inline(__always)
    private static func high(_ x: UInt16, _ w: UInt16) -> UInt16 { UInt16(truncatingIfNeeded: (UInt32(x) &* UInt32(w)) &>> 16) }

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
}

/// The three-pass box approximation of a Gaussian (box widths chosen so the three passes
/// together have the Gaussian's variance, two sizes mixed as in Kovesi's method), edges
/// extended: what ``ImageProcessor/gaussianBlur(radius:)`` uses above a standard deviation of 12.
enum BoxBlurApproximation {
    /// Blurs `bitmap` with three box passes per axis approximating a Gaussian of `sigma`
    /// (returned unchanged for a `sigma` that is not positive and finite).
    static func blur(_ bitmap: Bitmap, sigma: Double) -> Bitmap {
        (try? blurChecked(bitmap, sigma: sigma)) ?? bitmap
    }

    static func blurChecked(_ bitmap: Bitmap, sigma: Double) throws -> Bitmap {
        guard sigma > 0, sigma.isFinite else { return bitmap }
        let w = bitmap.width, h = bitmap.height
        var a = bitmap.unpaddedBytes(), b = [UInt8](repeating: 0, count: w * h * 4)
        // Boxes wider than the picture are cut to it below; capping σ first keeps σ² and the box
        // widths finite and within Int.
        for r in radii(sigma: min(sigma, 1e7)) {
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
