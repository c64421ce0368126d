import Foundation
import PipelineCore
import PipelineTestSupport
import Testing

@Suite struct PointSizeTests {
    /// 160 pt at @2x is 320 px: the same request, the same key, one cache entry.
    @Test func aPointSizeAtAScaleIsThePixelRequest() async throws {
        let loader = HeldLoader.immediate()
        let pipeline = makePipeline(loader: loader)
        let url = testURL(640, 640, 3)
        let points = ImageRequest(url: url, size: PointSize(width: 160, height: 160), scale: 2, contentMode: .fill)
        let pixels = ImageRequest(url: url, width: 320, height: 320, contentMode: .fill)
        #expect(points.targetSize == .pixels(PixelSize(width: 320, height: 320)))
        #expect(points == pixels && pipeline.key(for: points) == pipeline.key(for: pixels))
        #expect(TargetSize.points(PointSize(width: 160, height: 90), scale: 3) == .pixels(PixelSize(width: 480, height: 270)))
        #expect(ImageRequest(url: url, size: PointSize(width: 40, height: 30)).targetSize == .pixels(PixelSize(width: 40, height: 30)),
                "scale 1 by default")
        let first = try await pipeline.image(for: points)
        let second = try await pipeline.image(for: pixels)
        #expect(first.bitmap.size == PixelSize(width: 320, height: 320))
        #expect(second.source == .memory && loader.totalLoads == 1)
    }

    /// Rounded up to whole pixels, except for floating-point noise; nonsense gives an invalid
    /// size, never a trap.
    @Test func sidesRoundUpToWholePixels() {
        #expect(PixelSize(PointSize(width: 100.5, height: 33.4), scale: 2) == PixelSize(width: 201, height: 67))
        #expect(PixelSize(PointSize(width: 33.4, height: 0.1), scale: 3) == PixelSize(width: 101, height: 1))
        #expect(PixelSize(PointSize(width: 110, height: 0.7), scale: 1.1) == PixelSize(width: 121, height: 1))
        #expect(PixelSize(PointSize(width: 1 / 3, height: 2 / 3), scale: 3) == PixelSize(width: 1, height: 2))
        for bad in [PixelSize(PointSize(width: -4, height: .nan), scale: 2), PixelSize(PointSize(width: 10, height: 10), scale: 0)] {
            #expect(!bad.isValid && bad.width == 0)
        }
        #expect(PixelSize(PointSize(width: .infinity, height: 1e300), scale: 2) == PixelSize(width: Int(Int32.max), height: Int(Int32.max)))
        #expect(PointSize(width: 160, height: 90.5).description == "160×90.5 pt")
    }
}
