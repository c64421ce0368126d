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

extension ResizePlan {
    /// This plan with its `.fill` window moved where `anchor`'s smart strategy puts it in
    /// `decoded` (the decoder's upright bitmap, of any size in proportion to ``sourceSize``);
    /// the plan itself when there is nothing to choose (no crop, or a geometric anchor, which
    /// ``init(source:target:contentMode:anchor:allowsUpscaling:)`` placed already). Throws what
    /// a detecting anchor's ``CropRegionDetecting/regions(in:)`` throws.
    func anchored(_ anchor: CropAnchor, in decoded: Bitmap) throws -> ResizePlan {
        guard anchor.point == nil, crop != PixelRect(sourceSize) else { return self }
        let sx = Double(decoded.width) / Double(sourceSize.width), sy = Double(decoded.height) / Double(sourceSize.height)
        let window = (width: crop.width * sx, height: crop.height * sy)
        guard let origin = try SmartCrop.origin(anchor, in: decoded, window: window, scaledSize: scaledSize) else { return self }
        // Moved only along an axis with room to move (the other keeps its centred position).
        var plan = self
        let slack = (x: Double(sourceSize.width) - crop.width, y: Double(sourceSize.height) - crop.height)
        if slack.x > 0 { plan.crop.x = min(slack.x, max(0, origin.x / sx)) }
        if slack.y > 0 { plan.crop.y = min(slack.y, max(0, origin.y / sy)) }
        return plan
    }
}

/// Where ``CropAnchor/attention`` and ``CropAnchor/entropy`` put a `.fill`'s window: libvips's
/// `vips_smartcrop` (8.14, `libvips/conversion/smartcrop.c`), computed on the picture as the
/// decoder gave it (already shrunk towards the output size), so the analysis costs a fraction
/// of the decode. Colour is premultiplied, as libvips premultiplies before it looks, so
/// content under transparency does not count.
enum SmartCrop {
    /// The top-left corner `anchor` puts a window of `window` at in `bitmap`, in its pixels
    /// (before clamping to the picture); `nil` to keep the plan's own (a geometric anchor).
    /// `scaledSize` is the whole picture at the fill's scale: a detector searches a copy of
    /// `bitmap` no larger than that.
    static func origin(_ anchor: CropAnchor, in bitmap: Bitmap, window: (width: Double, height: Double), scaledSize: PixelSize)
        throws -> (x: Double, y: Double)? {
        switch anchor.strategy {
        case .point(let x, let y):
            return (x * Double(bitmap.width) - window.width / 2, y * Double(bitmap.height) - window.height / 2)
        case .attention:
            let centre = attentionCentre(bitmap, window: window)
            return (centre.x - window.width / 2, centre.y - window.height / 2)
        case .entropy:
            let corner = entropyOrigin(bitmap, window: (Int(window.width.rounded()), Int(window.height.rounded())))
            return (Double(corner.x), Double(corner.y))
        case .detected(let detector, let fallback):
            let regions = try detectedRegions(detector.base, in: bitmap, atMost: scaledSize)
            guard let kept = keptRegion(regions, window: window) else {
                return try origin(fallback, in: bitmap, window: window, scaledSize: scaledSize)
            }
            return (kept.x + kept.width / 2 - window.width / 2, kept.y + kept.height / 2 - window.height / 2)
        }
    }

    // MARK: detected regions

    /// `detector`'s regions in `bitmap`, in its pixels, searched in a copy shrunk to `limit` when
    /// `bitmap` is larger (a JPEG decoder's DCT scaling leaves up to twice the fill's scale): a
    /// cascade's time grows with the pixels, and a region too small to find at the fill's scale
    /// is too small to matter in its output.
    static func detectedRegions(_ detector: any CropRegionDetecting, in bitmap: Bitmap, atMost limit: PixelSize) throws -> [PixelRect] {
        var searched = bitmap
        if limit.isValid, bitmap.width > limit.width || bitmap.height > limit.height {
            let scale = min(Double(limit.width) / Double(bitmap.width), Double(limit.height) / Double(bitmap.height))
            searched = Resampler.resample(bitmap, to: PixelSize(width: max(1, Int((Double(bitmap.width) * scale).rounded())),
                                                                height: max(1, Int((Double(bitmap.height) * scale).rounded()))),
                                          filter: .areaAverage)
        }
        let kx = Double(bitmap.width) / Double(searched.width), ky = Double(bitmap.height) / Double(searched.height)
        return try detector.regions(in: searched).compactMap { box in
            clipped(box, to: searched.size).map { PixelRect(x: $0.x * kx, y: $0.y * ky, width: $0.width * kx, height: $0.height * ky) }
        }
    }

