import Foundation

extension ResizePlan {
    /// This plan with its `.fill` window moved where `anchor`'s smart strategy puts it in
    /// `decoded` (the decoder's upright bitmap, of any size in proportion to ``sourceSize``);
    /// the plan itself when there is nothing to choose (no crop, or a geometric anchor, which
    /// ``init(source:target:contentMode:anchor:allowsUpscaling:)`` placed already).
    func anchored(_ anchor: CropAnchor, in decoded: Bitmap) -> ResizePlan {
        guard anchor.point == nil, crop != PixelRect(sourceSize) else { return self }
        let sx = Double(decoded.width) / Double(sourceSize.width), sy = Double(decoded.height) / Double(sourceSize.height)
        let window = (width: crop.width * sx, height: crop.height * sy)
        let origin: (x: Double, y: Double)
        switch anchor.strategy {
        case .point: return self
        case .attention:
            let centre = SmartCrop.attentionCentre(decoded, window: window)
            origin = (centre.x - window.width / 2, centre.y - window.height / 2)
        case .entropy:
            let corner = SmartCrop.entropyOrigin(decoded, window: (Int(window.width.rounded()), Int(window.height.rounded())))
            origin = (Double(corner.x), Double(corner.y))
        }
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
        func linear(_ v: UInt8) -> Double {
            let c = Double(v) / 255
            return c <= 0.04045 ? c / 12.92 : pow((c + 0.055) / 1.055, 2.4)
        }
        let (lr, lg, lb) = (linear(r), linear(g), linear(b))
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
