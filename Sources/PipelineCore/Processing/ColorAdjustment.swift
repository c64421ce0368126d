#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Brightness, contrast, saturation, hue and gamma, applied together by
/// ``ImageProcessing/colorAdjustment(_:)`` in one pass over the pixels, in this order (each step
/// sees the 8-bit result of the one before, so a chain of the references below gives the same
/// pixels):
///
/// 1. ``brightnessOffset``: `c + offset`, clipped to 0…255 (imgproxy's `brightness`, additive;
///    `vips linear 1 OFFSET` on R, G and B).
/// 2. ``brightness``: Pillow's `ImageEnhance.Brightness(im).enhance(factor)`: `c × factor`.
/// 3. ``contrast``: Pillow's `ImageEnhance.Contrast`: a blend with the picture's mean grey
///    `m + factor × (c − m)`, `m` the mean of its Rec. 601 luma rounded to a level (each pixel
///    weighted by its alpha: Pillow counts invisible pixels' colour too, the one difference, and
///    none for an opaque picture).
/// 4. ``saturation``: Pillow's `ImageEnhance.Color`: a blend with the pixel's own Rec. 601 luma
///    `L + factor × (c − L)`, `L = (19595 R + 38470 G + 7471 B + 2¹⁵) >> 16` as Pillow's `convert("L")`.
/// 5. ``hue``: a rotation of the HSL hue by that many degrees, as ImageMagick's
///    `-modulate 100,100,H` with `H = 100 + degrees / 1.8`: each pixel keeps its largest and
///    smallest channel (HSL lightness and saturation) and its middle channel moves.
/// 6. ``gamma``: libvips's `gamma` (`vips gamma --exponent G`): `255 × (c / 255)^(1/G)`, truncated
///    as libvips computes it (white stays white, where libvips's single precision can make it 254).
///
/// Pillow's blends are computed as its `Image.blend` computes them: in single precision,
/// truncated toward zero and clipped. The steps work on straight colour (every reference defines
/// them there); premultiplied pixels that are not opaque are divided by their alpha and
/// multiplied back within the same pass. Alpha is never changed, and a transparent pixel stays
/// transparent.
public struct ColorAdjustment: Hashable, Sendable {
    /// Levels added to R, G and B first, −255…255 (imgproxy's `brightness`); 0 (default) adds none.
    public var brightnessOffset: Int
    /// Pillow's `Brightness` factor, 0…``maxFactor``: 1 (default) leaves the picture, 0 makes it black.
    public var brightness: Double
    /// Pillow's `Contrast` factor, 0…``maxFactor``: 1 (default) leaves the picture, 0 makes it its mean grey.
    public var contrast: Double
    /// Pillow's `Color` factor, 0…``maxFactor``: 1 (default) leaves the picture, 0 makes it grey.
    public var saturation: Double
    /// HSL hue rotation in degrees (positive: red towards yellow and green); 0 (default) none.
    public var hue: Double
    /// libvips's gamma exponent, 1/``maxFactor``…``maxFactor``: 1 (default) none; above 1 lightens the mid-tones.
    public var gamma: Double

    /// Creates an adjustment; every default leaves the picture as it is.
    public init(brightnessOffset: Int = 0, brightness: Double = 1, contrast: Double = 1, saturation: Double = 1,
                hue: Double = 0, gamma: Double = 1) {
        self.brightnessOffset = brightnessOffset
        self.brightness = brightness
        self.contrast = contrast
        self.saturation = saturation
        self.hue = hue
        self.gamma = gamma
    }

    /// The largest factor and gamma: beyond about 255 a factor already takes every channel that
    /// differs from its blend's grey to 0 or 255, and the bound keeps the arithmetic finite;
    /// the smallest gamma is its inverse.
    public static let maxFactor = 1_000.0

    /// Whether every component is at its default, so the pixels come out as they went in.
    public var isIdentity: Bool { self == ColorAdjustment() }

    /// The components that differ from their defaults, `name=value`, comma-separated, in the
    /// order they apply: `"contrast=1.5,hue=30.0"`.
    var parameters: String {
        var parts: [String] = []
        if brightnessOffset != 0 { parts.append("offset=\(brightnessOffset)") }
        if brightness != 1 { parts.append("brightness=\(brightness)") }
        if contrast != 1 { parts.append("contrast=\(contrast)") }
        if saturation != 1 { parts.append("saturation=\(saturation)") }
        if hue != 0 { parts.append("hue=\(hue)") }
        if gamma != 1 { parts.append("gamma=\(gamma)") }
        return parts.joined(separator: ",")
    }

    /// Throws ``ImageProcessingError/invalidParameter(_:)`` naming the first component out of range.
    func validate() throws {
        func check(_ ok: Bool, _ what: String) throws {
            guard ok else { throw ImageProcessingError.invalidParameter(what) }
        }
        try check((-255...255).contains(brightnessOffset), "brightness offset \(brightnessOffset) (expected −255…255)")
        for (factor, name) in [(brightness, "brightness"), (contrast, "contrast"), (saturation, "saturation")] {
            try check((0...Self.maxFactor).contains(factor), "\(name) \(factor) (expected 0…\(Int(Self.maxFactor)))")
        }
        try check(hue.isFinite && abs(hue) <= 1e6, "hue \(hue) (expected degrees)")
        try check((1 / Self.maxFactor...Self.maxFactor).contains(gamma), "gamma \(gamma) (expected 0.001…\(Int(Self.maxFactor)))")
    }
}
