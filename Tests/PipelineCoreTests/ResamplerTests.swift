import Foundation
import PipelineCore
import Testing

@Suite("Resize plans, resampler and orientation")
struct ResamplerTests {
    func bitmap(_ width: Int, _ height: Int, _ pixel: (Int, Int) -> [UInt8]) -> Bitmap {
        var bytes: [UInt8] = []
        for y in 0..<height { for x in 0..<width { bytes += pixel(x, y) } }
        return Bitmap(width: width, height: height, bytesPerRow: width * 4, bytes: bytes)!
    }

    @Test func fitKeepsTheAspectRatioAndNeverUpscalesByDefault() {
        let plan = ResizePlan(source: PixelSize(width: 6000, height: 4000), target: .pixels(PixelSize(width: 256, height: 256)), contentMode: .fit)
        #expect(plan.outputSize == PixelSize(width: 256, height: 171))
        #expect(plan.scaledSize == plan.outputSize)
        let small = ResizePlan(source: PixelSize(width: 100, height: 50), target: .pixels(PixelSize(width: 400, height: 400)), contentMode: .fit)
        #expect(small.outputSize == PixelSize(width: 100, height: 50) && small.isIdentity)
        let up = ResizePlan(source: PixelSize(width: 100, height: 50), target: .pixels(PixelSize(width: 400, height: 400)),
                            contentMode: .fit, allowsUpscaling: true)
        #expect(up.outputSize == PixelSize(width: 400, height: 200))
    }

    @Test func fillCoversTheTargetAndCentreCrops() {
        let plan = ResizePlan(source: PixelSize(width: 6000, height: 4000), target: .pixels(PixelSize(width: 200, height: 200)), contentMode: .fill)
        #expect(plan.outputSize == PixelSize(width: 200, height: 200))
        #expect(plan.scaledSize == PixelSize(width: 300, height: 200))
        #expect(plan.crop == PixelRect(x: 1000, y: 0, width: 4000, height: 4000))
        // A small source keeps the target's aspect at its own scale.
        let small = ResizePlan(source: PixelSize(width: 100, height: 50), target: .pixels(PixelSize(width: 400, height: 400)), contentMode: .fill)
        #expect(small.outputSize == PixelSize(width: 50, height: 50))
        #expect(small.crop == PixelRect(x: 25, y: 0, width: 50, height: 50))
    }

    @Test func downscalingIsAnExactAreaAverage() {
        // 4×2 → 2×1: each output pixel averages a 2×2 block.
        let source = bitmap(4, 2) { x, y in [UInt8(x * 40 + y * 10), 0, 0, 255] }
        let out = Resampler.resample(source, to: PixelSize(width: 2, height: 1), filter: .areaAverage)
        #expect(out.pixel(x: 0, y: 0).r == 25)  // (0 + 40 + 10 + 50) / 4
        #expect(out.pixel(x: 1, y: 0).r == 105)  // (80 + 120 + 90 + 130) / 4
        // 3 → 2 weights partial pixels: output 0 = (p0 + p1/2) / 1.5.
        let row = bitmap(3, 1) { x, _ in [[0, 90, 180][x], 0, 0, 255] }
        let two = Resampler.resample(row, to: PixelSize(width: 2, height: 1), filter: .areaAverage)
        #expect(two.pixel(x: 0, y: 0).r == 30 && two.pixel(x: 1, y: 0).r == 150)
    }

    @Test func averagingPremultipliedPixelsLeavesNoDarkFringe() {
        // Opaque red beside fully transparent pixels: the average is half-transparent red,
        // which un-premultiplies to pure red, not a darkened red.
        let source = bitmap(2, 1) { x, _ in x == 0 ? [255, 0, 0, 255] : [0, 0, 0, 0] }
        let out = Resampler.resample(source, to: PixelSize(width: 1, height: 1), filter: .areaAverage)
        #expect(out.pixel(x: 0, y: 0) == (r: 128, g: 0, b: 0, a: 128))
        #expect(out.unpremultipliedBytes() == [255, 0, 0, 128])
    }

