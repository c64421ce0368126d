import CodecJXL
import Foundation
import PipelineCore
import Testing

/// Issue 41, finding 7: a JPEG XL file's work grows with its layers (blended frames, shown or
/// not), their sizes and its extra channels, none of which its canvas shows. Each is counted
/// from the frame headers and refused before any pixel is decoded (libjxl cannot be cancelled
/// inside a frame). The files were made with libjxl 0.7's encoder by
/// `../shared/hostile/wave4/tools/mkjxl.c` (`extra-4000-32` is the finding's own file).
@Suite("JPEG XL layers and extra channels count into the limits")
struct JXLLayerLimitTests {
    static let decoder = JXLDecoder()

    /// `mkjxl blendframes 4 4 12`: one 4×4 picture of 12 layers added onto each other.
    static let blended = Data(base64Encoded: """
        /woYEMEAYgIIQgAAACAASxKlQoUkHAAIQgAAAEQASxKlQoUkhiQPAADAEQAAAAAIQgAAAEwASxKlQoUkChznDwAAwMcAkFIAAAhCAAAAUABLEqVC\
        hSSKjGNTHAAAgI8BIKUAAAhCAAAAWABLEqVChSQOEG87Lw7AhADgjwPAlgIACEIAAABcAEsSpUKFJI4Qd3sd6gBMCAD+OABsKQAACEIAAABcAEsS\
        pUKFJA4Rd3t0qAMwIQD44wCwpQAACEIAAABcAEsSpUKFJI4Rd3t0oA7AhADgjwPAlgIACEIAAABgAEsSpUKFJBIg7sajA3UAJgQAz3EA2FIAAAhC\
        AAAAYABLEqVChSQSIPNG5wE6ABcCgLlYAPhSAAAIQgAAAGAASxKlQoUkUiDuxoMO6gBMCACemxsAWwoACEIUAGAASxKlQoUkUiDzRocHdAAuBABz\
        sQDwpQAA
        """)
    /// `mkjxl extra 64 64 8`: a 64×64 RGB picture with 8 extra channels (11 samples a pixel).
    static let extraChannels = Data(base64Encoded: """
        AAAADEpYTCANCocKAAAAFGZ0eXBqeGwgAAAAAGp4bCAAAAAJanhsbAoAAAAuanhsY/8KT0CNDqAD6AA6gA6gA+gAOkACCAAAAgAAAQAgAEsSpUKF\
        JBwA
        """)
    /// `mkjxl layer 8 8 256 256`: an 8×8 canvas whose one layer is 256×256.
    static let largeLayer = Data(base64Encoded: "/wpBQCQIIgAABIAAQAAAIABLEqVChSQcAA==")
    /// `mkjxl extra 4000 4000 32` (790 bytes): 16 MP with 32 extra channels, 560 M samples, 4.7 s.
    static let finding7 = Data(base64Encoded: """
        AAAADEpYTCANCocKAAAAFGZ0eXBqeGwgAAAAAGp4bCAAAAAJanhsbAoAAALtanhsY/8K+nwB/wA6gA6gA+gAOoAOoAPoADqADqAD6AA6gA6gA+gA\
        OoAOoAPoADqADqAD6AA6gA6gA+gAOoAOoAPoAAkIAAAAAAAAAAACAAAAAAAAAAABACAAAAAAAAAAAARAAARAAARAAARAAARAAARAAARAAARAAARA\
        AARAAARAAARAAARAAARAAARAAARAAARAAARAAARAAARAAARAAARAAARAAARAAARAAARAAARAAARAAARAAARAAARAAARAAARAAARAAARAAARAAARA\
        AARAAARAAARAAARAAARAAARAAARAAARAAARAAARAAARAAARAAARAAARAAARAAARAAARAAARAAARAAARAAARAAARAAARAAARAAARAAARAAARAAARA\
        AARAAARAAARAAARAAARAAARAAARAAARAAARAAARAAARAAARAAARAAARAAARAAARAAARAAARAAARAAARAAARAAARAAARAAARAAARAAARAAARAAARA\
        AARAAARAAARAAARAAARAAARAAARAAARAAARAAARAAARAAARAAARAAARAAARAAARAAARAAARAAARAAARAAARAAARAAARAAARAAARAAARAAARAAARA\
        AARAAARAAARAAARAAARAAARAAARAAEsSpUKFJBwAAwMDAwMDAwMDAwMDAwMDAwMDAwMDAwMDAwMDAwMDAwMDAwMDAwMDAwMDAwMDAwMDAwMDAwMD\
        AwMDAwMDAwMDAwMDAwMDAwMDAwMDAwMDAwMDAwMDAwMDAwMDAwMDAwMDAwMDAwMDAwMDAwMDAwMDAwMDAwMDAwMDAwMDAwMDAwMDAwMDAwMDAwMD\
        AwMDAwMDAwMDAwMDAwMDAwMDAwMDAwMDAwMDAwMDAwMDAwMDAwMDAwMDAwMDAwMDAwMDAwMDAwMDAwMDAwMDAwMDAwMDAwMDAwMDAwMDAwMDAwMD\
        AwMDAwMDAwMDAwMDAwMDAwMDAwMDAwMDAwMDAwMDAwMDAw==
        """)

