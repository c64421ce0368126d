import Foundation
import PipelineCore
import Testing

/// Lanczos-3 against a straightforward reference written here: double precision, the whole
/// picture at once, each output pixel a direct 2-D sum over its source window (no tables, no
/// rows, no ring). Tolerance ±1: the resampler sums in `Float` with `Float` weights, the
/// reference in `Double`; a value near a rounding boundary may land on either side.
@Suite("Lanczos-3 resampling")
struct LanczosTests {
    /// A premultiplied test picture: gradients, a checker and a disc, with varying alpha.
    static func picture(_ width: Int, _ height: Int, alpha: Bool = true) -> Bitmap {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(width * height * 4)
        for y in 0..<height {
            for x in 0..<width {
                let a = alpha ? UInt8(255 - (x * 7 + y * 3) % 200) : 255
                let dx = Double(x) - Double(width) / 2, dy = Double(y) - Double(height) / 2
                let inDisc = dx * dx + dy * dy < Double(width * height) / 10
                let checker = ((x / 3) + (y / 2)) % 2 == 0
                let r = UInt8((x * 255) / max(1, width - 1))
                let g = checker ? 230 : 20
                let b: UInt8 = inDisc ? 250 : UInt8((y * 255) / max(1, height - 1))
                // Premultiply: colour ≤ alpha.
                func pm(_ c: UInt8) -> UInt8 { UInt8((Int(c) * Int(a) + 127) / 255) }
                bytes += [pm(r), pm(UInt8(g)), pm(b), a]
            }
        }
        return Bitmap(width: width, height: height, bytesPerRow: width * 4, bytes: bytes)!
    }

    // MARK: The reference

    static func lanczos(_ x: Double) -> Double {
        if x == 0 { return 1 }
        if abs(x) >= 3 { return 0 }
        return sin(.pi * x) / (.pi * x) * sin(.pi * x / 3) / (.pi * x / 3)
    }

    /// Normalised weights of source indices `0..<length` for output `i` along one axis
    /// (crop `start`, `span`; `outputs` outputs). Taps outside the source are left out and the
    /// rest renormalised.
    static func weights(_ i: Int, length: Int, start: Double, span: Double, outputs: Int) -> [Int: Double] {
        let scale = span / Double(outputs)
        let stretch = max(1, scale)
        let centre = start + (Double(i) + 0.5) * scale
        var result: [Int: Double] = [:]
        for k in 0..<length {
            let w = lanczos((Double(k) + 0.5 - centre) / stretch)
            if w != 0 { result[k] = w }
        }
        let total = result.values.reduce(0, +)
        return result.mapValues { $0 / total }
    }

    /// The box average by integer factors `bx`×`by` (the last block takes what is left), in doubles.
    static func box(_ pixels: [[Double]], width: Int, height: Int, bx: Int, by: Int) -> (pixels: [[Double]], width: Int, height: Int) {
        let w = (width + bx - 1) / bx, h = (height + by - 1) / by
        var out = [[Double]](repeating: [0, 0, 0, 0], count: w * h)
        for j in 0..<h {
            for i in 0..<w {
                var s = [0.0, 0, 0, 0], n = 0.0
                for y in (j * by)..<min(height, j * by + by) {
                    for x in (i * bx)..<min(width, i * bx + bx) {
                        for c in 0..<4 { s[c] += pixels[y * width + x][c] }
                        n += 1
                    }
                }
                out[j * w + i] = s.map { $0 / n }
            }
        }
        return (out, w, h)
    }