    /// The part of a detector's `box` inside a picture of `size`; `nil` when none is, or when a
    /// coordinate is not finite (a detector's NaN would otherwise place the window at the edge,
    /// and an infinite box would outweigh every real one).
    static func clipped(_ box: PixelRect, to size: PixelSize) -> PixelRect? {
        guard box.x.isFinite, box.y.isFinite, box.width.isFinite, box.height.isFinite else { return nil }
        let left = max(0, box.x), top = max(0, box.y)
        let right = min(Double(size.width), box.x + box.width), bottom = min(Double(size.height), box.y + box.height)
        guard right > left, bottom > top else { return nil }
        return PixelRect(x: left, y: top, width: right - left, height: bottom - top)
    }

    /// What a detecting anchor centres the window on: the union of `regions` when it fits in
    /// `window`; otherwise the union of the largest region and, largest first, each further one
    /// that still fits with those kept (the largest alone when even it does not fit); `nil`
    /// when there is no region.
    static func keptRegion(_ regions: [PixelRect], window: (width: Double, height: Double)) -> PixelRect? {
        let bySize = regions.sorted { $0.width * $0.height > $1.width * $1.height }
        guard var kept = bySize.first else { return nil }
        func union(_ a: PixelRect, _ b: PixelRect) -> PixelRect {
            let x = min(a.x, b.x), y = min(a.y, b.y)
            return PixelRect(x: x, y: y, width: max(a.x + a.width, b.x + b.width) - x,
                             height: max(a.y + a.height, b.y + b.height) - y)
        }
        for region in bySize.dropFirst() {
            let joined = union(kept, region)
            if joined.width <= window.width, joined.height <= window.height { kept = joined }
        }
        return kept
    }

    // MARK: attention

    /// The side of the map libvips scores attention on: the precision of the window's position.
    private static let mapSide = 32

    /// The most interesting point of `bitmap`, in its pixels: edges of luminance Y (a Laplacian,
    /// ×5), skin tones (100 at the direction of smartcrop.js's skin colour in XYZ, less with
    /// distance from it) and CIELAB a*, the last two only where Y > 5, summed on a 32 × 32
    /// copy, blurred with libvips's integer Gaussian of σ = a tenth of the window's diagonal
    /// there (at least 1), and the first maximum in raster order.
    static func attentionCentre(_ bitmap: Bitmap, window: (width: Double, height: Double)) -> (x: Double, y: Double) {
        let side = mapSide
        let small = Resampler.resample(bitmap, to: PixelSize(width: side, height: side), filter: .lanczos3)
        var luminance = [Double](repeating: 0, count: side * side)
        var colour = [Double](repeating: 0, count: side * side)  // skin + a*, where it is not dark
        small.withUnsafeBytes { bytes in
            for y in 0..<side {
                for x in 0..<side {
                    let o = y * small.bytesPerRow + x * 4
                    let (cx, cy, cz) = xyz(bytes[o], bytes[o + 1], bytes[o + 2])
                    luminance[y * side + x] = cy
                    guard cy > 5 else { continue }
                    let magnitude = (cx * cx + cy * cy + cz * cz).squareRoot()
                    let (dx, dy, dz) = (cx / magnitude - 0.78, cy / magnitude - 0.57, cz / magnitude - 0.44)
                    let skin = 100 - 100 * (dx * dx + dy * dy + dz * dz).squareRoot()
                    colour[y * side + x] = skin + labA(x: cx, y: cy)
                }
            }
        }
        var score = [Double](repeating: 0, count: side * side)
        func at(_ x: Int, _ y: Int) -> Double { luminance[min(side - 1, max(0, y)) * side + min(side - 1, max(0, x))] }
        for y in 0..<side {
            for x in 0..<side {
                let laplacian = 4 * at(x, y) - at(x - 1, y) - at(x + 1, y) - at(x, y - 1) - at(x, y + 1)
                score[y * side + x] = abs(5 * laplacian) + colour[y * side + x]
            }
        }
        let hscale = Double(side) / Double(bitmap.width), vscale = Double(side) / Double(bitmap.height)
        let sigma = max(((window.width * hscale) * (window.width * hscale)
                         + (window.height * vscale) * (window.height * vscale)).squareRoot() / 10, 1)
        let blurred = blurred(score, side: side, sigma: sigma)
        var best = 0
        for i in 1..<blurred.count where blurred[i] > blurred[best] { best = i }
        // libvips truncates the map position back to image pixels (`int = x_pos / hscale`).
        return ((Double(best % side) / hscale).rounded(.down), (Double(best / side) / vscale).rounded(.down))
    }

