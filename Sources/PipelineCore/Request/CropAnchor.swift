#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Which part of the picture a ``ContentMode/fill`` keeps when it crops: the centre (the
/// default), an edge or corner, a focal point, or the part a smart strategy finds most
/// interesting. Part of the ``ImageKey`` (and ignored, as `.center`, for ``ContentMode/fit``).
///
/// Gravity and focal points are geometry: the window is centred on the point as closely as the
/// picture allows, so ``top`` keeps the top edge and ``focalPoint(x:y:)`` at `(0.5, 0.5)` is
/// ``center``. ``attention`` and ``entropy`` look at the pixels, as `vipsthumbnail --smartcrop`
/// does, on the picture already shrunk by the decoder (so they cost little beside the decode).
/// ``detected(by:fallback:)`` keeps the regions a ``CropRegionDetecting`` finds (faces, from the
/// `FaceDetection` product's `.faces`), on the same shrunk picture.
/// An animation's frames share one window: a smart strategy is taken there as ``center``.
public struct CropAnchor: Hashable, Sendable, CustomStringConvertible {
    /// How the window is found.
    enum Strategy: Hashable, Sendable {
        /// Centred on this point, in 0…1 of the picture's width and height.
        case point(x: Double, y: Double)
        /// libvips's attention strategy (``CropAnchor/attention``).
        case attention
        /// libvips's entropy strategy (``CropAnchor/entropy``).
        case entropy
        /// The regions a detector finds, else `fallback` (``CropAnchor/detected(by:fallback:)``).
        indirect case detected(RegionDetector, fallback: CropAnchor)
    }

    /// A detector as the anchor holds it: compared and hashed by its identifier, as
    /// ``ImageProcessor`` compares processors, so an anchor stays a usable key part.
    struct RegionDetector: Hashable, Sendable {
        let base: any CropRegionDetecting

        static func == (lhs: RegionDetector, rhs: RegionDetector) -> Bool { lhs.base.identifier == rhs.base.identifier }

        func hash(into hasher: inout Hasher) { hasher.combine(base.identifier) }
    }

    let strategy: Strategy

    private init(_ strategy: Strategy) { self.strategy = strategy }

    /// The centre of the picture. The default.
    public static let center = CropAnchor(.point(x: 0.5, y: 0.5))
    /// The top edge, centred horizontally.
    public static let top = CropAnchor(.point(x: 0.5, y: 0))
    /// The bottom edge, centred horizontally.
    public static let bottom = CropAnchor(.point(x: 0.5, y: 1))
    /// The left edge, centred vertically.
    public static let left = CropAnchor(.point(x: 0, y: 0.5))
    /// The right edge, centred vertically.
    public static let right = CropAnchor(.point(x: 1, y: 0.5))
    /// The top-left corner.
    public static let topLeft = CropAnchor(.point(x: 0, y: 0))
    /// The top-right corner.
    public static let topRight = CropAnchor(.point(x: 1, y: 0))
    /// The bottom-left corner.
    public static let bottomLeft = CropAnchor(.point(x: 0, y: 1))
    /// The bottom-right corner.
    public static let bottomRight = CropAnchor(.point(x: 1, y: 1))

    /// The window centred on (`x`, `y`), each 0…1 of the upright picture's width and height
    /// (imgproxy's `fp:x:y`, weserv's `fpx`/`fpy`), as closely as the picture's edges allow.
    /// Values outside 0…1 are clamped to it, and a value that is not a number is the centre, so
    /// every anchor is a usable key.
    public static func focalPoint(x: Double, y: Double) -> CropAnchor {
        func unit(_ v: Double) -> Double { v.isNaN ? 0.5 : min(1, max(0, v)) }
        return CropAnchor(.point(x: unit(x), y: unit(y)))
    }

    /// libvips's `attention` (`vips_smartcrop`, 8.14): edges of the luminance, skin tones and
    /// the red–green axis of colour, summed on a 32 × 32 copy, blurred over the size of the
    /// window, and the window centred on the strongest place. Good at people and at one subject
    /// on a plain background.
    public static let attention = CropAnchor(.attention)

    /// libvips's `entropy`: the window shrinks in steps from the whole picture, each step cutting
    /// away whichever opposite slice has the lower histogram entropy (less detail).
    public static let entropy = CropAnchor(.entropy)

    /// The window placed to keep the regions `detector` finds on the shrunk picture (see
    /// ``CropRegionDetecting``; at most the whole picture at the fill's scale, so a region of a
    /// few output pixels may go unfound), mapped to the source: all of them when their union fits in the
    /// window; otherwise the largest region and, largest first, each further region that still
    /// fits with those kept; centred on the largest region alone when even it is larger than the
    /// window. Where the detector finds nothing, `fallback` places the window (``attention`` by
    /// default; a geometric fallback centres the window on its point, a detecting one is taken
    /// as ``attention``).
    public static func detected(by detector: any CropRegionDetecting, fallback: CropAnchor = .attention) -> CropAnchor {
        let fallback = if case .detected = fallback.strategy { CropAnchor.attention } else { fallback }
        return CropAnchor(.detected(RegionDetector(base: detector), fallback: fallback))
    }

    /// `"center"`, `"top"`, `"bottomRight"`, `"focal(0.25,0.6)"`, `"attention"`, `"entropy"`,
    /// `"detected(IDENTIFIER,attention)"`: also the anchor's part of the disk-rendition key.
    public var description: String {
        switch strategy {
        case .attention: return "attention"
        case .entropy: return "entropy"
        case .detected(let detector, let fallback): return "detected(\(detector.base.identifier),\(fallback))"
        case .point(let x, let y):
            let names: [[String]] = [["topLeft", "top", "topRight"], ["left", "center", "right"],
                                     ["bottomLeft", "bottom", "bottomRight"]]
            let column = [0, 0.5, 1].firstIndex(of: x), row = [0, 0.5, 1].firstIndex(of: y)
            if let column, let row { return names[row][column] }
            return "focal(\(x),\(y))"
        }
    }

    /// The focal point a geometric anchor centres on, each 0…1 of the picture (``top`` is
    /// `(0.5, 0)`); `nil` for the smart strategies.
    public var point: (x: Double, y: Double)? {
        if case .point(let x, let y) = strategy { return (x, y) }
        return nil
    }
}
