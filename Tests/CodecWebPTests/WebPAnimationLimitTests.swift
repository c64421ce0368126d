import CodecWebP
import Foundation
import PipelineCore
import PipelineTestSupport
import Testing

/// The animation limits on animated WebPs made here from the one 64×64 lossless frame of
/// `Fixtures/huge-canvas.webp` (issue 21, finding 3: a 46 KB WebP of 1,000 frames on a
/// 10000×10000 canvas peaked at 1.2 GB): refused from the container's frame count, before
/// libwebp allocates its canvases or decodes a frame.
@Suite(.tags(.cpuBound))
struct WebPAnimationLimitTests {
    /// The fixture's frame: its `ANMF` payload after the 16-byte frame header (the `VP8L` chunk).
    static func frameBitstream() throws -> [UInt8] {
        let fixture = [UInt8](try Data(contentsOf: URL(fileURLWithPath: #filePath).deletingLastPathComponent()
            .appendingPathComponent("Fixtures/huge-canvas.webp")))
        var offset = 12
        while offset + 8 <= fixture.count {
            let size = (0..<4).reduce(0) { $0 | Int(fixture[offset + 4 + $1]) << (8 * $1) }
            if Array(fixture[offset..<(offset + 4)]) == Array("ANMF".utf8), size > 16, offset + 8 + size <= fixture.count {
                return Array(fixture[(offset + 8 + 16)..<(offset + 8 + size)])
            }
            offset += 8 + size + size % 2
        }
        throw ImagePipelineError.corruptData(format: .webp, message: "the fixture has no ANMF chunk")
    }

    /// `frames` copies of the fixture's frame at (0, 0) of a `canvas`, 100 ms each.
    static func animation(canvas: PixelSize, frames: Int) throws -> Data {
        let chunk = WebPAnimationTests.chunk, le = WebPAnimationTests.le
        let header = le(0, 3) + le(0, 3) + le(63, 3) + le(63, 3) + le(100, 3) + [0]
        let frame = chunk("ANMF", header + (try frameBitstream()))
        let vp8x = chunk("VP8X", [0x02 | 0x10, 0, 0, 0] + le(canvas.width - 1, 3) + le(canvas.height - 1, 3))
        let body = Array("WEBP".utf8) + vp8x + chunk("ANIM", [0, 0, 0, 0] + le(0, 2))
            + Array([[UInt8]](repeating: frame, count: frames).joined())
        return Data(Array("RIFF".utf8) + le(body.count, 4) + body)
    }

    @Test func framesTimesTheCanvasOverThePixelLimitAreRefusedFromTheContainer() throws {
        let canvas = PixelSize(width: 9999, height: 9999)
        let data = try Self.animation(canvas: canvas, frames: 11)
        #expect(data.count < 1_000)
        // 11 × 99,980,001 pixels: over the default 10⁹, each frame under the 10⁸ still limit.
        #expect(throws: ImagePipelineError.overLimit(.animationPixels, limit: 1_000_000_000, actual: 1_099_780_011)) {
            try WebPDecoder().makeAnimationDecoder(for: data, options: DecodeOptions())
        }
        // The header of the still picture is read as before.
        let info = try WebPDecoder().readInfo(data)
        #expect(info.size == canvas && info.frameCount == 11)
        // A lowered limit on a small canvas: 64×64 × 3 frames = 12,288 pixels.
        let small = try Self.animation(canvas: PixelSize(width: 64, height: 64), frames: 3)
        #expect(throws: ImagePipelineError.overLimit(.animationPixels, limit: 12_287, actual: 12_288)) {
            try WebPDecoder().makeAnimationDecoder(for: small, options: DecodeOptions(maxAnimationPixelCount: 12_287))
        }
        #expect(try WebPDecoder().makeAnimationDecoder(for: small, options: DecodeOptions(maxAnimationPixelCount: 12_288))
            .animationInfo.frameCount == 3)
    }

    @Test func moreFramesThanTheLimitAreRefusedAndTheLimitItselfPasses() throws {
        let canvas = PixelSize(width: 64, height: 64)
        let four = DecodeOptions(maxAnimationFrameCount: 4)
        #expect(throws: ImagePipelineError.overLimit(.animationFrames, limit: 4, actual: 5)) {
            try WebPDecoder().makeAnimationDecoder(for: try Self.animation(canvas: canvas, frames: 5), options: four)
        }
        let decoder = try WebPDecoder().makeAnimationDecoder(for: try Self.animation(canvas: canvas, frames: 4), options: four)
        var frames = 0
        while let frame = try decoder.nextFrame(size: nil) {
            #expect(frame.bitmap.size == canvas)
            frames += 1
        }
        #expect(frames == 4)
        // libwebp's two canvases, the frame handed out, one frame's decoding.
        #expect(WebPDecoder().estimatedAnimationMemory(decoder.animationInfo) == 64 * 64 * 4 * 4)
    }

    /// Issue 41, finding 8: `Fixtures/w10k-2.webp` (136 bytes, two 1×1 frames on a 10000×10000
    /// canvas) used 1.21 GB through `imgpipe frames`. Its four canvases (1.6 GB) are over what
    /// the largest still takes (100 MP × 4 bytes): refused from the header, before libwebp
    /// allocates a canvas, so the refusal costs far less than one canvas (400 MB).
    @Test func anAnimationWhoseCanvasesOutweighTheLargestStillIsRefusedBeforeTheyExist() async throws {
        let data = try Data(contentsOf: URL(fileURLWithPath: #filePath).deletingLastPathComponent()
            .appendingPathComponent("Fixtures/w10k-2.webp"))
        #expect(data.count == 136)
        let refusal = ImagePipelineError.overLimit(.animationCanvases, limit: 400_000_000, actual: 1_600_000_000)
        try await ResidentMemory.exclusively {
            let growth = try ResidentMemory.peakGrowth(attempts: 3) {
                #expect(throws: refusal) { try WebPDecoder().makeAnimationDecoder(for: data, options: DecodeOptions()) }
            }
            if let growth { #expect(growth < 50_000_000, "refusing grew the peak by \(growth) bytes") }
        }
        // The still picture (its first frame, shrunk without the canvas) is read as before.
        #expect(try WebPDecoder().readInfo(data).size == PixelSize(width: 10_000, height: 10_000))
        // Under a raised still limit the same canvases fit: the limit is the still picture's.
        let raised = DecodeOptions(maxPixelCount: 400_000_000)
        #expect(raised.maxAnimationCanvasBytes == 1_600_000_000)
        #expect(throws: Never.self) { _ = try WebPDecoder().makeAnimationDecoder(for: data, options: raised) }
        // One frame is a still: held to the pixel limit only (`huge-canvas.webp`, 9999×9999).
        let still = try Data(contentsOf: URL(fileURLWithPath: #filePath).deletingLastPathComponent()
            .appendingPathComponent("Fixtures/huge-canvas.webp"))
        #expect(throws: Never.self) { _ = try WebPDecoder().makeAnimationDecoder(for: still, options: DecodeOptions()) }
    }
}
