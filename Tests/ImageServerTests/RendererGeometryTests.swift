import Foundation
import ImagePipelineKit
@testable import ImageServer
import PipelineCore
import PipelineTestSupport
import Testing

/// imgproxy's geometry through the renderer: each resizing type's size and pixels, width or
/// height 0, dpr, enlarge, crop, extend and padding, against a crop of a plain decode or
/// `vipsthumbnail`.
@Suite("Renderer geometry", .timeLimit(.minutes(2)))
struct RendererGeometryTests {
    static let aurora = RenderFixture.sample("aurora.png")  // 480 × 320, opaque

    static func options(_ type: RenderOptions.ResizingType, _ width: Int, _ height: Int,
                        _ change: (inout RenderOptions) -> Void = { _ in }) -> RenderOptions {
        var options = RenderOptions()
        options.resizingType = type
        options.width = width
        options.height = height
        change(&options)
        return options
    }

    static func rendered(_ options: RenderOptions, _ source: URL = aurora, format: ImageFormat = .png) async throws -> Bitmap {
        let image = try await RenderFixture.render(options, source, format: format)
        #expect(image.format == format)
        return try RenderFixture.decode(image.data).bitmap
    }

    /// The source decoded whole, straight alpha.
    static func full(_ source: URL = aurora) throws -> Bitmap {
        try RenderFixture.decode(Data(contentsOf: source)).bitmap
    }

    static func crop(_ bitmap: Bitmap, x: Int, y: Int, width: Int, height: Int) throws -> Bitmap {
        try ImageProcessor.crop(PixelRect(x: Double(x), y: Double(y), width: Double(width), height: Double(height))).process(bitmap)
    }

    // MARK: The plan alone

