import Foundation
import PipelineTestSupport
import Synchronization
import Testing

@testable import PipelineCore

/// A detector that really looks: the bounding box of each run of pure green (0, 255, 0) columns
/// (one box per run of columns holding green, from the first to the last green row in it), so
/// the boxes follow the pixels the test paints, at whatever scale the decoder gave.
struct GreenDetector: CropRegionDetecting {
    var identifier: String { "green" }

    func regions(in bitmap: Bitmap) throws -> [PixelRect] {
        var boxes: [PixelRect] = []
        var run: (x: Int, top: Int, bottom: Int)?
        for x in 0...bitmap.width {
            var top = Int.max, bottom = -1
            if x < bitmap.width {
                for y in 0..<bitmap.height {
                    let p = bitmap.pixel(x: x, y: y)
                    if p.r < 40, p.g > 200, p.b < 40 { top = min(top, y); bottom = y }
                }
            }
            if bottom >= 0 {
                run = run.map { ($0.x, min($0.top, top), max($0.bottom, bottom)) } ?? (x, top, bottom)
            } else if let open = run {
                boxes.append(PixelRect(x: Double(open.x), y: Double(open.top), width: Double(x - open.x),
                                       height: Double(open.bottom - open.top + 1)))
                run = nil
            }
        }
        return boxes
    }
}

/// A detector that keeps the right quarter of whatever it is given, and records the sizes it saw.
final class RightQuarterDetector: CropRegionDetecting {
    let seen = Mutex<[PixelSize]>([])
    var identifier: String { "right-quarter" }
    func regions(in bitmap: Bitmap) throws -> [PixelRect] {
        seen.withLock { $0.append(bitmap.size) }
        return [PixelRect(x: Double(bitmap.width) * 0.75, y: 0, width: Double(bitmap.width) / 4, height: Double(bitmap.height) / 4)]
    }
}

/// A detector whose search waits until the test releases it, and says when it started.
final class HeldDetector: CropRegionDetecting {
    let entered = DispatchSemaphore(value: 0)
    let released = DispatchSemaphore(value: 0)
    var identifier: String { "held" }
    func regions(in bitmap: Bitmap) throws -> [PixelRect] {
        entered.signal()
        released.wait()
        return []
    }
}

/// A detector that fails: its error must fail the request.
struct FailingDetector: CropRegionDetecting {
    struct Failure: Error {}
    var identifier: String { "failing" }
    func regions(in bitmap: Bitmap) throws -> [PixelRect] { throw Failure() }
}

/// A detector that answers the same boxes whatever it is given.
struct FixedDetector: CropRegionDetecting {
    let boxes: [PixelRect]
    var identifier: String { "fixed" }
    func regions(in bitmap: Bitmap) throws -> [PixelRect] { boxes }
}

/// ``CropAnchor/detected(by:fallback:)``: the window keeps the detected regions, mapped from the
/// decoder's shrunk picture to the source; the fallback places it where there is none.
@Suite("Detected crop anchors", .timeLimit(.minutes(1)))
struct DetectedCropTests {
    /// A grey picture of `size` with green squares at `boxes` (in its pixels).
    static func picture(_ size: PixelSize, green boxes: [PixelRect]) -> Bitmap {
        var bitmap = Bitmap(zeroed: size)
        bitmap.withUnsafeMutableBytes { bytes in
            for y in 0..<size.height {
                for x in 0..<size.width {
                    let o = (y * size.width + x) * 4
                    let inside = boxes.contains { Double(x) >= $0.x && Double(x) < $0.x + $0.width && Double(y) >= $0.y && Double(y) < $0.y + $0.height }
                    (bytes[o], bytes[o + 1], bytes[o + 2], bytes[o + 3]) = inside ? (0, 255, 0, 255) : (128, 128, 128, 255)
                }
            }
        }
        return bitmap
    }

    /// 400 × 200 filled into 100 × 100: a 200 × 200 window, 200 pixels of horizontal slack.
    static let plan = ResizePlan(source: PixelSize(width: 400, height: 200), target: .pixels(PixelSize(width: 100, height: 100)),
                                 contentMode: .fill, anchor: .detected(by: GreenDetector()))