    @Test func aUniformPictureStaysUniformAtEveryScale() {
        let source = bitmap(37, 23) { _, _ in [10, 200, 77, 255] }
        for size in [PixelSize(width: 5, height: 3), PixelSize(width: 36, height: 22), PixelSize(width: 80, height: 51)] {
            let out = Resampler.resample(source, to: size, filter: .areaAverage)
            #expect(out.size == size)
            #expect(out.bytes.count == size.width * size.height * 4)
            for y in 0..<size.height { for x in 0..<size.width { #expect(out.pixel(x: x, y: y) == (10, 200, 77, 255)) } }
        }
    }

    @Test func fillCropTakesTheCentre() {
        // Left third red, middle third green, right third blue; a square fill keeps green.
        let source = bitmap(30, 10) { x, _ in x < 10 ? [255, 0, 0, 255] : x < 20 ? [0, 255, 0, 255] : [0, 0, 255, 255] }
        let plan = ResizePlan(source: source.size, target: .pixels(PixelSize(width: 5, height: 5)), contentMode: .fill)
        let out = Resampler.resample(source, plan: plan, filter: .areaAverage)
        #expect(out.size == PixelSize(width: 5, height: 5))
        for x in 0..<5 { #expect(out.pixel(x: x, y: 2) == (0, 255, 0, 255)) }
    }

    @Test func streamingRowsGiveTheSameResultAsOneShot() {
        let source = bitmap(50, 40) { x, y in [UInt8(x * 5), UInt8(y * 6), UInt8((x * y) % 256), 255] }
        let oneShot = Resampler.resample(source, to: PixelSize(width: 13, height: 9), filter: .areaAverage)
        var streaming = RowResampler(sourceSize: source.size, outputSize: PixelSize(width: 13, height: 9), filter: .areaAverage)
        source.withUnsafeBytes { bytes in
            for y in 0..<40 { streaming.push(row: UnsafeBufferPointer(rebasing: bytes[(y * 200)..<(y * 200 + 200)])) }
        }
        #expect(streaming.finish() == oneShot)
    }

    @Test func orientationsTurnAStoredPictureUpright() {
        // A 3×2 picture whose pixel (x, y) is coded as 10x + y; each orientation is checked
        // against the EXIF definition of where the stored (0, 0) corner ends up.
        let stored = bitmap(3, 2) { x, y in [UInt8(10 * x + y), 0, 0, 255] }
        let corner: [ImageOrientation: (Int, Int)] = [
            .up: (0, 0), .upMirrored: (2, 0), .down: (2, 1), .downMirrored: (0, 1),
            .leftMirrored: (0, 0), .right: (1, 0), .rightMirrored: (1, 2), .left: (0, 2),
        ]
        for orientation in ImageOrientation.allCases {
            let upright = stored.oriented(orientation)
            #expect(upright.size == orientation.uprightSize(of: stored.size))
            let (x, y) = corner[orientation]!
            #expect(upright.pixel(x: x, y: y).r == 0, "\(orientation)")
            // Every stored pixel appears exactly once.
            let values = Set((0..<upright.height).flatMap { y in (0..<upright.width).map { upright.pixel(x: $0, y: y).r } })
            #expect(values == [0, 1, 10, 11, 20, 21])
        }
        // Orientation 6 (turn clockwise): the stored left column becomes the top row, reversed.
        let right = stored.oriented(.right)
        #expect((0..<2).map { right.pixel(x: $0, y: 0).r } == [1, 0])
    }

    @Test func premultiplyAndBack() {
        var pixels: [UInt8] = [200, 100, 50, 128, 255, 255, 255, 0, 10, 20, 30, 255]
        pixels.withUnsafeMutableBufferPointer { Bitmap.premultiply($0) }
        #expect(pixels == [100, 50, 25, 128, 0, 0, 0, 0, 10, 20, 30, 255])
        let bitmap = Bitmap(width: 3, height: 1, bytesPerRow: 12, bytes: pixels)!
        #expect(bitmap.unpremultipliedBytes() == [199, 100, 50, 128, 0, 0, 0, 0, 10, 20, 30, 255])
    }
}
