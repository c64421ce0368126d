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

/// libvips's separable integer Gaussian mask (`vips_gaussmat(sigma, min_ampl, "separable",
/// TRUE, "precision", VIPS_PRECISION_INTEGER)`, 8.14, `libvips/create/gaussmat.c`): weights
/// `rint(20 · exp(-x² / 2σ²))` for offsets out to the last one whose Gaussian is at least
/// `minimumAmplitude` of the peak (searched below 8σ), divided by their sum. What
/// ``SmartCrop`` blurs its attention map with (0.2, `vips_gaussblur`'s cut) and
/// ``SharpenProcessor`` blurs L with (0.1, `vips_sharpen`'s).
struct IntegerGaussianMask {
    /// libvips refuses a mask reaching this far ("mask too large").
    static let sanityLimit = 5000

    /// The weights for offsets `-reach...reach`.
    let weights: [Int32]
    /// Offsets either side of the centre.
    let reach: Int
    /// The weights' sum (1 when they all round to 0, as libvips guards against dividing by 0).
    let scale: Int

    /// The mask for `sigma` (positive and finite), or `nil` where libvips fails: a mask that
    /// would reach ``sanityLimit`` offsets.
    init?(sigma: Double, minimumAmplitude: Double) {
        guard sigma > 0, sigma.isFinite else { return nil }
        let twoSigmaSquared = 2 * sigma * sigma
        // exp(-x² / 2σ²); the centre is 1 even where 2σ² underflows to 0 (σ below about 1e-162),
        // where libvips's 0 / 0 would be NaN (and `Int32(NaN)` traps): the one-weight mask.
        func gaussian(_ x: Int) -> Double { x == 0 ? 1 : exp(-Double(x * x) / twoSigmaSquared) }
        // `int max_x = VIPS_CLIP(0, 8 * sigma, MASK_SANITY)`: the clipped double, truncated.
        let limit = Int(min(max(0, 8 * sigma), Double(Self.sanityLimit)))
        var x = 0
        while x < limit, gaussian(x) >= minimumAmplitude { x += 1 }
        guard x < Self.sanityLimit else { return nil }
        reach = max(x - 1, 0)
        weights = (-reach...reach).map { Int32((20 * gaussian($0)).rounded(.toNearestOrEven)) }
        let total = weights.reduce(0) { $0 + Int($1) }
        scale = total == 0 ? 1 : total
    }
}
