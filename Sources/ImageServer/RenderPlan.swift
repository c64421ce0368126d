import PipelineCore

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// imgproxy's geometry for one source size: what ``RenderOptions`` make of a picture of
/// `source` (upright) pixels, step by step as imgproxy's processing does them — crop a region
/// of the source, scale it (`resizing_type`, width and height with 0 meaning "from the other
/// side", `dpr`, `enlarge`), crop the scaled picture to the result size at the gravity, extend
/// it to the requested size, pad it. Pure arithmetic: ``Renderer`` turns it into a pipeline
/// request and processors.
struct RenderPlan: Sendable {
    /// The upright source size the plan was made for.
    var source: PixelSize
    /// The region of the source that is kept (`crop:`), in whole source pixels; the whole
    /// source without a crop.
    var region: PixelRect
    /// The region scaled: what the resize makes, before the result crop.
    var scaledSize: PixelSize
    /// The window of the scaled picture that is kept (`fill` and `force` past the box), in whole
    /// pixels; `nil`: all of it.
    var resultCrop: PixelRect?
    /// The smart gravity (`sm`) places ``resultCrop`` from the pixels, not from the offsets.
    var resultCropIsSmart: Bool
    /// The canvas the picture is extended to and where the picture sits on it, or `nil`.
    var extended: (canvas: PixelSize, x: Int, y: Int)?
    /// Padding in output pixels (already multiplied by the `dpr` scale), or `nil`.
    var padding: (top: Int, right: Int, bottom: Int, left: Int)?
    /// imgproxy's `dprScale`: how much `dpr` ends up multiplying sizes and offsets (less than
    /// `dpr` when the source is too small to be enlarged).
    var dprScale: Double

    /// The size after the result crop.
    var croppedSize: PixelSize {
        resultCrop.map { PixelSize(width: Int($0.width), height: Int($0.height)) } ?? scaledSize
    }

    /// The final size: extended, then padded.
    var outputSize: PixelSize {
        let base = extended?.canvas ?? croppedSize
        guard let padding else { return base }
        return PixelSize(width: base.width + padding.left + padding.right, height: base.height + padding.top + padding.bottom)
    }

