/// A rectangle in source pixel coordinates; fractional so a crop can be exact at any scale.
public struct PixelRect: Hashable, Sendable {
    /// Left edge.
    public var x: Double
    /// Top edge.
    public var y: Double
    /// Width.
    public var width: Double
    /// Height.
    public var height: Double

    /// Creates a rectangle.
    public init(x: Double, y: Double, width: Double, height: Double) {
        self.x = x
        self.y = y
        self.width = width
        self.height = height
    }

    /// The whole of a picture of `size`.
    public init(_ size: PixelSize) {
        self.init(x: 0, y: 0, width: Double(size.width), height: Double(size.height))
    }

    /// The same rectangle in a copy of the picture scaled from `from` to `to`.
    public func scaled(from: PixelSize, to: PixelSize) -> PixelRect {
        let sx = Double(to.width) / Double(from.width), sy = Double(to.height) / Double(from.height)
        return PixelRect(x: x * sx, y: y * sy, width: width * sx, height: height * sy)
    }
}

/// How a picture of one size becomes the requested size: what to decode, what to crop, what
/// to output. Decoders get ``scaledSize`` as their target; the resampler does the rest.
public struct ResizePlan: Hashable, Sendable {
    /// The upright size of the source picture.
    public var sourceSize: PixelSize
    /// The whole picture at the chosen scale (before the `.fill` crop): the decoder's target.
    /// Never larger than ``sourceSize``: when the plan upscales, this is the source itself.
    public var scaledSize: PixelSize
    /// The part of the source (in source pixels) that the output shows.
    public var crop: PixelRect
    /// The exact size of the result.
    public var outputSize: PixelSize

    /// Plans `source` → `target`.
    ///
    /// `.fit` scales by `min(tw/sw, th/sh)`, `.fill` by `max(tw/sw, th/sh)` and crops to the
    /// target, with the window centred on `anchor`'s point as closely as the edges allow (the
    /// centre by default; a smart anchor's window is centred here and moved when the pixels are
    /// known). Without `allowsUpscaling` the scale is capped at 1: a small picture comes back
    /// at its own size (in `.fill`, cropped to the target's aspect ratio).
    ///
    /// With `rendersAtAnySize` (a vector source, ``ImageInfo/isVector``) the decoder draws the
    /// picture at the scale chosen, larger than `source` too: the plan upscales whatever
    /// `allowsUpscaling` says, and ``scaledSize`` is the whole picture at that scale, uncapped.
    public init(source: PixelSize, target: TargetSize, contentMode: ContentMode, anchor: CropAnchor = .center,
                allowsUpscaling: Bool = false, rendersAtAnySize: Bool = false) {
        let allowsUpscaling = allowsUpscaling || rendersAtAnySize
        sourceSize = source
        guard case .pixels(let wanted) = target, wanted.isValid, source.isValid else {
            scaledSize = source
            crop = PixelRect(source)
            outputSize = source
            return
        }
        let sw = Double(source.width), sh = Double(source.height)
        let tw = Double(wanted.width), th = Double(wanted.height)
        switch contentMode {
        case .fit:
            let scale = allowsUpscaling ? min(tw / sw, th / sh) : min(1, tw / sw, th / sh)
            let out = PixelSize(width: max(1, Int((sw * scale).rounded())), height: max(1, Int((sh * scale).rounded())))
            scaledSize = scale > 1 && !rendersAtAnySize ? source : out  // decoders never upscale; the resampler does
            outputSize = out
            crop = PixelRect(source)
        case .fill:
            var scale = max(tw / sw, th / sh)
            var outW = tw, outH = th
            if scale > 1 && !allowsUpscaling {
                // Keep the target's aspect ratio at the largest size the source can give.
                let shrink = 1 / scale
                scale = 1
                outW = max(1, (tw * shrink).rounded())
                outH = max(1, (th * shrink).rounded())
            }
            // The whole picture at `scale`, in Doubles: at an extreme aspect ratio with upscaling it
            // can be far larger than anything that should be allocated (or fit in an Int).
            let coverW = max(1, (sw * scale).rounded()), coverH = max(1, (sh * scale).rounded())
            outputSize = PixelSize(width: Int(min(outW, coverW)), height: Int(min(outH, coverH)))
            // Decoders never upscale: past scale 1 they decode the source and the resampler
            // enlarges only the crop (a 1×3000 strip filled into 3000×1 is not 3000×9,000,000).
            // A vector source is drawn at the cover size (its pixel limit bounds that).
            scaledSize = scale > 1 && !rendersAtAnySize ? source : PixelSize(width: Int(coverW), height: Int(coverH))
            let cw = Double(outputSize.width) / scale, ch = Double(outputSize.height) / scale
            // Centred on the anchor's point, inside the picture (centred when rounding made the
            // window a hair wider than the picture).
            func place(_ f: Double, along s: Double, window c: Double) -> Double {
                c >= s ? (s - c) / 2 : min(s - c, max(0, f * s - c / 2))
            }
            let (fx, fy) = anchor.point ?? (0.5, 0.5)
            crop = PixelRect(x: place(fx, along: sw, window: cw), y: place(fy, along: sh, window: ch), width: cw, height: ch)
        }
    }

    /// `true` when the source already is the output: nothing to resample.
    public var isIdentity: Bool { outputSize == sourceSize && crop == PixelRect(sourceSize) }
}