    @Test func theWindowIsCentredOnTheRegionsMappedFromTheShrunkPicture() throws {
        // Decoded at half size: a box at 150…170 there is 300…340 in the source.
        let decoded = Self.picture(PixelSize(width: 200, height: 100), green: [PixelRect(x: 150, y: 40, width: 20, height: 20)])
        let crop = try Self.plan.anchored(.detected(by: GreenDetector()), in: decoded).crop
        #expect(crop.x == 200, "centred on 320 is 220, clamped to the slack 200")
        let middle = Self.picture(PixelSize(width: 200, height: 100), green: [PixelRect(x: 60, y: 40, width: 10, height: 10)])
        #expect(try Self.plan.anchored(.detected(by: GreenDetector()), in: middle).crop.x == 30, "centre 130 − 100")
    }

    @Test func aDecodeLargerThanTheFillsScaleIsSearchedAtThatScaleAndMappedBack() throws {
        let detector = RightQuarterDetector()
        // The decoder gave the whole 400 × 200 source (DCT scaling stops above the fill's scale).
        let decoded = Self.picture(PixelSize(width: 400, height: 200), green: [])
        let crop = try Self.plan.anchored(.detected(by: detector), in: decoded).crop
        #expect(detector.seen.withLock { $0 } == [PixelSize(width: 200, height: 100)], "searched at the plan's scaled size")
        #expect(crop.x == 200, "the region at 300…400 of the source: the window at the right edge")
    }