    /// The plan for a source of `source` upright pixels. `isVector`: an SVG, which imgproxy
    /// enlarges whatever `enlarge` says.
    init(source: PixelSize, options: RenderOptions, isVector: Bool = false) {
        self.source = source
        let sw = max(1, source.width), sh = max(1, source.height)
        // 1. The source region (`crop:`), before anything is scaled (offsets not multiplied by dpr).
        var cropW = 0, cropH = 0
        if let crop = options.crop {
            cropW = Self.cropSide(sw, crop.width)
            cropH = Self.cropSide(sh, crop.height)
        }
        let regionW = Self.minNonZero(cropW, sw), regionH = Self.minNonZero(cropH, sh)
        if regionW < sw || regionH < sh {
            let gravity = options.crop?.gravity ?? options.gravity
            let (x, y) = Self.position(outer: PixelSize(width: sw, height: sh), inner: PixelSize(width: regionW, height: regionH),
                                       gravity: gravity, dpr: 1)
            region = PixelRect(x: Double(x), y: Double(y), width: Double(regionW), height: Double(regionH))
        } else {
            region = PixelRect(x: 0, y: 0, width: Double(sw), height: Double(sh))
        }
        // 2. The scale.
        let (wscale, hscale, dprScale) = Self.scale(width: regionW, height: regionH, options: options, isVector: isVector)
        self.dprScale = dprScale
        scaledSize = PixelSize(width: max(1, Self.integer(Double(regionW) * wscale)), height: max(1, Self.integer(Double(regionH) * hscale)))
        // 3. The result crop, at the gravity.
        var resultW = Self.scaled(options.width, dprScale), resultH = Self.scaled(options.height, dprScale)
        if options.resizingType == .fillDown {
            let diffW = Double(resultW) / Double(scaledSize.width), diffH = Double(resultH) / Double(scaledSize.height)
            if diffW > diffH, diffW > 1 {
                resultH = Self.integer(Double(scaledSize.width) * Double(resultH) / Double(resultW))
                resultW = scaledSize.width
            } else if diffH > diffW, diffH > 1 {
                resultW = Self.integer(Double(scaledSize.height) * Double(resultW) / Double(resultH))
                resultH = scaledSize.height
            }
        }
        let cropToW = Self.minNonZero(resultW, scaledSize.width), cropToH = Self.minNonZero(resultH, scaledSize.height)
        resultCropIsSmart = options.gravity.anchor.point == nil
        if cropToW < scaledSize.width || cropToH < scaledSize.height {
            let (x, y) = Self.position(outer: scaledSize, inner: PixelSize(width: cropToW, height: cropToH),
                                       gravity: options.gravity, dpr: dprScale)
            resultCrop = PixelRect(x: Double(x), y: Double(y), width: Double(cropToW), height: Double(cropToH))
        } else {
            resultCrop = nil
        }
        // 4. Extend to the requested size (the picture inside it at the extend gravity).
        let cropped = resultCrop.map { PixelSize(width: Int($0.width), height: Int($0.height)) } ?? scaledSize
        if let gravity = options.extend {
            let canvas = PixelSize(width: max(Self.scaled(options.width, dprScale), cropped.width),
                                   height: max(Self.scaled(options.height, dprScale), cropped.height))
            if canvas != cropped {
                let (x, y) = Self.position(outer: canvas, inner: cropped, gravity: gravity, dpr: dprScale)
                extended = (canvas, x, y)
            }
        }
        // 5. Padding, in pixels of the output before dpr.
        if let padding = options.padding {
            let sides = (top: Self.scaled(padding.top, dprScale), right: Self.scaled(padding.right, dprScale),
                         bottom: Self.scaled(padding.bottom, dprScale), left: Self.scaled(padding.left, dprScale))
            if sides.top + sides.right + sides.bottom + sides.left > 0 { self.padding = sides }
        }
    }

    /// The geometry options of `options` as a cache-key fragment: what a plan made from them
    /// depends on besides the source size.
    static func identifier(_ options: RenderOptions) -> String {
        func gravity(_ g: RenderOptions.Gravity?) -> String { g.map { "\($0.anchor):\($0.offsetX):\($0.offsetY)" } ?? "-" }
        let crop = options.crop.map { "\($0.width):\($0.height):\(gravity($0.gravity))" } ?? "-"
        let padding = options.padding.map { "\($0.top):\($0.right):\($0.bottom):\($0.left)" } ?? "-"
        return "\(options.resizingType.rawValue),\(options.width),\(options.height),\(options.dpr),\(options.enlarge),"
            + "\(gravity(options.gravity)),\(crop),\(gravity(options.extend)),\(padding)"
    }

    /// A `crop:` side: 0 is none (the whole side), 1 or more is pixels, below 1 a fraction of
    /// the side (at least one pixel).
    static func cropSide(_ side: Int, _ value: Double) -> Int {
        switch value {
        case _ where !(value > 0): return 0
        case 1...: return integer(value)
        default: return max(1, integer(Double(side) * value))
        }
    }

    /// `value` when it is not 0 and below `limit`, else `limit` (imgproxy's `MinNonZero`).
    static func minNonZero(_ value: Int, _ limit: Int) -> Int { value > 0 ? min(value, limit) : limit }

    /// `value` × `scale`, rounded (imgproxy's `imath.Scale`).
    static func scaled(_ value: Int, _ scale: Double) -> Int {
        value == 0 ? 0 : integer(Double(value) * scale)
    }

