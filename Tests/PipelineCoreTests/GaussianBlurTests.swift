import Foundation
@testable import PipelineCore
import Testing

/// A deterministic premultiplied picture with every alpha level (a linear congruential
/// generator, so the same pixels on every run): colour drawn in `0...alpha`.
private func noisyPremultiplied(_ width: Int, _ height: Int, seed: UInt32 = 1) -> Bitmap {
    var state = seed
    func next() -> UInt32 {
        state = state &* 1_664_525 &+ 1_013_904_223
        return state >> 8
    }
    var bytes = [UInt8]()
    for _ in 0..<(width * height) {
        let a = next() % 256
        bytes += [UInt8(next() % (a + 1)), UInt8(next() % (a + 1)), UInt8(next() % (a + 1)), UInt8(a)]
    }
    return Bitmap(width: width, height: height, bytesPerRow: width * 4, bytes: bytes)!
}

/// The exact Gaussian of standard deviation `sigma` on every channel of `bitmap`, in Double:
/// weights `exp(-x²/2σ²)` for offsets `-reach...reach`, `reach = min(⌈3σ⌉, max(width, height))`
/// (the processor's limit), normalised to sum 1, applied along rows then columns, edges extended.
private func exactGaussian(_ bitmap: Bitmap, sigma: Double) -> [Double] {
    let w = bitmap.width, h = bitmap.height
    let reach = min(Int((sigma * 3).rounded(.up)), max(w, h))
    let raw = (-reach...reach).map { exp(-Double($0 * $0) / (2 * sigma * sigma)) }
    let total = raw.reduce(0, +)
    let k = raw.map { $0 / total }
    let src = bitmap.withUnsafeBytes { Array($0) }
    var rows = [Double](repeating: 0, count: w * h * 4), out = rows
    for y in 0..<h {
        for x in 0..<w {
            for c in 0..<4 {
                var s = 0.0
                for j in -reach...reach { s += k[j + reach] * Double(src[y * bitmap.bytesPerRow + min(max(x + j, 0), w - 1) * 4 + c]) }
                rows[(y * w + x) * 4 + c] = s
            }
        }
    }
    for y in 0..<h {
        for x in 0..<w {
            for c in 0..<4 {
                var s = 0.0
                for j in -reach...reach { s += k[j + reach] * rows[(min(max(y + j, 0), h - 1) * w + x) * 4 + c] }
                out[(y * w + x) * 4 + c] = s
            }
        }
    }
    return out
}

/// The largest difference between `bitmap` and `reference` over every channel of every pixel,
/// and whether any colour exceeds its alpha.
private func compare(_ bitmap: Bitmap, _ reference: [Double]) -> (worst: Double, premultiplied: Bool) {
    var worst = 0.0, premultiplied = true
    for y in 0..<bitmap.height {
        for x in 0..<bitmap.width {
            let p = bitmap.pixel(x: x, y: y), i = (y * bitmap.width + x) * 4
            for (c, v) in [p.r, p.g, p.b, p.a].enumerated() { worst = max(worst, abs(Double(v) - reference[i + c])) }
            if p.r > p.a || p.g > p.a || p.b > p.a { premultiplied = false }
        }
    }
    return (worst, premultiplied)
}

@Suite struct GaussianBlurTests {
    /// The exact path rounds the true Gaussian to the nearest level, edges included: rounding
    /// alone is 0.5 off at most; the 16-bit weights and the 7 fractional bits kept between the
    /// two passes add under 0.06 (measured 0.55 at worst over σ 0.3 to 20), so 0.6 allows no
    /// level off anywhere. The old kernel rounded to whole levels between passes (up to 0.99).
    /// Every radius up to the exact path's limit, 12.
    @Test(arguments: [0.5, 1, 1.5, 2, 3, 5, 8, 12])
    func exactPathIsTheGaussianRoundedToTheNearestLevel(sigma: Double) throws {
        // 530 wide: the vertical pass works in blocks of 2048 channels, so rows span two.
        for (w, h) in [(61, 37), (1, 9), (9, 1), (3, 2), (1, 1), (530, 5)] {
            let input = noisyPremultiplied(w, h, seed: UInt32(w * 100 + h))
            let out = try ImageProcessor.gaussianBlur(radius: sigma).process(input)
            #expect(out.width == w && out.height == h)
            let (worst, premultiplied) = compare(out, exactGaussian(input, sigma: sigma))
            #expect(worst <= 0.6, "σ \(sigma), \(w)×\(h): worst difference \(worst)")
            #expect(premultiplied, "σ \(sigma), \(w)×\(h): colour above alpha")
        }
    }

