#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Sharpening after a large reduction (``ProcessingOptions/sharpening``): a picture the decoder
/// and the resampler shrank by at least ``minimumReduction`` gets
/// ``ImageProcessor/sharpen(sigma:x1:y2:y3:m1:m2:)`` at ``sigma`` right after the resize, before
/// the request's processors. Downscaling averages away the fine contrast a photo had; a light
/// unsharp mask gives back the crispness people expect of a thumbnail (the "blurry resize"
/// complaints of thumbor #1367 and #1349), while a picture shown near its own size is left alone.
///
/// The caller chooses: off by default, so no existing output changes. Part of the memory key
/// and the rendition key, like every processing option.
public struct ReductionSharpening: Hashable, Sendable, CustomStringConvertible {
    /// The smallest reduction that is sharpened, in source pixels per output pixel along a side
    /// (2: pictures shown at half their size or smaller). Default 2; at least 1 (then every
    /// reduced picture is sharpened, and a picture at its own size never is).
    public var minimumReduction: Double
    /// The unsharp mask's standard deviation, in output pixels. Default 0.5, libvips's default
    /// for screen output; libvips's other defaults apply (at most 10 L* brighter, 20 darker).
    public var sigma: Double

    /// Sharpens reductions of `minimumReduction`× or more with `sigma`.
    public init(minimumReduction: Double = 2, sigma: Double = 0.5) {
        self.minimumReduction = minimumReduction
        self.sigma = sigma
    }

    /// `sharpen(σ)≥N×`, as the rendition key spells it.
    public var description: String { "sharpen(\(sigma))>=\(minimumReduction)x" }

    /// Whether a picture reduced `reduction` times (source pixels per output pixel) is sharpened.
    func applies(toReduction reduction: Double) -> Bool { reduction > 1 && reduction >= max(1, minimumReduction) }

    /// The processor it runs.
    var processor: ImageProcessor { .sharpen(sigma: sigma) }
}