    static func options(_ limits: Limits) -> DecodeOptions { DecodeOptions(limits: limits) }

    static func isOver(_ limit: Limit, actual: Int?) -> (any Error) -> Bool {
        { error in
            guard case ImagePipelineError.overLimit(let kind, _, let found) = error else { return false }
            return kind == limit && found == actual
        }
    }

    /// The 12 blended layers are one displayed frame, but all 12 are decoded: 12 × 16 × 3
    /// samples, over a limit that one layer fits, for a still decode and for the animation.
    @Test func blendedLayersCountIntoTheWork() throws {
        let data = try #require(Self.blended)
        #expect(try Self.decoder.readInfo(data).frameCount == 1)
        let tight = Self.options(Limits(maxLayerSamples: 500))
        #expect(performing: { _ = try Self.decoder.decode(data, options: tight) },
                throws: Self.isOver(.layerSamples, actual: 12 * 16 * 3))
        #expect(performing: { _ = try Self.decoder.makeAnimationDecoder(for: data, options: tight) },
                throws: Self.isOver(.layerSamples, actual: 12 * 16 * 3))
        // Within the limit, the same picture as before.
        let picture = try Self.decoder.decode(data, options: Self.options(Limits(maxLayerSamples: 576)))
        #expect(picture.bitmap.size == PixelSize(width: 4, height: 4))
    }

    /// The layers are counted as frames by the animation limits (libjxl blends each onto the
    /// canvas), and the walk over them stops at one more than allowed.
    @Test func blendedLayersCountAsAnimationFrames() throws {
        let data = try #require(Self.blended)
        #expect(performing: {
            _ = try Self.decoder.makeAnimationDecoder(for: data, options: DecodeOptions(maxAnimationFrameCount: 5))
        }, throws: Self.isOver(.animationFrames, actual: nil))
        #expect(performing: {
            _ = try Self.decoder.makeAnimationDecoder(for: data, options: DecodeOptions(maxAnimationPixelCount: 100))
        }, throws: { error in
            guard case ImagePipelineError.overLimit(.animationPixels, _, _) = error else { return false }
            return true
        })
    }

    /// Extra channels are samples too: 64 × 64 × 11.
    @Test func extraChannelsCountIntoTheWork() throws {
        let data = try #require(Self.extraChannels)
        #expect(performing: { _ = try Self.decoder.decode(data, options: Self.options(Limits(maxLayerSamples: 40_000))) },
                throws: Self.isOver(.layerSamples, actual: 64 * 64 * 11))
        _ = try Self.decoder.decode(data, options: Self.options(Limits(maxLayerSamples: 64 * 64 * 11)))
    }

    /// The finding's file is refused under the default limits, from its headers.
    @Test func findingSevenIsRefusedByDefault() throws {
        let data = try #require(Self.finding7)
        let clock = ContinuousClock.now
        #expect(performing: { _ = try Self.decoder.decode(data, options: DecodeOptions()) },
                throws: Self.isOver(.layerSamples, actual: 4000 * 4000 * 35))
        #expect(ContinuousClock.now - clock < .seconds(2), "refused from the headers, not after decoding")
    }

    /// A layer larger than the canvas is held to the pixel limit as a canvas is, and its size
    /// is in the memory estimate.
    @Test func aLayerLargerThanTheCanvasIsCounted() throws {
        let data = try #require(Self.largeLayer)
        #expect(try Self.decoder.readInfo(data).size == PixelSize(width: 8, height: 8))
        #expect(try Self.decoder.withSession(for: data) { $0.estimatedPeakMemory(DecodeOptions()) } >= 256 * 256 * 4)
        #expect(performing: { _ = try Self.decoder.decode(data, options: DecodeOptions(maxPixelCount: 10_000)) },
                throws: { error in
                    guard case ImagePipelineError.tooManyPixels(let size, _) = error else { return false }
                    return size == PixelSize(width: 256, height: 256)
                })
        #expect(try Self.decoder.decode(data, options: DecodeOptions()).bitmap.size == PixelSize(width: 8, height: 8))
    }
}
