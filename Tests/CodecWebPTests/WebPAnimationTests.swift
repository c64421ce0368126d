import CodecWebP
import Foundation
import PipelineCore
import PipelineTestSupport
import Testing

/// Animations: frame count from WebPDemux, the first frame on a transparent canvas.
@Suite(.enabled(if: Corpus.has("webp"), Corpus.missing("webp")), .tags(.cpuBound))
struct WebPAnimationTests {
    /// A RIFF chunk, padded to an even size.
    static func chunk(_ fourCC: String, _ payload: [UInt8]) -> [UInt8] {
        var bytes = Array(fourCC.utf8) + le(payload.count, 4) + payload
        if payload.count % 2 == 1 { bytes.append(0) }
        return bytes
    }

    static func le(_ value: Int, _ count: Int) -> [UInt8] { (0..<count).map { UInt8(truncatingIfNeeded: value >> (8 * $0)) } }

    /// An animated WebP made by hand: `test.webp` (128×128 lossy) at (4, 6), then
    /// `small_13x1.webp` at (0, 0), on a `canvas` (default 140×150) with an opaque red background.
    static func animation(canvas: PixelSize = PixelSize(width: 140, height: 150)) throws -> Data {
        func frame(_ file: String, x: Int, y: Int, size: PixelSize) throws -> [UInt8] {
            let still = [UInt8](try Corpus.data("webp", file))
            let header = le(x / 2, 3) + le(y / 2, 3) + le(size.width - 1, 3) + le(size.height - 1, 3) + le(100, 3) + [0]
            return chunk("ANMF", header + Array(still[12...]))  // the still's VP8/VP8L chunk
        }
        let vp8x = chunk("VP8X", [0x02 | 0x10, 0, 0, 0] + le(canvas.width - 1, 3) + le(canvas.height - 1, 3))
        let anim = chunk("ANIM", [0, 0, 0xFF, 0xFF] + le(0, 2))  // BGRA background: red, ignored as WebPAnimDecoder does
        let body = Array("WEBP".utf8) + vp8x + anim
            + (try frame("test.webp", x: 4, y: 6, size: PixelSize(width: 128, height: 128)))
            + (try frame("small_13x1.webp", x: 0, y: 0, size: PixelSize(width: 13, height: 1)))
        return Data(Array("RIFF".utf8) + le(body.count, 4) + body)
    }

    @Test func theInfoCountsFrames() throws {
        let info = try WebPDecoder().readInfo(try Self.animation())
        #expect(info.size == PixelSize(width: 140, height: 150))
        #expect(info.frameCount == 2)
        #expect(info.hasAlpha)
    }

    @Test func theFirstFrameIsDrawnOnATransparentCanvas() throws {
        let decoded = try WebPDecoder().decode(try Self.animation(), options: DecodeOptions())
        let still = try WebPDecoder().decode(try Corpus.data("webp", "test.webp"), options: DecodeOptions()).bitmap
        let bitmap = decoded.bitmap
        #expect(bitmap.size == PixelSize(width: 140, height: 150))
        var outside = 0, differ = 0
        for y in 0..<bitmap.height {
            for x in 0..<bitmap.width {
                let px = bitmap.pixel(x: x, y: y)
                if (4..<132).contains(x), (6..<134).contains(y) {
                    if px != still.pixel(x: x - 4, y: y - 6) { differ += 1 }
                } else if px != (0, 0, 0, 0) {
                    outside += 1
                }
            }
        }
        #expect(differ == 0, "the frame's pixels are test.webp's")
        #expect(outside == 0, "the rest of the canvas is transparent")
    }

    /// Asked for straight alpha at full size, the first frame (lossless with alpha) on its
    /// transparent canvas is the still's straight values exactly (dwebp's, by the conformance
    /// test), and transparent black around it.
    @Test func aStraightFirstFrameKeepsTheStoredValues() throws {
        let still = [UInt8](try Corpus.data("webp", "lossless1.webp"))
        try #require(String(decoding: still[12..<16], as: UTF8.self) == "VP8L", "lossless1.webp is a simple lossless file")
        let frameSize = PixelSize(width: 1000, height: 307), canvas = PixelSize(width: 1010, height: 320)
        let header = Self.le(2, 3) + Self.le(3, 3) + Self.le(frameSize.width - 1, 3) + Self.le(frameSize.height - 1, 3) + Self.le(100, 3) + [0]
        let body = Array("WEBP".utf8) + Self.chunk("VP8X", [0x02 | 0x10, 0, 0, 0] + Self.le(canvas.width - 1, 3) + Self.le(canvas.height - 1, 3))
            + Self.chunk("ANIM", [0, 0, 0, 0] + Self.le(0, 2)) + Self.chunk("ANMF", header + Array(still[12...]))
        let data = Data(Array("RIFF".utf8) + Self.le(body.count, 4) + body)
        let straight = try WebPDecoder().decode(data, options: DecodeOptions(pixelFormat: .rgba8Straight)).bitmap
        let expected = try WebPDecoder().decode(Data(still), options: DecodeOptions(pixelFormat: .rgba8Straight)).bitmap
        #expect(straight.pixelFormat == .rgba8Straight && straight.size == canvas)
        var differ = 0, outside = 0
        for y in 0..<canvas.height {
            for x in 0..<canvas.width {
                let px = straight.pixel(x: x, y: y)
                if (4..<1004).contains(x), (6..<313).contains(y) {
                    if px != expected.pixel(x: x - 4, y: y - 6) { differ += 1 }
                } else if px != (0, 0, 0, 0) {
                    outside += 1
                }
            }
        }
        #expect(differ == 0, "the frame's pixels are lossless1.webp's straight values")
        #expect(outside == 0, "the rest of the canvas is transparent")
    }

