import Foundation
import PipelineCore
import Testing

/// The compositing built-ins on small synthetic pictures whose every expected pixel is worked
/// out by hand, in both pixel formats; ``RGBAColor`` parsing; ``Trim``'s border search. Pillow
/// and libvips check the same code on real pictures in ImgpipeCompositionTests.
@Suite("Compositing processors, colours and trim")
struct CompositingProcessorTests {
    /// A `size` bitmap of one colour, in `format`.
    static func filled(_ size: PixelSize, _ c: (UInt8, UInt8, UInt8, UInt8), _ format: PixelFormat = .rgba8Straight) -> Bitmap {
        var bitmap = Bitmap(zeroed: size, pixelFormat: format)
        bitmap.withUnsafeMutableBytes { p in
            for i in stride(from: 0, to: p.count, by: 4) { (p[i], p[i + 1], p[i + 2], p[i + 3]) = c }
        }
        return bitmap
    }

    static func rgba(_ b: Bitmap, _ x: Int, _ y: Int) -> [Int] {
        let p = b.pixel(x: x, y: y)
        return [Int(p.r), Int(p.g), Int(p.b), Int(p.a)]
    }

    @Test func coloursParseAsPeopleTypeThem() {
        #expect(RGBAColor(parsing: "#336699") == RGBAColor(red: 0x33, green: 0x66, blue: 0x99))
        #expect(RGBAColor(parsing: "369") == RGBAColor(red: 0x33, green: 0x66, blue: 0x99))
        #expect(RGBAColor(parsing: "#33669980") == RGBAColor(red: 0x33, green: 0x66, blue: 0x99, alpha: 0x80))
        #expect(RGBAColor(parsing: "Red") == RGBAColor(red: 255, green: 0, blue: 0))
        #expect(RGBAColor(parsing: "10, 20,30,40") == RGBAColor(red: 10, green: 20, blue: 30, alpha: 40))
        #expect(RGBAColor(parsing: "transparent") == .clear)
        for wrong in ["#12345", "1,2", "1,2,3,4,5", "256,0,0", "reddish", "", "#gggggg"] {
            #expect(RGBAColor(parsing: wrong) == nil, "\(wrong)")
        }
        for colour in [RGBAColor.white, .clear, RGBAColor(red: 1, green: 2, blue: 254, alpha: 9)] {
            #expect(RGBAColor(parsing: colour.description) == colour, "\(colour) reads back")
        }
    }

    @Test(arguments: [PixelFormat.rgba8Straight, .rgba8Premultiplied])
    func paddingCentresThePictureOnTheBackground(_ format: PixelFormat) throws {
        let red = Self.filled(PixelSize(width: 3, height: 2), (255, 0, 0, 255), format)
        let out = try ImageProcessor.padded(to: PixelSize(width: 5, height: 4), background: RGBAColor(red: 0, green: 0, blue: 255))
            .process(red)
        #expect(out.size == PixelSize(width: 5, height: 4))
        #expect(out.pixelFormat == format)
        #expect(Self.rgba(out, 0, 0) == [0, 0, 255, 255])
        #expect(Self.rgba(out, 1, 1) == [255, 0, 0, 255] && Self.rgba(out, 3, 2) == [255, 0, 0, 255])
        #expect(Self.rgba(out, 4, 1) == [0, 0, 255, 255] && Self.rgba(out, 1, 3) == [0, 0, 255, 255])
        let corner = try ImageProcessor.padded(to: PixelSize(width: 5, height: 4), gravity: .bottomRight).process(red)
        #expect(Self.rgba(corner, 4, 3) == [255, 0, 0, 255] && Self.rgba(corner, 1, 1) == [0, 0, 0, 0])
        // A half-transparent background is premultiplied in a premultiplied result.
        let half = try ImageProcessor.padded(to: PixelSize(width: 4, height: 2), background: RGBAColor(red: 200, green: 100, blue: 0, alpha: 128))
            .process(red)
        #expect(Self.rgba(half, 0, 0) == (format.isPremultiplied ? [100, 50, 0, 128] : [200, 100, 0, 128]))
        #expect(throws: ImageProcessingError.self) { try ImageProcessor.padded(to: PixelSize(width: 0, height: 4)).process(red) }
    }

