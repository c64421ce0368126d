#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Cuts away a uniform border before the picture is resized (``ProcessingOptions/trim``), as
/// libvips's `find_trim` finds it (imgproxy's `trim`, ImageMagick's `-trim`): the picture is
/// flattened onto ``background``, median-filtered over 3 × 3 pixels, and every row and column
/// whose pixels all lie within ``threshold`` of ``background`` on each channel is border.
///
/// The search needs the whole picture, so a trimmed request decodes at full size (a decoder's
/// shrink-on-load is not used), then fits or fills the trimmed part to the target as usual.
/// A picture with no border, or nothing but border, is kept whole. Animations are not trimmed.
public struct Trim: Hashable, Sendable, CustomStringConvertible {
    /// How far a channel (0–255) may differ from ``background`` and still be border. Default 10
    /// (libvips's). Values below 0 are taken as 0.
    public var threshold: Double
    /// The border's colour; `nil` (the default) takes the top-left pixel's.
    public var background: RGBAColor?

    /// A trim with libvips's threshold, 10, against the top-left pixel's colour by default.
    public init(threshold: Double = 10, background: RGBAColor? = nil) {
        self.threshold = threshold.isNaN ? 10 : max(0, threshold)
        self.background = background
    }

    /// `"trim(10)"`, `"trim(10,#ffffff)"`: the trim's part of a rendition key.
    public var description: String {
        "trim(\(threshold)" + (background.map { ",\($0)" } ?? "") + ")"
    }
}