    /// `source`'s `crop` resampled to `output`: for a reduction of 4× or more along an axis, the
    /// integer box ⌊scale/2⌋ first (as documented for ``ResamplingFilter/lanczos3``), then
    /// Lanczos-3; rounded, clamped to 0…255, colour clamped to alpha.
    static func reference(_ source: Bitmap, crop: PixelRect? = nil, to output: PixelSize) -> [UInt8] {
        let crop = crop ?? PixelRect(source.size)
        var pixels: [[Double]] = []
        for y in 0..<source.height {
            for x in 0..<source.width {
                let p = source.pixel(x: x, y: y)
                pixels.append([Double(p.r), Double(p.g), Double(p.b), Double(p.a)])
            }
        }
        let bx = max(1, Int(crop.width / Double(output.width) / 2)), by = max(1, Int(crop.height / Double(output.height) / 2))
        let reduced = box(pixels, width: source.width, height: source.height, bx: bx, by: by)
        var bytes: [UInt8] = []
        for j in 0..<output.height {
            let wy = weights(j, length: reduced.height, start: crop.y / Double(by), span: crop.height / Double(by), outputs: output.height)
            for i in 0..<output.width {
                let wx = weights(i, length: reduced.width, start: crop.x / Double(bx), span: crop.width / Double(bx), outputs: output.width)
                var s = [0.0, 0, 0, 0]
                for (y, a) in wy {
                    for (x, b) in wx {
                        for c in 0..<4 { s[c] += reduced.pixels[y * reduced.width + x][c] * a * b }
                    }
                }
                let v = s.map { min(255, max(0, $0.rounded())) }
                bytes += [min(v[0], v[3]), min(v[1], v[3]), min(v[2], v[3]), v[3]].map { UInt8($0) }
            }
        }
        return bytes
    }

    /// The largest difference between `bitmap` and `expected`, channel by channel.
    static func maxDifference(_ bitmap: Bitmap, _ expected: [UInt8]) -> Int {
        var worst = 0, k = 0
        for y in 0..<bitmap.height {
            for x in 0..<bitmap.width {
                let p = bitmap.pixel(x: x, y: y)
                for v in [p.r, p.g, p.b, p.a] {
                    worst = max(worst, abs(Int(v) - Int(expected[k])))
                    k += 1
                }
            }
        }
        return worst
    }

    // MARK: Tests

    @Test(arguments: [
        (PixelSize(width: 61, height: 47), PixelSize(width: 23, height: 19)),  // 2.65×: Lanczos alone
        (PixelSize(width: 90, height: 70), PixelSize(width: 11, height: 9)),  // 8×: box 4, then 2×
        (PixelSize(width: 40, height: 30), PixelSize(width: 37, height: 7)),  // barely in x, 4.3× in y
        (PixelSize(width: 13, height: 9), PixelSize(width: 40, height: 29)),  // upscaling
    ])
    func matchesTheReference(source: PixelSize, output: PixelSize) {
        let picture = Self.picture(source.width, source.height)
        let ours = Resampler.resample(picture, to: output, filter: .lanczos3)
        #expect(ours.size == output)
        #expect(Self.maxDifference(ours, Self.reference(picture, to: output)) <= 1)
    }

    @Test func aFillCropUsesPixelsOutsideTheCropLikeTheReference() {
        let picture = Self.picture(80, 40)
        let plan = ResizePlan(source: picture.size, target: .pixels(PixelSize(width: 15, height: 15)), contentMode: .fill)
        let ours = Resampler.resample(picture, plan: plan, filter: .lanczos3)
        #expect(ours.size == PixelSize(width: 15, height: 15))
        #expect(Self.maxDifference(ours, Self.reference(picture, crop: plan.crop, to: plan.outputSize)) <= 1)
    }

    @Test func streamingRowsGiveTheSameResultAsOneShot() {
        let picture = Self.picture(70, 50)
        let output = PixelSize(width: 9, height: 6)
        let oneShot = Resampler.resample(picture, to: output, filter: .lanczos3)
        var streaming = RowResampler(sourceSize: picture.size, outputSize: output, filter: .lanczos3)
        picture.withUnsafeBytes { bytes in
            for y in 0..<picture.height {
                let start = y * picture.bytesPerRow
                streaming.push(row: UnsafeBufferPointer(rebasing: bytes[start..<(start + picture.width * 4)]))
            }
        }
        #expect(streaming.finish() == oneShot)
    }

    @Test func aTruncatedSourceLeavesTheRowsItNeverReachedTransparent() {
        let pixel: [UInt8] = [40, 80, 120, 255]
        let width = 64, height = 64
        let row = Array([[UInt8]](repeating: pixel, count: width).joined())
        var resampler = RowResampler(sourceSize: PixelSize(width: width, height: height),
                                     outputSize: PixelSize(width: 8, height: 8), filter: .lanczos3)
        row.withUnsafeBufferPointer { for _ in 0..<(height / 2) { resampler.push(row: $0) } }
        let out = resampler.finish()
        #expect(out.pixel(x: 3, y: 0) == (40, 80, 120, 255), "rows fully reached are whole")
        #expect(out.pixel(x: 3, y: 7) == (0, 0, 0, 0), "rows never reached are transparent")
    }

