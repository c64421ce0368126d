import CodecGIF
import Foundation
import PipelineCore
import PipelineTestSupport
import Testing

/// `GIFEncoder` read back by `GIFDecoder` (itself checked against the corpus md5s): exact
/// colours when they fit a palette, one-bit alpha, and the animation session's choices
/// (changed rectangles, a pixel turned transparent, a repeated frame, loop counts).
@Suite("GIF encoder", .tags(.cpuBound))
struct GIFEncoderTests {
    /// A `size` straight bitmap whose pixel (x, y) is `colour(x, y)`.
    static func picture(_ size: PixelSize, _ colour: (Int, Int) -> (UInt8, UInt8, UInt8, UInt8)) -> Bitmap {
        var bitmap = Bitmap(zeroed: size, pixelFormat: .rgba8Straight)
        bitmap.withUnsafeMutableBytes { p in
            for y in 0..<size.height { for x in 0..<size.width { let o = (y * size.width + x) * 4; (p[o], p[o + 1], p[o + 2], p[o + 3]) = colour(x, y) } }
        }
        return bitmap
    }

    static func frames(_ data: Data) throws -> (info: AnimationInfo, frames: [AnimationFrame]) {
        let decoder = try GIFDecoder().makeAnimationDecoder(for: data, options: DecodeOptions(pixelFormat: .rgba8Straight))
        var frames = [AnimationFrame]()
        while let frame = try decoder.nextFrame(size: nil) { frames.append(frame) }
        return (decoder.animationInfo, frames)
    }

    @Test func aStillWithFewColoursIsExactAndAlphaIsOneBit() throws {
        let size = PixelSize(width: 40, height: 30)
        let source = Self.picture(size) { x, y in (UInt8(x / 8 * 50), UInt8(y / 10 * 80), 77, x < 5 ? 0 : (x < 10 ? 100 : 255)) }  // 15 colours
        let (_, frames) = try Self.frames(try GIFEncoder().encode(source))
        let back = try #require(frames.first).bitmap.straightened()
        for y in 0..<size.height {
            for x in 0..<size.width {
                let p = back.pixel(x: x, y: y), s = source.pixel(x: x, y: y)
                if s.a < 128 { #expect(p.a == 0, "(\(x), \(y)) transparent") } else {
                    #expect((p.r, p.g, p.b, p.a) == (s.r, s.g, s.b, 255), "(\(x), \(y)) exact")
                }
            }
        }
    }

    @Test(arguments: [GIFEncoder.Dithering.floydSteinberg, .none])
    func manyColoursAreQuantisedClosely(_ dithering: GIFEncoder.Dithering) throws {
        let size = PixelSize(width: 128, height: 64)
        let source = Self.picture(size) { x, y in (UInt8(x * 2), UInt8(y * 4), UInt8((x + y) % 256), 255) }  // 8,192 colours
        let (_, frames) = try Self.frames(try GIFEncoder(dithering: dithering).encode(source))
        let back = try #require(frames.first).bitmap.straightened()
        var total = 0
        for y in 0..<size.height { for x in 0..<size.width {
            let p = back.pixel(x: x, y: y), s = source.pixel(x: x, y: y)
            total += abs(Int(p.r) - Int(s.r)) + abs(Int(p.g) - Int(s.g)) + abs(Int(p.b) - Int(s.b))
        } }
        let mean = Double(total) / Double(size.pixelCount * 3)
        #expect(mean < 4, "\(dithering): mean error \(mean) levels")
    }

    @Test func anAnimationKeepsItsFramesTimingAndLoops() throws {
        let size = PixelSize(width: 20, height: 10)
        let red = Self.picture(size) { _, _ in (255, 0, 0, 255) }
        let dot = Self.picture(size) { x, y in x == 3 && y == 4 ? (0, 0, 255, 255) : (255, 0, 0, 255) }
        // The third frame makes the left half transparent: the frame before is cleared.
        let half = Self.picture(size) { x, _ in x < 10 ? (0, 0, 0, 0) : (255, 0, 0, 255) }
        let session = try GIFEncoder().makeAnimationSession(size: size, loopCount: 0, options: EncodeOptions())
        try session.add(red, durationMilliseconds: 100)
        try session.add(dot, durationMilliseconds: 50)
        try session.add(dot, durationMilliseconds: 70)  // the same again: the one before lasts 120 ms
        try session.add(half, durationMilliseconds: 200)
        let (info, frames) = try Self.frames(try session.finish())
        #expect(info.loopCount == 0 && frames.count == 3)
        #expect(frames.map(\.delayMilliseconds) == [100, 120, 200])
        for (frame, expected) in zip(frames, [red, dot, half]) {
            #expect(frame.bitmap.straightened().unpremultipliedBytes() == expected.unpremultipliedBytes(), "frame \(frame.index)")
        }
        let once = try GIFEncoder().makeAnimationSession(size: size, loopCount: nil, options: EncodeOptions())
        try once.add(red, durationMilliseconds: 10)
        try once.add(dot, durationMilliseconds: 10)
        #expect(try Self.frames(try once.finish()).info.loopCount == nil, "no NETSCAPE block: plays once")
        #expect(throws: EncodingError.self) { try GIFEncoder().makeAnimationSession(size: size, loopCount: 0, options: EncodeOptions()).finish() }
        #expect(throws: EncodingError.self) { try session.add(red, durationMilliseconds: 10) }
    }
}
