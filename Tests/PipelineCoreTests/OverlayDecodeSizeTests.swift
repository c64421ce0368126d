import Foundation
import PipelineCore
import PipelineTestSupport
import Testing

/// Issue 41, finding 11: an overlay was decoded at its own size (822 MB for a 64-px thumbnail).
/// Drawn at a size relative to the picture it goes on, it is decoded at that size.
@Suite("An overlay is decoded at the size it is drawn at")
struct OverlayDecodeSizeTests {
    /// A 4000×3000 watermark at a quarter of a 64×64 box: the decoder is asked for 16×16 (fit:
    /// 16×12 drawn), and the thumbnail with it is the size the box gives.
    @Test func relativeOverlayIsDecodedForTheBox() async throws {
        let decoder = CountingDecoder()
        let pipeline = makePipeline(loader: HeldLoader.immediate(), decoders: DecoderRegistry([decoder]))
        let overlay = try await pipeline.overlay(testURL(4000, 3000, 1), relativeSize: 0.25,
                                                 drawnWithin: PixelSize(width: 64, height: 64))
        let asked = decoder.targetSizes.last.flatMap { $0 }
        #expect(asked.map { $0.width <= 16 && $0.height <= 16 } == true, "decoded for \(String(describing: asked)) (nil: full size)")
        var request = ImageRequest(url: testURL(640, 480, 2), width: 64, height: 64)
        request.processors = [overlay]
        let thumbnail = try await pipeline.image(for: request)
        #expect(thumbnail.bitmap.size == PixelSize(width: 64, height: 48))
    }

    /// Without a box, or drawn at its own size, it is loaded whole, as before.
    @Test func overlayAtItsOwnSizeIsLoadedWhole() async throws {
        let decoder = CountingDecoder()
        let pipeline = makePipeline(loader: HeldLoader.immediate(), decoders: DecoderRegistry([decoder]))
        _ = try await pipeline.overlay(testURL(40, 30, 1), drawnWithin: PixelSize(width: 64, height: 64))
        _ = try await pipeline.overlay(testURL(40, 30, 3), relativeSize: 0.5)
        #expect(decoder.targetSizes.count == 2 && decoder.targetSizes.allSatisfy { $0 == nil })
    }
}
