@testable import CodecGIF
import Foundation
import GIFFixtureWriter
import LoaderFile
import PipelineCore
import PipelineTestSupport
import Testing

/// The animation limits on GIFs made here (issue 21, finding 3: a 2.3 MB GIF of 100,000 frames
/// became 100,000 files): refused from the block walk, which stops one frame past the limits,
/// before any frame is decoded; a still decode of the same file is not refused.
@Suite(.tags(.cpuBound))
struct GIFAnimationLimitTests {
    static let palette: [(UInt8, UInt8, UInt8)] = [(255, 0, 0), (0, 0, 255)]

    /// `count` frames covering a `size`×`size` canvas; with `damaged`, every frame's LZW data
    /// starts with a code giflib refuses, so decoding any frame fails.
    static func gif(frames count: Int, size: Int = 1, damaged: Bool = false) -> Data {
        let frame = GIFWriter.Frame(width: size, height: size, indices: [UInt8](repeating: 1, count: size * size),
                                    delayCentiseconds: 2, lzwData: damaged ? [0xFF, 0xFF, 0xFF, 0xFF] : nil)
        return GIFWriter.gif(width: size, height: size, palette: palette, loopCount: 0, frames: Array(repeating: frame, count: count))
    }

    @Test func aGIFWithMoreFramesThanTheLimitIsRefusedBeforeAnyFrameIsDecoded() throws {
        let damaged = Self.gif(frames: 5, damaged: true)
        // Decoding any of its frames fails: a refusal that is not that error decoded none.
        let unlimited = try GIFDecoder().makeAnimationDecoder(for: damaged, options: DecodeOptions())
        #expect(unlimited.animationInfo.frameCount == 5)
        #expect(throws: ImagePipelineError.self) { try unlimited.nextFrame(size: nil) }
        let four = DecodeOptions(maxAnimationFrameCount: 4)
        #expect(throws: ImagePipelineError.overLimit(.animationFrames, limit: 4, actual: nil)) {
            try GIFDecoder().makeAnimationDecoder(for: damaged, options: four)
        }
        // At the limit every frame comes.
        let decoder = try GIFDecoder().makeAnimationDecoder(for: Self.gif(frames: 4), options: four)
        var frames = 0
        while try decoder.nextFrame(size: nil) != nil { frames += 1 }
        #expect(frames == 4)
    }

    @Test func theBlockWalkStopsOneFramePastTheLimits() throws {
        let data = Self.gif(frames: 50, size: 10)
        try data.withUnsafeBytes { bytes in
            let whole = try GIFStructure(bytes)
            #expect(whole.frameCount == 50 && whole.countIsComplete)
            let byFrames = try GIFStructure(bytes, animationLimits: DecodeOptions(maxAnimationFrameCount: 7))
            #expect(byFrames.frameCount == 8 && !byFrames.countIsComplete)
            // 10×10 canvas: 1,000 pixels allow 10 frames.
            let byPixels = try GIFStructure(bytes, animationLimits: DecodeOptions(maxAnimationPixelCount: 1_000))
            #expect(byPixels.frameCount == 11 && !byPixels.countIsComplete)
            let roomy = try GIFStructure(bytes, animationLimits: DecodeOptions(maxAnimationFrameCount: .max, maxAnimationPixelCount: .max))
            #expect(roomy.frameCount == 50 && roomy.countIsComplete)
        }
        #expect(throws: ImagePipelineError.overLimit(.animationPixels, limit: 1_000, actual: nil)) {
            try GIFDecoder().makeAnimationDecoder(for: data, options: DecodeOptions(maxAnimationPixelCount: 1_000))
        }
    }

    @Test func theDefaultLimitRefusesAManyFrameGIFButNotItsStillPicture() async throws {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("frames-\(UUID().uuidString).gif")
        try Self.gif(frames: DecodeOptions.defaultMaxAnimationFrameCount + 1).write(to: url)
        defer { try? FileManager.default.removeItem(at: url) }
        let pipeline = ImagePipeline(configuration: ImagePipeline.Configuration(
            decoders: DecoderRegistry().registering(GIFDecoder()), loaders: LoaderRegistry([FileDataLoader()])))
        do {
            _ = try await pipeline.animation(for: ImageRequest(url: url))
            Issue.record("a 10,001-frame GIF opened as an animation")
        } catch ImagePipelineError.decodingFailed(let failed, let error) {
            #expect(failed == url)
            #expect(error as? ImagePipelineError == .overLimit(.animationFrames, limit: 10_000, actual: nil))
        }
        // The still picture (its first frame) is not refused by the frame limit.
        let still = try await pipeline.image(for: ImageRequest(url: url))
        #expect(still.bitmap.size == PixelSize(width: 1, height: 1))
        #expect(still.bitmap.pixel(x: 0, y: 0) == (0, 0, 255, 255))
    }

    /// Issue 41, finding 8, for GIF: a 6000×6000 screen and two 1×1 frames (a 160-byte file)
    /// would hold three 144 MB canvases, over the largest still's 400 MB: refused before the
    /// first canvas; the still picture, and one frame of the same screen, are not.
    @Test func anAnimationWhoseCanvasesOutweighTheLargestStillIsRefused() throws {
        let dot = GIFWriter.Frame(width: 1, height: 1, indices: [1], delayCentiseconds: 10)
        let two = GIFWriter.gif(width: 6000, height: 6000, palette: Self.palette, frames: [dot, dot])
        #expect(throws: ImagePipelineError.overLimit(.animationCanvases, limit: 400_000_000, actual: 432_000_000)) {
            try GIFDecoder().makeAnimationDecoder(for: two, options: DecodeOptions())
        }
        let thumbnail = try GIFDecoder().decode(two, options: DecodeOptions(targetSize: PixelSize(width: 60, height: 60)))
        #expect(thumbnail.bitmap.size == PixelSize(width: 60, height: 60))
        let one = GIFWriter.gif(width: 6000, height: 6000, palette: Self.palette, frames: [dot])
        #expect(throws: Never.self) { _ = try GIFDecoder().makeAnimationDecoder(for: one, options: DecodeOptions()) }
    }
}
