import CodecJPEG
import Foundation
import LoaderFile
import PipelineCore
import PipelineTestSupport
import Testing

/// The request's processing options reach the codecs: sRGB by default, stored values on request.
@Suite(.enabled(if: Corpus.has(ICC.folder), Corpus.missing(ICC.folder)), .tags(.cpuBound))
struct PipelineColorTests {
    @Test func requestsConvertToSRGBUnlessTurnedOff() async throws {
        let configuration = ImagePipeline.Configuration(decoders: DecoderRegistry([JPEGDecoder()]),
                                                        loaders: LoaderRegistry([FileDataLoader()]))
        let pipeline = ImagePipeline(configuration: configuration)
        let url = Corpus.folder(ICC.folder).appendingPathComponent("ProPhotoRGB.jpg")
        let expected = try ICC.reference("ProPhotoRGB.jpg.srgb.png")
        let converted = try await pipeline.image(for: ImageRequest(url: url))
        var request = ImageRequest(url: url)
        request.processing.convertsToSRGB = false
        let stored = try await pipeline.image(for: request)
        #expect(psnr(converted.bitmap.unpremultipliedBytes(), expected) >= 35)
        #expect(psnr(stored.bitmap.unpremultipliedBytes(), expected) < 30)
    }
}