    @Test func anExtremeFillUpscaleEnlargesOnlyTheCrop() {
        // A 1×300 strip filled into 300×1 with upscaling: the plan crops one pixel's height of
        // it and enlarges that 300×; the ring holds six source rows, not the picture.
        let strip = Self.picture(1, 300, alpha: false)
        let plan = ResizePlan(source: strip.size, target: .pixels(PixelSize(width: 300, height: 1)), contentMode: .fill,
                              allowsUpscaling: true)
        let out = Resampler.resample(strip, plan: plan, filter: .lanczos3)
        #expect(out.size == PixelSize(width: 300, height: 1))
        #expect(Self.maxDifference(out, Self.reference(strip, crop: plan.crop, to: plan.outputSize)) <= 1)
    }

    @Test func aUniformPictureStaysUniformAtEveryScale() {
        let pixel: [UInt8] = [10, 200, 77, 255]
        let uniform = Bitmap(width: 37, height: 23, bytesPerRow: 37 * 4, bytes: Array([[UInt8]](repeating: pixel, count: 37 * 23).joined()))!
        for size in [PixelSize(width: 5, height: 3), PixelSize(width: 36, height: 22), PixelSize(width: 80, height: 51),
                     PixelSize(width: 1, height: 1), PixelSize(width: 200, height: 2)] {
            let out = Resampler.resample(uniform, to: size, filter: .lanczos3)
            #expect(out.size == size)
            for y in 0..<size.height {
                for x in 0..<size.width where out.pixel(x: x, y: y) != (10, 200, 77, 255) {
                    Issue.record("\(size): pixel \(x),\(y) is \(out.pixel(x: x, y: y))")
                    return
                }
            }
        }
    }

    @Test func colourNeverExceedsAlphaAtAnAlphaEdge() {
        // White at alpha 200 beside black at alpha 160: next to the edge, on the white side, the
        // black pixels fall in Lanczos's negative lobe, which lowers alpha more than colour
        // (colour − alpha = −160 × their summed weight > 0, and nothing reaches 255 to be clipped).
        let width = 48, height = 8
        var bytes: [UInt8] = []
        for _ in 0..<height {
            for x in 0..<width { bytes += x < 21 ? [200, 200, 200, 200] : [0, 0, 0, 160] }
        }
        let stripes = Bitmap(width: width, height: height, bytesPerRow: width * 4, bytes: bytes)!
        for output in [PixelSize(width: 20, height: 8), PixelSize(width: 17, height: 3), PixelSize(width: 100, height: 8)] {
            let out = Resampler.resample(stripes, to: output, filter: .lanczos3)
            var overshoot = 0
            for y in 0..<out.height {
                for x in 0..<out.width {
                    let p = out.pixel(x: x, y: y)
                    if max(p.r, p.g, p.b) > p.a { overshoot += 1 }
                }
            }
            #expect(overshoot == 0, "\(output): \(overshoot) pixels with colour above alpha")
        }
    }

    @Test func lanczosIsSharperThanTheAreaAverageAndDiffers() {
        let picture = Self.picture(90, 60, alpha: false)
        let output = PixelSize(width: 30, height: 20)
        #expect(Resampler.resample(picture, to: output, filter: .lanczos3) != Resampler.resample(picture, to: output, filter: .areaAverage))
    }

    @Test func theMemoryKeyTellsTheFiltersApart() throws {
        let url = try #require(URL(string: "https://example.com/a.jpg"))
        var lanczos = ImageRequest(url: url, width: 100, height: 100)
        lanczos.processing.resamplingFilter = .lanczos3
        var area = lanczos
        area.processing.resamplingFilter = .areaAverage
        #expect(ImageKey(request: lanczos, cacheURL: url) != ImageKey(request: area, cacheURL: url))
        #expect(ImageKey(request: lanczos, cacheURL: url) == ImageKey(request: lanczos, cacheURL: url))
        #expect(ImageRequest(url: url).processing.resamplingFilter == ResamplingFilter.default)
    }
}