    @Test func aLargerPictureIsCutToThePaddedSize() throws {
        let wide = Self.filled(PixelSize(width: 10, height: 2), (9, 9, 9, 255))
        let out = try ImageProcessor.padded(to: PixelSize(width: 4, height: 4), background: .white).process(wide)
        #expect(out.size == PixelSize(width: 4, height: 4))
        #expect(Self.rgba(out, 0, 1) == [9, 9, 9, 255] && Self.rgba(out, 0, 0) == [255, 255, 255, 255])
    }

    @Test func flatteningIsSourceOverTheColourInEitherFormat() throws {
        // Straight (255, 0, 0) at alpha 128 over white: 255, 255 × 127/255 = 127, 127, opaque.
        let straight = Self.filled(PixelSize(width: 2, height: 1), (255, 0, 0, 128))
        let flat = try ImageProcessor.flattened(onto: .white).process(straight)
        #expect(Self.rgba(flat, 0, 0) == [255, 127, 127, 255])
        #expect(flat.pixelFormat == .rgba8Straight)
        let premultiplied = try ImageProcessor.flattened(onto: .white).process(straight.premultiplied())
        #expect(Self.rgba(premultiplied, 1, 0) == [255, 127, 127, 255])
        let clear = try ImageProcessor.flattened(onto: RGBAColor(red: 1, green: 2, blue: 3)).process(Self.filled(PixelSize(width: 1, height: 1), (0, 0, 0, 0)))
        #expect(Self.rgba(clear, 0, 0) == [1, 2, 3, 255])
    }