    @Test func theExactKernelRunsUpToTwelveAndTheBoxesAbove() throws {
        let input = noisyPremultiplied(40, 30)
        for sigma in [2.0, 12] { #expect(try ImageProcessor.gaussianBlur(radius: sigma).process(input) == ExactGaussianBlur.blur(input, sigma: sigma)) }
        for sigma in [12.5, 20] { #expect(try ImageProcessor.gaussianBlur(radius: sigma).process(input) == BoxBlurApproximation.blur(input, sigma: sigma)) }
        // The exact path forced at radii where the processor would not use it: at σ 20 as exact
        // as below; at σ 60 (181 taps each way) the products' dropped fractions, made good on
        // average, vary by up to a few 128ths of a level from pixel to pixel (0.86 measured at
        // worst), and without making them good the loss alone is 0.9 of a level. A flat
        // picture stays flat.
        for (sigma, picture, bound) in [(20.0, input, 0.6), (60, noisyPremultiplied(200, 3), 1)] {
            let (worst, premultiplied) = compare(ExactGaussianBlur.blur(picture, sigma: sigma), exactGaussian(picture, sigma: sigma))
            #expect(worst <= bound && premultiplied, "σ \(sigma): worst difference \(worst)")
        }
        let flat = Bitmap(width: 200, height: 3, bytesPerRow: 800, bytes: [UInt8](repeating: 255, count: 2400))!
        #expect(ExactGaussianBlur.blur(flat, sigma: 60) == flat)
    }

    @Test func hugeAndTinyRadiiNeitherTrapNorAllocate() throws {
        // 3σ or σ² beyond Int or Double: both paths cut their kernels to the picture's size
        // (every pixel then tends to the mean of the edge-extended picture), no trap.
        let input = noisyPremultiplied(5, 4)
        for sigma in [1e6, 1e200, .greatestFiniteMagnitude] {
            #expect(ExactGaussianBlur.blur(input, sigma: sigma).size == input.size)
            #expect(BoxBlurApproximation.blur(input, sigma: sigma).size == input.size)
        }
        #expect(throws: ImageProcessingError.self) { try ImageProcessor.gaussianBlur(radius: 1e200).process(input) }
        // So small that 2σ² is 0 in Double (or every off-centre weight rounds to 0): unchanged.
        for sigma in [0.1, 1e-200, .leastNonzeroMagnitude] { #expect(try ImageProcessor.gaussianBlur(radius: sigma).process(input) == input) }
    }

    @Test func exactPathReadsPaddedRowsAndKeepsOpaqueAndFlatAreasExact() throws {
        // Rows with padding after them (bytesPerRow > width × 4): the padding must not leak in.
        let w = 23, h = 11, stride = w * 4 + 12
        var bytes = [UInt8](repeating: 7, count: stride * h)
        for y in 0..<h {
            for x in 0..<w { bytes.replaceSubrange((y * stride + x * 4)..<(y * stride + x * 4 + 4), with: [90, UInt8(x * 11), 200, 255]) }
        }
        let input = Bitmap(width: w, height: h, bytesPerRow: stride, bytes: bytes)!
        let out = try ImageProcessor.gaussianBlur(radius: 2).process(input)
        let reference = exactGaussian(input, sigma: 2)
        #expect(compare(out, reference).worst <= 0.6)
        for y in 0..<h {
            for x in 0..<w {
                let p = out.pixel(x: x, y: y)
                #expect(p.r == 90 && p.b == 200 && p.a == 255, "at \(x),\(y): \(p)")
            }
        }
    }
}