    @Test func thePlanFollowsImgproxysArithmetic() {
        let source = PixelSize(width: 480, height: 320)
        #expect(RenderPlan(source: source, options: Self.options(.fit, 200, 200)).outputSize == PixelSize(width: 200, height: 133))
        #expect(RenderPlan(source: source, options: Self.options(.fill, 200, 200)).outputSize == PixelSize(width: 200, height: 200))
        #expect(RenderPlan(source: source, options: Self.options(.force, 300, 100)).outputSize == PixelSize(width: 300, height: 100))
        #expect(RenderPlan(source: source, options: Self.options(.fit, 0, 100)).outputSize == PixelSize(width: 150, height: 100))
        #expect(RenderPlan(source: source, options: Self.options(.fill, 0, 100)).outputSize == PixelSize(width: 150, height: 100))
        #expect(RenderPlan(source: source, options: Self.options(.fit, 100, 0) { $0.dpr = 2 }).outputSize == PixelSize(width: 200, height: 133))
        // No enlarging: a fill larger than the source keeps scale 1 and crops to the box's sides it can (imgproxy),
        // fill-down scales the box down to the source, keeping its aspect.
        #expect(RenderPlan(source: source, options: Self.options(.fill, 960, 160)).outputSize == PixelSize(width: 480, height: 160))
        #expect(RenderPlan(source: source, options: Self.options(.fillDown, 960, 160)).outputSize == PixelSize(width: 480, height: 80))
        #expect(RenderPlan(source: source, options: Self.options(.fit, 960, 960)).outputSize == source)
        #expect(RenderPlan(source: source, options: Self.options(.fit, 960, 960) { $0.enlarge = true }).outputSize
            == PixelSize(width: 960, height: 640))
        // auto: a landscape box on a landscape source fills, a portrait box fits.
        #expect(RenderPlan(source: source, options: Self.options(.auto, 200, 100)).outputSize == PixelSize(width: 200, height: 100))
        #expect(RenderPlan(source: source, options: Self.options(.auto, 100, 200)).outputSize == PixelSize(width: 100, height: 67))
        // Crop fractions of the source, then the resize.
        let cropped = RenderPlan(source: source, options: Self.options(.fit, 0, 0) { $0.crop = .init(width: 0.5, height: 0.25) })
        #expect(cropped.region == PixelRect(x: 120, y: 120, width: 240, height: 80))
        #expect(cropped.outputSize == PixelSize(width: 240, height: 80))
        // Extend and padding (× dpr).
        let extended = RenderPlan(source: source, options: Self.options(.fit, 200, 200) { $0.extend = .init(.top) })
        #expect(extended.outputSize == PixelSize(width: 200, height: 200))
        #expect(extended.extended?.x == 0 && extended.extended?.y == 0)
        let padded = RenderPlan(source: source, options: Self.options(.fit, 100, 0) {
            $0.padding = .init(top: 1, right: 2, bottom: 3, left: 4)
            $0.dpr = 2
        })
        #expect(padded.outputSize == PixelSize(width: 200 + 12, height: 133 + 8))
    }

    // MARK: Each resizing type, rendered

    @Test func fitMatchesVipsthumbnail() async throws {
        let bitmap = try await Self.rendered(Self.options(.fit, 200, 200))
        #expect(bitmap.size == PixelSize(width: 200, height: 133))
        try await Self.compareWithVips(bitmap, ["-s", "200x200"])
    }

    @Test func fillMatchesVipsthumbnailCentreCrop() async throws {
        let bitmap = try await Self.rendered(Self.options(.fill, 200, 200))
        #expect(bitmap.size == PixelSize(width: 200, height: 200))
        try await Self.compareWithVips(bitmap, ["-s", "200x200", "--smartcrop", "centre"])
    }

    /// At scale 1 a fill is a crop: west keeps the left side, east the right, exactly the
    /// decode's pixels there.
    @Test(arguments: [("we", 0), ("ea", 320), ("ce", 160)])
    func fillKeepsTheGravitysSide(gravity: String, left: Int) async throws {
        let anchors: [String: CropAnchor] = ["we": .left, "ea": .right, "ce": .center]
        let bitmap = try await Self.rendered(Self.options(.fill, 160, 320) { $0.gravity = .init(anchors[gravity] ?? .center) })
        #expect(bitmap.size == PixelSize(width: 160, height: 320))
        let expected = try Self.crop(Self.full(), x: left, y: 0, width: 160, height: 320)
        let difference = absoluteDifference(bitmap, expected)
        #expect(difference.max <= 2, "\(gravity): \(difference)")
    }

    /// Offsets move the window (and take the renderer's own crop, not the pipeline's fill).
    @Test func fillGravityOffsetsMoveTheWindow() async throws {
        let bitmap = try await Self.rendered(Self.options(.fill, 160, 320) { $0.gravity = .init(.left, offsetX: 40) })
        let expected = try Self.crop(Self.full(), x: 40, y: 0, width: 160, height: 320)
        #expect(absoluteDifference(bitmap, expected).max <= 2)
    }

    @Test func fillDownScalesTheBoxDownInsteadOfEnlarging() async throws {
        let bitmap = try await Self.rendered(Self.options(.fillDown, 960, 160))
        #expect(bitmap.size == PixelSize(width: 480, height: 80))
        let filled = try await Self.rendered(Self.options(.fill, 960, 160))
        #expect(filled.size == PixelSize(width: 480, height: 160))
    }

    /// Force stretches: the left and right halves of a two-colour source stay halves. Without
    /// `enlarge`, a box that would enlarge one side is scaled down until it does not (imgproxy).
    @Test func forceStretchesToTheBox() async throws {
        let source = try RenderFixture.writePicture(PixelSize(width: 200, height: 100)) { x, _ in x < 100 ? (255, 0, 0, 255) : (0, 0, 255, 255) }
        let bitmap = try await Self.rendered(Self.options(.force, 60, 80), source)
        #expect(bitmap.size == PixelSize(width: 60, height: 80))
        #expect(RenderFixture.near(bitmap.pixel(x: 5, y: 40), (255, 0, 0, 255)))
        #expect(RenderFixture.near(bitmap.pixel(x: 55, y: 40), (0, 0, 255, 255)))
        #expect(try await Self.rendered(Self.options(.force, 60, 120), source).size == PixelSize(width: 50, height: 100))
        #expect(try await Self.rendered(Self.options(.force, 60, 120) { $0.enlarge = true }, source).size == PixelSize(width: 60, height: 120))
        let aurora = try await Self.rendered(Self.options(.force, 300, 100))
        #expect(aurora.size == PixelSize(width: 300, height: 100))
    }

    @Test func autoFillsOrFitsByOrientation() async throws {
        #expect(try await Self.rendered(Self.options(.auto, 200, 100)).size == PixelSize(width: 200, height: 100))
        #expect(try await Self.rendered(Self.options(.auto, 100, 200)).size == PixelSize(width: 100, height: 67))
    }

    @Test func zeroSideDprAndEnlarge() async throws {
        #expect(try await Self.rendered(Self.options(.fit, 0, 100)).size == PixelSize(width: 150, height: 100))
        #expect(try await Self.rendered(Self.options(.fit, 100, 0) { $0.dpr = 2 }).size == PixelSize(width: 200, height: 133))
        #expect(try await Self.rendered(Self.options(.fit, 960, 0)).size == PixelSize(width: 480, height: 320))
        #expect(try await Self.rendered(Self.options(.fit, 960, 0) { $0.enlarge = true }).size == PixelSize(width: 960, height: 640))
    }

    // MARK: Crop, extend, padding, background

    /// Four quadrants; `crop:0.5:0.5` at each compass corner keeps that quadrant's colour.
    @Test func cropFractionsTakeTheSourceRegion() async throws {
        let colours: [(UInt8, UInt8, UInt8, UInt8)] = [(255, 0, 0, 255), (0, 255, 0, 255), (0, 0, 255, 255), (255, 255, 0, 255)]
        let source = try RenderFixture.writePicture(PixelSize(width: 400, height: 200)) { x, y in colours[(y < 100 ? 0 : 2) + (x < 200 ? 0 : 1)] }
        let corners: [(CropAnchor, Int)] = [(.topLeft, 0), (.topRight, 1), (.bottomLeft, 2), (.bottomRight, 3)]
        for (anchor, quadrant) in corners {
            let options = Self.options(.fit, 100, 0) { $0.crop = .init(width: 0.5, height: 0.5, gravity: .init(anchor)) }
            let bitmap = try await Self.rendered(options, source)
            #expect(bitmap.size == PixelSize(width: 100, height: 50))
            for (x, y) in [(1, 1), (98, 1), (1, 48), (98, 48), (50, 25)] {
                #expect(RenderFixture.near(bitmap.pixel(x: x, y: y), colours[quadrant]), "\(anchor) at \(x),\(y)")
            }
        }
        // Pixels: a crop in whole pixels at scale 1 is the decode's region.
        let options = Self.options(.fit, 0, 0) { $0.crop = .init(width: 100, height: 80, gravity: .init(.topLeft, offsetX: 30, offsetY: 20)) }
        let bitmap = try await Self.rendered(options)
        #expect(absoluteDifference(bitmap, try Self.crop(Self.full(), x: 30, y: 20, width: 100, height: 80)).max == 0)
    }

    /// A fit inside 200 × 200 extended to the box: transparent bands (PNG), white ones (JPEG,
    /// imgproxy's default background), the background's colour when given.
    @Test func extendPadsToTheBoxAtTheGravity() async throws {
        let source = try RenderFixture.writePicture(PixelSize(width: 200, height: 100)) { _, _ in (255, 0, 0, 255) }
        let options = Self.options(.fit, 200, 200) { $0.extend = .init(.top) }
        let png = try await Self.rendered(options, source)
        #expect(png.size == PixelSize(width: 200, height: 200))
        #expect(RenderFixture.near(png.pixel(x: 100, y: 10), (255, 0, 0, 255)))
        #expect(png.pixel(x: 100, y: 190).a == 0)
        let jpeg = try await Self.rendered(options, source, format: .jpeg)
        #expect(RenderFixture.near(jpeg.pixel(x: 100, y: 190), (255, 255, 255, 255)))
        var green = options
        green.background = RGBAColor(red: 0, green: 255, blue: 0)
        let coloured = try await Self.rendered(green, source)
        #expect(RenderFixture.near(coloured.pixel(x: 100, y: 190), (0, 255, 0, 255)))
        #expect(RenderFixture.near(coloured.pixel(x: 100, y: 10), (255, 0, 0, 255)))
    }

    @Test func paddingAddsItsSidesTimesDpr() async throws {
        let source = try RenderFixture.writePicture(PixelSize(width: 100, height: 100)) { _, _ in (0, 0, 255, 255) }
        let options = Self.options(.fit, 50, 50) {
            $0.padding = .init(top: 5, right: 0, bottom: 0, left: 10)
            $0.dpr = 2
            $0.background = RGBAColor(red: 255, green: 255, blue: 0)
        }
        let bitmap = try await Self.rendered(options, source)
        #expect(bitmap.size == PixelSize(width: 120, height: 110))
        #expect(RenderFixture.near(bitmap.pixel(x: 5, y: 50), (255, 255, 0, 255)))  // left band: 20 px
        #expect(RenderFixture.near(bitmap.pixel(x: 60, y: 5), (255, 255, 0, 255)))  // top band: 10 px
        #expect(RenderFixture.near(bitmap.pixel(x: 25, y: 15), (0, 0, 255, 255)))
        #expect(RenderFixture.near(bitmap.pixel(x: 119, y: 109), (0, 0, 255, 255)))
    }

    /// A transparent PNG written as JPEG is flattened onto white, as imgproxy's default background.
    @Test func jpegFlattensOntoWhite() async throws {
        let source = try RenderFixture.writePicture(PixelSize(width: 40, height: 40)) { x, _ in x < 20 ? (0, 0, 0, 0) : (0, 0, 0, 255) }
        let bitmap = try await Self.rendered(Self.options(.fit, 0, 0), source, format: .jpeg)
        #expect(RenderFixture.near(bitmap.pixel(x: 5, y: 20), (255, 255, 255, 255)))
        #expect(RenderFixture.near(bitmap.pixel(x: 35, y: 20), (0, 0, 0, 255)))
    }

    @Test func trimCutsTheBorderBeforeTheResize() async throws {
        let source = try RenderFixture.writePicture(PixelSize(width: 200, height: 200)) { x, y in
            (50..<150).contains(x) && (80..<120).contains(y) ? (255, 0, 0, 255) : (255, 255, 255, 255)
        }
        let bitmap = try await Self.rendered(Self.options(.fit, 50, 0) { $0.trim = .init(threshold: 10) }, source)
        #expect(bitmap.size == PixelSize(width: 50, height: 20))
        #expect(RenderFixture.near(bitmap.pixel(x: 1, y: 1), (255, 0, 0, 255)))
    }

    /// The watermark's pixel at the centre of the result; no watermark configured: 400.
    @Test func watermarkGoesOverTheResult() async throws {
        let source = try RenderFixture.writePicture(PixelSize(width: 100, height: 100)) { _, _ in (0, 0, 255, 255) }
        let mark = try #require(Bitmap(width: 10, height: 10, bytesPerRow: 40, pixelFormat: .rgba8Straight,
                                       bytes: [UInt8](repeating: 255, count: 400)))
        let options = Self.options(.fit, 0, 0) { $0.watermark = .init(opacity: 1) }
        let image = try await RenderFixture.render(options, source, watermark: mark)
        let bitmap = try RenderFixture.decode(image.data).bitmap
        #expect(RenderFixture.near(bitmap.pixel(x: 50, y: 50), (255, 255, 255, 255)))
        #expect(RenderFixture.near(bitmap.pixel(x: 5, y: 5), (0, 0, 255, 255)))
        let refused = await RenderFixture.failure { () async throws(ServerError) in try await RenderFixture.render(options, source) }
        #expect(refused?.kind == .badRequest)
    }

    /// A size no limit allows is refused (422) before anything is decoded, and values that are
    /// not numbers plan without trapping.
    @Test func hostileSizesAreRefusedNotTrapped() async throws {
        let huge = Int(Int32.max)
        for options in [Self.options(.fit, huge, huge) { $0.enlarge = true },
                        Self.options(.fit, 100, 100) { $0.padding = .init(top: huge, right: huge, bottom: huge, left: huge) },
                        Self.options(.force, huge, 1) { $0.enlarge = true }] {
            let failure = await RenderFixture.failure { () async throws(ServerError) in try await RenderFixture.render(options, Self.aurora) }
            #expect(failure?.kind == .unprocessable)
        }
        let odd = Self.options(.fill, 100, 100) {
            $0.crop = .init(width: .nan, height: .infinity, gravity: .init(.left, offsetX: .nan, offsetY: -.infinity))
            $0.dpr = .nan
            $0.gravity = .init(.right, offsetX: .infinity, offsetY: .nan)
        }
        let plan = RenderPlan(source: PixelSize(width: 480, height: 320), options: odd)
        #expect(plan.outputSize.width > 0 && plan.outputSize.height > 0)
    }

    /// EXIF orientation 6: upright by default (`ar` true), the stored size with `ar:0`.
    @Test func autoRotateFollowsTheOrientation() async throws {
        let source = RenderFixture.sample("balloon-exif6.jpg")
        let stored = try RenderFixture.decoders.requireDecoder(for: Data(contentsOf: source)).withSession(for: Data(contentsOf: source)) { $0.info }
        let upright = try await Self.rendered(Self.options(.fit, 0, 0), source)
        #expect(upright.size == stored.uprightSize)
        let kept = try await Self.rendered(Self.options(.fit, 0, 0) { $0.autoRotate = false }, source)
        #expect(kept.size == stored.size)
        #expect(stored.size != stored.uprightSize)
    }

    /// `rot:` and `fl:` after the EXIF orientation, with the geometry planned on the turned
    /// picture as imgproxy's `calcScale` does: a quarter turn of the upright portrait balloon
    /// is landscape, so `rs:fit:100:100` makes it 100 wide. The pixels are the upright render
    /// turned (imgproxy's order, rotate then flip: a transpose for `rot:90/fl:1`) within one
    /// level: the geometry and the turn commute for a fit of the whole picture, up to the
    /// rounding of the resampler's two passes, which run in the other order on the transpose.
    @Test func rotateAndFlipTurnThePictureBeforeTheGeometry() async throws {
        let source = RenderFixture.sample("balloon-exif6.jpg")
        let data = try Data(contentsOf: source)
        let stored = try RenderFixture.decoders.requireDecoder(for: data).withSession(for: data) { $0.info }
        let upright = stored.uprightSize
        #expect(upright.height > upright.width, "the balloon stands upright")
        let turned = try await Self.rendered(Self.options(.fit, 100, 100) { $0.rotate = 90 }, source)
        #expect(turned.width == 100 && turned.height < 100, "landscape once turned: \(turned.size)")
        let transposed = try await Self.rendered(Self.options(.fit, 100, 100) { $0.rotate = 90; $0.flipHorizontal = true }, source)
        let plain = try await Self.rendered(Self.options(.fit, 100, 100), source)
        #expect(plain.size == transposed.size.transposed)
        let difference = absoluteDifference(transposed, plain.oriented(.leftMirrored))
        #expect(difference.max <= 1, "rot:90/fl:1 is the upright picture transposed: mean \(difference.mean), max \(difference.max)")
        // Without auto-rotation the turn applies to the stored pixels (stored landscape, turned portrait).
        let storedTurned = try await Self.rendered(Self.options(.fit, 100, 100) { $0.autoRotate = false; $0.rotate = 90 }, source)
        #expect(storedTurned.height == 100 && storedTurned.width < 100)
        // A fill's crop is on the turned picture: 100×50 of the landscape turn keeps its width.
        let filled = try await Self.rendered(Self.options(.fill, 100, 50) { $0.rotate = 270 }, source)
        #expect(filled.size == PixelSize(width: 100, height: 50))
    }

    // MARK: vips

    /// `bitmap` against `vipsthumbnail` of aurora with `arguments`: same size, mean difference
    /// under 2 levels of 255 and PSNR over 35 dB (two Lanczos-class resamplers).
    static func compareWithVips(_ bitmap: Bitmap, _ arguments: [String]) async throws {
        let tool = "/usr/bin/vipsthumbnail"
        guard ExternalTool.exists(tool) else { return }
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("renderer-vips-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let out = folder.appendingPathComponent("vips.png")
        let outcome = try await ExternalTool.run(tool, [aurora.path] + arguments + ["-o", out.path], timeout: 60)
        #expect(outcome.status == 0, "\(outcome.stderr)")
        let reference = try RenderFixture.decode(Data(contentsOf: out)).bitmap
        #expect(reference.size == bitmap.size)
        guard reference.size == bitmap.size else { return }
        let difference = absoluteDifference(bitmap, reference), quality = psnr(bitmap, reference)
        #expect(difference.mean < 2 && quality > 35, "mean \(difference.mean), max \(difference.max), PSNR \(quality)")
    }
}
