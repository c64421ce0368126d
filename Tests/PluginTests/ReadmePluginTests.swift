import Foundation
import PipelineCore
import QOIExample
import Testing

/// The decoder that the DocC article "Writing a decoder" shows (`FarbfeldDecoder.swift` here)
/// works through the pipeline. `ReadmeTests` (in ImagePipelineKitTests) checks that the article,
/// and "Writing a loader" with `Examples/CustomLoader/AssetLoader.swift`, show these files as
/// they are.
@Suite("Plugin articles' decoder")
struct ReadmePluginTests {
    @Test func theFarbfeldDecoderWorksThroughThePipeline() async throws {
        // 2×1: opaque red, half-transparent white (16-bit samples, straight alpha).
        let pixels: [UInt16] = [0xFFFF, 0, 0, 0xFFFF, 0xFFFF, 0xFFFF, 0xFFFF, 0x8080]
        var bytes = Array("farbfeld".utf8) + [0, 0, 0, 2, 0, 0, 0, 1]
        for sample in pixels { bytes += [UInt8(sample >> 8), UInt8(sample & 0xFF)] }
        let loader = ShelfLoader(["ff": .bytes(Data(bytes)), "short": .bytes(Data(bytes.dropLast(4)))])
        let pipeline = ImagePipeline(configuration: .init(
            decoders: DecoderRegistry().registering(QOIDecoder()).registering(FarbfeldDecoder()),
            loaders: LoaderRegistry().registering(loader)))
        let response = try await pipeline.image(for: ImageRequest(url: shelf("ff")))
        #expect(response.format == .farbfeld && response.bitmap.size == PixelSize(width: 2, height: 1))
        #expect(response.bitmap.pixel(x: 0, y: 0) == (255, 0, 0, 255))
        #expect(response.bitmap.pixel(x: 1, y: 0) == (128, 128, 128, 128))
        await #expect(throws: ImagePipelineError.decodingFailed(shelf("short"), underlying:
            ImagePipelineError.corruptData(format: .farbfeld, message: "too short"))) {
            try await pipeline.image(for: ImageRequest(url: shelf("short")))
        }
    }
}