    @Test func overlaysSitAtTheirGravityMovedInByTheOffset() throws {
        let base = Self.filled(PixelSize(width: 6, height: 4), (0, 0, 0, 255))
        let dot = Self.filled(PixelSize(width: 1, height: 1), (255, 255, 255, 255))
        let corner = try ImageProcessor.overlay(dot, offset: (1, 1)).process(base)
        #expect(Self.rgba(corner, 4, 2) == [255, 255, 255, 255], "bottom right, one in from each edge")
        #expect(Self.rgba(corner, 5, 3) == [0, 0, 0, 255])
        let topLeft = try ImageProcessor.overlay(dot, gravity: .topLeft, offset: (2, 1), opacity: 0.5).process(base)
        #expect(Self.rgba(topLeft, 2, 1) == [128, 128, 128, 255], "half opacity over black")
        let outside = try ImageProcessor.overlay(dot, gravity: .topLeft, offset: (-5, 0)).process(base)
        #expect(outside == base, "an overlay entirely outside leaves the picture as it was")
        let scaled = try ImageProcessor.overlay(Self.filled(PixelSize(width: 2, height: 1), (255, 255, 255, 255)),
                                                gravity: .topLeft, relativeSize: 1).process(base)
        #expect(Self.rgba(scaled, 5, 2) == [255, 255, 255, 255] && Self.rgba(scaled, 0, 3) == [0, 0, 0, 255],
                "fitted inside the whole 6 × 4: 6 × 3")
        #expect(throws: ImageProcessingError.self) { try ImageProcessor.overlay(dot, opacity: 2).process(base) }
        #expect(throws: ImageProcessingError.self) { try ImageProcessor.overlay(dot, relativeSize: 0).process(base) }
    }

    /// Offsets at the ends of `Int` put the overlay off the picture at every gravity: no
    /// overflow trap (`Int.min` trapped, issue 41's re-probe), the picture unchanged.
    @Test func extremeOverlayOffsetsLeaveThePictureAsItWas() throws {
        let base = Self.filled(PixelSize(width: 6, height: 4), (0, 0, 0, 255))
        let dot = Self.filled(PixelSize(width: 1, height: 1), (255, 255, 255, 255))
        for gravity in [CropAnchor.topLeft, .center, .bottomRight] {
            for offset in [(Int.min, 0), (0, Int.min), (Int.max, Int.max), (Int.min, Int.max)] {
                #expect(try ImageProcessor.overlay(dot, gravity: gravity, offset: offset).process(base) == base,
                        "\(gravity) \(offset)")
            }
        }
    }

    /// Straight colour under low alpha survives only in a straight base: the same overlay over
    /// the same picture in the two formats agrees once both are premultiplied (to a level).
    @Test func overlayingAStraightOrPremultipliedBaseAgrees() throws {
        var base = Bitmap(zeroed: PixelSize(width: 16, height: 16), pixelFormat: .rgba8Straight)
        base.withUnsafeMutableBytes { p in
            for i in stride(from: 0, to: p.count, by: 4) {
                (p[i], p[i + 1], p[i + 2], p[i + 3]) = (UInt8(i % 251), UInt8(i / 4 % 256), 200, UInt8(i / 4 % 256))
            }
        }
        var top = Bitmap(zeroed: PixelSize(width: 8, height: 8), pixelFormat: .rgba8Straight)
        top.withUnsafeMutableBytes { p in
            for i in stride(from: 0, to: p.count, by: 4) { (p[i], p[i + 1], p[i + 2], p[i + 3]) = (250, 20, UInt8(i % 256), UInt8((i * 7) % 256)) }
        }
        let overlay = ImageProcessor.overlay(top, gravity: .center, opacity: 0.8)
        let fromStraight = try overlay.process(base)
        #expect(fromStraight.pixelFormat == .rgba8Straight)
        let fromPremultiplied = try overlay.process(base.premultiplied())
        #expect(fromPremultiplied.pixelFormat == .rgba8Premultiplied)
        let p = fromStraight.premultiplied(), q = fromPremultiplied
        var worst = 0
        for y in 0..<16 { for x in 0..<16 { worst = max(worst, zip(Self.rgba(p, x, y), Self.rgba(q, x, y)).map { abs($0 - $1) }.max() ?? 0) } }
        #expect(worst <= 1, "premultiplied results within a level (worst \(worst))")
    }

    @Test func anOverlayIsNamedByItsPixelsUnlessGivenAName() {
        let one = Self.filled(PixelSize(width: 2, height: 2), (1, 2, 3, 255))
        let other = Self.filled(PixelSize(width: 2, height: 2), (1, 2, 4, 255))
        #expect(ImageProcessor.overlay(one).identifier == ImageProcessor.overlay(one).identifier)
        #expect(ImageProcessor.overlay(one).identifier != ImageProcessor.overlay(other).identifier)
        #expect(ImageProcessor.overlay(one).identifier != ImageProcessor.overlay(one, opacity: 0.5).identifier)
        #expect(ImageProcessor.overlay(one, id: "logo-v2").identifier == ImageProcessor.overlay(other, id: "logo-v2").identifier)
        #expect(ImageProcessor.overlay(one).acceptsStraightAlpha && !ImageProcessor.circle.acceptsStraightAlpha)
    }

    @Test func trimIsPartOfTheKeyAndTheProcessingOptions() {
        let url = URL(fileURLWithPath: "/x.png")
        var trimmed = ImageRequest(url: url, width: 10, height: 10)
        trimmed.processing.trim = Trim()
        #expect(ImageKey(request: trimmed, cacheURL: url) != ImageKey(request: ImageRequest(url: url, width: 10, height: 10), cacheURL: url))
        #expect(Trim(threshold: -3).threshold == 0 && Trim(threshold: .nan).threshold == 10)
        #expect("\(Trim(background: .white))" == "trim(10.0,#ffffff)")
    }
}