    /// CIE XYZ (D65, Y 0…100) of an 8-bit sRGB colour, as `vips_colourspace` gives it.
    private static func xyz(_ r: UInt8, _ g: UInt8, _ b: UInt8) -> (Double, Double, Double) {
        let (lr, lg, lb) = (SRGBTransfer.linear[Int(r)], SRGBTransfer.linear[Int(g)], SRGBTransfer.linear[Int(b)])
        return (100 * (0.4124 * lr + 0.3576 * lg + 0.1805 * lb),
                100 * (0.2126 * lr + 0.7152 * lg + 0.0722 * lb),
                100 * (0.0193 * lr + 0.1192 * lg + 0.9505 * lb))
    }

    /// CIELAB a* (D65 white) of an XYZ colour: the red (+) to green (−) axis.
    private static func labA(x: Double, y: Double) -> Double {
        func f(_ t: Double) -> Double { t > 216.0 / 24389 ? pow(t, 1.0 / 3) : (24389.0 / 27 * t + 16) / 116 }
        return 500 * (f(x / 95.047) - f(y / 100))
    }

    /// `map` blurred as `vips_gaussblur` does by default: a separable mask of `rint(20 × g)`
    /// integer weights, cut where the Gaussian falls below 0.2 of its peak, edges extended.
    private static func blurred(_ map: [Double], side: Int, sigma: Double) -> [Double] {
        guard let mask = IntegerGaussianMask(sigma: sigma, minimumAmplitude: 0.2) else { return map }
        let reach = mask.reach, weights = mask.weights.map(Double.init), total = Double(mask.scale)
        func pass(_ input: [Double], horizontal: Bool) -> [Double] {
            var output = [Double](repeating: 0, count: input.count)
            for y in 0..<side {
                for x in 0..<side {
                    var sum = 0.0
                    for (k, weight) in weights.enumerated() {
                        let offset = k - reach
                        let sx = horizontal ? min(side - 1, max(0, x + offset)) : x
                        let sy = horizontal ? y : min(side - 1, max(0, y + offset))
                        sum += weight * input[sy * side + sx]
                    }
                    output[y * side + x] = sum / total
                }
            }
            return output
        }
        return pass(pass(map, horizontal: true), horizontal: false)
    }

    // MARK: entropy

    /// libvips's entropy search: from the whole picture, cut slices of at most an eighth of the
    /// larger excess off each axis in turn, keeping the side whose slice has the higher entropy
    /// of its red, green and blue histograms, until the window is left.
    static func entropyOrigin(_ bitmap: Bitmap, window: (width: Int, height: Int)) -> (x: Int, y: Int) {
        let target = (width: min(max(1, window.width), bitmap.width), height: min(max(1, window.height), bitmap.height))
        var left = 0, top = 0, width = bitmap.width, height = bitmap.height
        let step = max(Int((Double(width - target.width) / 8).rounded(.up)), Int((Double(height - target.height) / 8).rounded(.up)))
        return bitmap.withUnsafeBytes { bytes in
            func entropy(_ x: Int, _ y: Int, _ w: Int, _ h: Int) -> Double {
                var histogram = [Int](repeating: 0, count: 3 * 256)
                for row in y..<(y + h) {
                    var o = row * bitmap.bytesPerRow + x * 4
                    for _ in 0..<w {
                        histogram[Int(bytes[o])] += 1
                        histogram[256 + Int(bytes[o + 1])] += 1
                        histogram[512 + Int(bytes[o + 2])] += 1
                        o += 4
                    }
                }
                let count = Double(3 * w * h)
                return histogram.reduce(0.0) { sum, n in
                    guard n > 0 else { return sum }
                    let p = Double(n) / count
                    return sum - p * log2(p)
                }
            }
            while width > target.width || height > target.height {
                let sliceWidth = min(width - target.width, step), sliceHeight = min(height - target.height, step)
                if sliceWidth > 0 {
                    let leftScore = entropy(left, top, sliceWidth, height)
                    let rightScore = entropy(left + width - sliceWidth, top, sliceWidth, height)
                    width -= sliceWidth
                    if leftScore < rightScore { left += sliceWidth }
                }
                if sliceHeight > 0 {
                    let topScore = entropy(left, top, width, sliceHeight)
                    let bottomScore = entropy(left, top + height - sliceHeight, width, sliceHeight)
                    height -= sliceHeight
                    if topScore < bottomScore { top += sliceHeight }
                }
            }
            return (left, top)
        }
    }
}