    @Test func aScaledFirstFrameHasTheTargetSize() throws {
        let target = PixelSize(width: 35, height: 37)
        let decoded = try WebPDecoder().decode(try Self.animation(), options: DecodeOptions(targetSize: target))
        #expect(decoded.bitmap.size == target)
        let full = try WebPDecoder().decode(try Self.animation(), options: DecodeOptions()).bitmap
        #expect(decoded.bitmap == Resampler.resample(full, to: target))
    }

    /// `Fixtures/huge-canvas.webp` (104 bytes, made by hand: see Fixtures/README.md): a 64×64
    /// lossless frame (green, with a transparent 16×16 hole) at (4000, 6000) on a 9999×9999
    /// canvas, just under the 100 MP limit. The canvas as a bitmap is 400 MB; a thumbnail
    /// streams the canvas rows (transparent but for the frame's) through the resampler instead.
    @Test func aHugeCanvasWithASmallFirstFrameIsShrunkWithoutTheCanvasBitmap() async throws {
        let data = try Data(contentsOf: URL(fileURLWithPath: #filePath).deletingLastPathComponent()
            .appendingPathComponent("Fixtures/huge-canvas.webp"))
        #expect(try WebPDecoder().readInfo(data).size == PixelSize(width: 9999, height: 9999))
        try await ResidentMemory.exclusively {
            let target = PixelSize(width: 256, height: 256)
            var thumbnail: DecodedImage?
            // Least of 3 runs: other suites allocate in parallel in this process. The canvas
            // bitmap alone would be 400 MB; a bound of 100 MB cannot be reached without it.
            let growth = try #require(try ResidentMemory.peakGrowth(attempts: 3) {
                thumbnail = try WebPDecoder().decode(data, options: DecodeOptions(targetSize: target, resamplingFilter: .areaAverage))
            }, "cannot measure the peak RSS on this system")
            let bitmap = try #require(thumbnail?.bitmap)
            #expect(bitmap.size == target)
            #expect(growth < 100_000_000, "a 256×256 thumbnail grew the peak by \(growth) bytes")
            // The frame covers output pixels 102.4..<104.0 × 153.6..<155.2: (103, 154) is inside.
            let inside = bitmap.pixel(x: 103, y: 154)
            #expect(inside.a > 0 && inside.g > inside.r && inside.g > inside.b, "\(inside)")
            var lit = 0
            for y in 0..<bitmap.height { for x in 0..<bitmap.width where bitmap.pixel(x: x, y: y).a > 0 { lit += 1 } }
            #expect(lit > 0 && lit <= 9, "only the frame's few output pixels are drawn: \(lit)")
        }
    }

    /// A first frame that covers the whole canvas is the picture: it is scaled as a still
    /// (by libwebp while decoding when it can), with the same result as the still file.
    @Test func aFrameCoveringTheCanvasIsScaledLikeAStill() throws {
        func animation(_ file: String, size: PixelSize) throws -> Data {
            let still = [UInt8](try Corpus.data("webp", file))
            let header = Self.le(0, 3) + Self.le(0, 3) + Self.le(size.width - 1, 3) + Self.le(size.height - 1, 3) + Self.le(100, 3) + [0]
            let body = Array("WEBP".utf8) + Self.chunk("VP8X", [0x02 | 0x10, 0, 0, 0] + Self.le(size.width - 1, 3) + Self.le(size.height - 1, 3))
                + Self.chunk("ANIM", [0, 0, 0, 0] + Self.le(0, 2)) + Self.chunk("ANMF", header + Array(still[12...]))
            return Data(Array("RIFF".utf8) + Self.le(body.count, 4) + body)
        }
        for (file, size) in [("test.webp", PixelSize(width: 128, height: 128)), ("lossless1.webp", PixelSize(width: 1000, height: 307))] {
            let target = PixelSize(width: size.width / 5, height: size.height / 5)
            let still = try WebPDecoder().decode(try Corpus.data("webp", file), options: DecodeOptions(targetSize: target)).bitmap
            let animated = try WebPDecoder().decode(try animation(file, size: size), options: DecodeOptions(targetSize: target)).bitmap
            #expect(animated == still, "\(file)")
        }
    }

    @Test func aFrameOutsideTheCanvasIsCorrupt() throws {
        let small = try Self.animation(canvas: PixelSize(width: 100, height: 100))
        #expect(throws: ImagePipelineError.self) { _ = try WebPDecoder().decode(small, options: DecodeOptions()) }
    }
}