    /// `value` rounded, within ±`Int32.max` (a size no limit allows, refused later) and 0 for
    /// what is not a number: no option, however large or odd, traps a conversion.
    static func integer(_ value: Double, rule: FloatingPointRoundingRule = .toNearestOrAwayFromZero) -> Int {
        guard !value.isNaN else { return 0 }
        return Int(max(-Double(Int32.max), min(Double(Int32.max), value.rounded(rule))))
    }

    /// imgproxy's `calcScale` for a region of `width` × `height`: the horizontal and vertical
    /// scales and the `dpr` scale that applies to sizes and offsets afterwards.
    static func scale(width: Int, height: Int, options: RenderOptions, isVector: Bool) -> (Double, Double, Double) {
        let srcW = Double(width), srcH = Double(height)
        let dstW = options.width == 0 ? srcW : Double(options.width)
        let dstH = options.height == 0 ? srcH : Double(options.height)
        var wshrink = dstW == srcW ? 1 : srcW / dstW
        var hshrink = dstH == srcH ? 1 : srcH / dstH
        if wshrink != 1 || hshrink != 1 {
            var type = options.resizingType
            if type == .auto {
                let sameOrientation = (srcW - srcH >= 0) == (dstW - dstH >= 0)
                type = sameOrientation ? .fill : .fit
            }
            switch type {
            case _ where options.width == 0 && type != .force: wshrink = hshrink
            case _ where options.height == 0 && type != .force: hshrink = wshrink
            case .fit: (wshrink, hshrink) = (max(wshrink, hshrink), max(wshrink, hshrink))
            case .fill, .fillDown: (wshrink, hshrink) = (min(wshrink, hshrink), min(wshrink, hshrink))
            case .force, .auto: break
            }
        }
        var dprScale = options.dpr > 0 ? options.dpr : 1
        if !options.enlarge && !isVector {
            let minShrink = min(wshrink, hshrink)
            if minShrink < 1 {
                wshrink /= minShrink
                hshrink /= minShrink
                if options.extend == nil { dprScale /= minShrink }
            }
            // The largest dpr scale that does not enlarge the picture.
            dprScale = min(dprScale, min(wshrink, hshrink))
        }
        wshrink /= dprScale
        hshrink /= dprScale
        wshrink = min(wshrink, srcW)
        hshrink = min(hshrink, srcH)
        return (1 / wshrink, 1 / hshrink, dprScale)
    }

    /// imgproxy's `calcPosition` without overflow: where a box of `inner` goes inside `outer` at
    /// `gravity` — a compass point with its offsets (pixels × `dpr`, or below 1 a fraction of
    /// `outer`) moving it in from the sides it is anchored to, or a focal point centred — kept
    /// inside `outer`.
    static func position(outer: PixelSize, inner: PixelSize, gravity: RenderOptions.Gravity, dpr: Double) -> (x: Int, y: Int) {
        let (fx, fy) = gravity.anchor.point ?? (0.5, 0.5)
        var left: Int, top: Int
        let compass: Set<Double> = [0, 0.5, 1]
        if compass.contains(fx), compass.contains(fy) {
            func offset(_ value: Double, _ side: Int) -> Int {
                abs(value) >= 1 ? integer(value * dpr, rule: .toNearestOrEven) : integer(Double(side) * value, rule: .toNearestOrEven)
            }
            let offX = offset(gravity.offsetX, outer.width), offY = offset(gravity.offsetY, outer.height)
            func along(_ f: Double, _ outer: Int, _ inner: Int, _ offset: Int) -> Int {
                switch f {
                case 0: return offset
                case 1: return outer - inner - offset
                default: return (outer - inner + 1) / 2 + offset
                }
            }
            left = along(fx, outer.width, inner.width, offX)
            top = along(fy, outer.height, inner.height, offY)
        } else {
            left = integer(Double(outer.width) * fx) - inner.width / 2
            top = integer(Double(outer.height) * fy) - inner.height / 2
        }
        left = max(0, min(left, outer.width - inner.width))
        top = max(0, min(top, outer.height - inner.height))
        return (left, top)
    }
}