    @Test func regionsThatFitTogetherAreAllKeptElseTheLargestFirst() {
        let small = PixelRect(x: 0, y: 0, width: 10, height: 10), large = PixelRect(x: 150, y: 0, width: 30, height: 30)
        let near = PixelRect(x: 190, y: 5, width: 12, height: 12)
        #expect(SmartCrop.keptRegion([small, large], window: (200, 200)) == PixelRect(x: 0, y: 0, width: 180, height: 30))
        #expect(SmartCrop.keptRegion([small, large, near], window: (100, 100)) == PixelRect(x: 150, y: 0, width: 52, height: 30),
                "the small one at 0 does not fit with the large one; the near one does")
        #expect(SmartCrop.keptRegion([small, PixelRect(x: 50, y: 0, width: 300, height: 40)], window: (100, 100))?.width == 300,
                "larger than the window: centred on the largest alone")
        #expect(SmartCrop.keptRegion([], window: (100, 100)) == nil)
    }

    /// A detector's odd boxes: one with a coordinate that is not finite, or wholly outside the
    /// picture, is no region (the fallback places the window; a NaN put it at the left edge and
    /// an infinite box outweighed the real one); one partly outside counts for its part inside;
    /// thousands of boxes are taken in stride.
    @Test func oddBoxesAreClippedToThePictureOrDropped() throws {
        let decoded = Self.picture(PixelSize(width: 200, height: 100), green: [])
        func cropX(_ boxes: [PixelRect]) throws -> Double {
            try Self.plan.anchored(.detected(by: FixedDetector(boxes: boxes), fallback: .right), in: decoded).crop.x
        }
        let nan = Double.nan, inf = Double.infinity
        let odd = [PixelRect(x: nan, y: 10, width: 20, height: 20), PixelRect(x: 10, y: 10, width: inf, height: 20),
                   PixelRect(x: -inf, y: 0, width: inf, height: 50), PixelRect(x: 10, y: nan, width: 20, height: 20),
                   PixelRect(x: 300, y: 10, width: 20, height: 20), PixelRect(x: -50, y: 10, width: 40, height: 20),
                   PixelRect(x: 10, y: 10, width: -20, height: 20), PixelRect(x: 10, y: 150, width: 20, height: 20)]
        #expect(try cropX(odd) == 200, "no region in the picture: the fallback (right)")
        let real = PixelRect(x: 10, y: 40, width: 10, height: 10)  // centre 15 in the decode, 30 in the source
        #expect(try cropX(odd + [real]) == 0, "only the real box counts")
        // 180…260 is 180…200 inside: centre 190 in the decode, 380 in the source, clamped to 200.
        #expect(try cropX([PixelRect(x: 180, y: 40, width: 80, height: 80)]) == 200)
        // -60…20 is 0…20 inside, its centre 10 (the box's own, −20, is off the picture).
        #expect(SmartCrop.clipped(PixelRect(x: -60, y: -10, width: 80, height: 30), to: PixelSize(width: 200, height: 100))
                == PixelRect(x: 0, y: 0, width: 20, height: 20))
        let many = (0..<5000).map { PixelRect(x: Double($0 % 190), y: Double($0 % 90), width: 10, height: 10) }
        #expect(try cropX(many) >= 0)
    }

    @Test func withoutARegionTheFallbackPlacesTheWindow() throws {
        var decoded = Self.picture(PixelSize(width: 200, height: 100), green: [])
        decoded.withUnsafeMutableBytes { bytes in  // a red patch on the right for attention
            for y in 30..<70 { for x in 160..<190 { let o = (y * 200 + x) * 4; (bytes[o], bytes[o + 1], bytes[o + 2]) = (230, 40, 40) } }
        }
        let attention = try Self.plan.anchored(.attention, in: decoded).crop
        #expect(try Self.plan.anchored(.detected(by: GreenDetector()), in: decoded).crop == attention)
        #expect(attention.x > 100, "attention found the red patch")
        #expect(try Self.plan.anchored(.detected(by: GreenDetector(), fallback: .left), in: decoded).crop.x == 0)
        #expect(try Self.plan.anchored(.detected(by: GreenDetector(), fallback: .right), in: decoded).crop.x == 200)
        #expect(throws: FailingDetector.Failure.self) { try Self.plan.anchored(.detected(by: FailingDetector()), in: decoded) }
    }

    @Test func cancellingWhileTheDetectorSearchesEndsTheRequestAtOnce() async throws {
        let detector = HeldDetector()
        let pipeline = makePipeline(loader: HeldLoader.immediate())
        let request = ImageRequest(url: testURL(64, 32, 3), targetSize: .pixels(PixelSize(width: 16, height: 16)), contentMode: .fill,
                                   cropAnchor: .detected(by: detector))
        let task = pipeline.imageTask(for: request)
        await Task.detached { detector.entered.wait() }.value
        task.cancel()
        await #expect(throws: CancellationError.self) { _ = try await task.response }
        detector.released.signal()
    }

    @Test func aDetectorsErrorFailsTheRequest() async throws {
        let pipeline = makePipeline(loader: HeldLoader.immediate())
        let request = ImageRequest(url: testURL(64, 32, 3), targetSize: .pixels(PixelSize(width: 16, height: 16)), contentMode: .fill,
                                   cropAnchor: .detected(by: FailingDetector()))
        await #expect(throws: (any Error).self) { _ = try await pipeline.image(for: request) }
        let centred = ImageRequest(url: testURL(64, 32, 3), targetSize: .pixels(PixelSize(width: 16, height: 16)), contentMode: .fill)
        #expect(try await pipeline.image(for: centred).bitmap.size == PixelSize(width: 16, height: 16))
    }

    @Test func theDetectorsIdentifierAndTheFallbackMakeTheKey() {
        let green = CropAnchor.detected(by: GreenDetector())
        #expect(green == .detected(by: GreenDetector()))
        #expect(green.hashValue == CropAnchor.detected(by: GreenDetector()).hashValue)
        #expect(green != .detected(by: FailingDetector()))
        #expect(green != .detected(by: GreenDetector(), fallback: .entropy))
        #expect(green != .attention && green.point == nil)
        #expect(green.description == "detected(green,attention)")
        #expect(CropAnchor.detected(by: GreenDetector(), fallback: .top).description == "detected(green,top)")
        #expect(CropAnchor.detected(by: GreenDetector(), fallback: green) == green, "a detecting fallback is attention")
        let url = URL(fileURLWithPath: "/pictures/a.jpg")
        func key(_ anchor: CropAnchor) -> ImageKey {
            ImageKey(request: ImageRequest(url: url, targetSize: .pixels(PixelSize(width: 64, height: 64)), contentMode: .fill,
                                           cropAnchor: anchor), cacheURL: url)
        }
        #expect(key(green) != key(.attention))
        #expect(RenditionStore.url(for: key(green), encoding: "") != RenditionStore.url(for: key(.attention), encoding: ""))
        #expect(RenditionStore.url(for: key(green), encoding: "") == RenditionStore.url(for: key(.detected(by: GreenDetector())), encoding: ""))
    }
}
