import Foundation
import PipelineCore
import Testing

/// ``Bitmap``'s two alpha representations and the conversions between them.
struct BitmapAlphaTests {
    /// Every (colour, alpha) pair once: 256 × 256 straight pixels, colour in red, `255 - c`
    /// in green, alpha varying; rows padded by 8 bytes.
    static let everyPair: Bitmap = {
        let width = 256, height = 256, stride = width * 4 + 8
        var bytes = [UInt8](repeating: 0xEE, count: stride * height)
        for a in 0..<height {
            for c in 0..<width {
                let i = a * stride + c * 4
                bytes[i] = UInt8(c); bytes[i + 1] = UInt8(255 - c); bytes[i + 2] = 7; bytes[i + 3] = UInt8(a)
            }
        }
        return Bitmap(width: width, height: height, bytesPerRow: stride, pixelFormat: .rgba8Straight, bytes: bytes)!
    }()

    @Test func premultiplyingRoundsAndStraighteningInvertsWithinTheRoundTrip() {
        let straight = Self.everyPair
        let premultiplied = straight.premultiplied()
        #expect(premultiplied.pixelFormat == .rgba8Premultiplied)
        #expect(premultiplied.bytesPerRow == straight.bytesPerRow)
        let back = premultiplied.straightened()
        #expect(back.pixelFormat == .rgba8Straight)
        for a in 0..<256 {
            for c in 0..<256 {
                let p = premultiplied.pixel(x: c, y: a), s = back.pixel(x: c, y: a)
                #expect(Int(p.r) == (c * a + 127) / 255, "premultiplied \(c) at alpha \(a)")
                #expect(p.a == UInt8(a) && s.a == UInt8(a))
                // Premultiplied colour has a + 1 levels: straight comes back within ⌈127.5 / a⌉.
                let bound = a == 0 ? 0 : (255 + 2 * a - 1) / (2 * a)
                let expected = a == 0 ? 0 : c
                if abs(Int(s.r) - expected) > bound { Issue.record("straight \(c) at alpha \(a) came back as \(s.r)") }
            }
        }
        // The unpremultiplied bytes of the premultiplied bitmap are the straightened bitmap's.
        #expect(premultiplied.unpremultipliedBytes() == back.unpremultipliedBytes())
    }

    @Test func aStraightBitmapsBytesGoToEncodersUnchanged() {
        let straight = Self.everyPair
        let packed = straight.unpremultipliedBytes()
        #expect(packed.count == 256 * 256 * 4)
        for y in 0..<256 {
            let row = Array(straight.bytes[(y * straight.bytesPerRow)..<(y * straight.bytesPerRow + 1024)])
            if Array(packed[(y * 1024)..<((y + 1) * 1024)]) != row { Issue.record("row \(y) changed"); return }
        }
        let tight = Bitmap(width: 2, height: 1, bytesPerRow: 8, pixelFormat: .rgba8Straight, bytes: [9, 8, 7, 6, 5, 4, 3, 2])!
        #expect(tight.unpremultipliedBytes() == [9, 8, 7, 6, 5, 4, 3, 2], "colour under low alpha is kept as stored")
    }

    /// Opaque pixels and transparent black are the same bytes in both formats: converting only
    /// relabels. Colour under alpha 0 does not survive premultiplying.
    @Test func opaqueAndTransparentBlackAreOnlyRelabelled() {
        let bytes: [UInt8] = [10, 20, 30, 255, 0, 0, 0, 0, 200, 100, 50, 255]
        let opaque = Bitmap(width: 3, height: 1, bytesPerRow: 12, pixelFormat: .rgba8Straight, bytes: bytes)!
        #expect(opaque.premultiplied().bytes == bytes)
        #expect(opaque.premultiplied().pixelFormat == .rgba8Premultiplied)
        #expect(opaque.premultiplied().straightened() == opaque)
        #expect(opaque.straightened() == opaque, "already straight: itself")
        let hidden = Bitmap(width: 1, height: 1, bytesPerRow: 4, pixelFormat: .rgba8Straight, bytes: [10, 20, 30, 0])!
        #expect(hidden.premultiplied().bytes == [0, 0, 0, 0])
        #expect(Bitmap(zeroed: PixelSize(width: 2, height: 2), pixelFormat: .rgba8Straight).pixelFormat == .rgba8Straight)
    }

    @Test func orientationKeepsTheFormat() {
        let straight = Self.everyPair
        let turned = straight.oriented(.right)
        #expect(turned.pixelFormat == .rgba8Straight)
        #expect(turned.pixel(x: 255, y: 3) == straight.pixel(x: 3, y: 0))
    }

    @Test func theFormatIsPartOfTheMemoryKey() throws {
        let url = try #require(URL(string: "https://example.com/a.png"))
        let premultiplied = ImageRequest(url: url, width: 10, height: 10)
        var straight = premultiplied
        straight.processing.pixelFormat = .rgba8Straight
        #expect(ImageKey(request: premultiplied, cacheURL: url) != ImageKey(request: straight, cacheURL: url))
        #expect(ProcessingOptions().pixelFormat == .rgba8Premultiplied)
        #expect(DecodeOptions().pixelFormat == .rgba8Premultiplied)
    }
}
