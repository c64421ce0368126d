import CodecJPEG
import Foundation
import PipelineCore
import PipelineTestSupport
import Testing

/// Serves fixed bytes for `memory://NAME` URLs: enough to run the real pipeline end to end.
struct MemoryLoader: DataLoading {
    let files: [String: Data]
    var schemes: Set<String> { ["memory"] }

    func load(_ request: DataLoadRequest) async throws -> DataLoadResult {
        guard let name = request.url.host, let data = files[name] else {
            throw ImagePipelineError.notFound(request.url)
        }
        return .data(data, ResponseMetadata())
    }
}

/// The JPEG decoder inside the real pipeline: the pipeline reads the header, plans the size,
/// and the decoder's scaled, upright output is resampled to the exact size.
@Suite(.enabled(if: Corpus.has("exif-orientation"), Corpus.missing("exif-orientation")), .tags(.cpuBound))
struct PipelineIntegrationTests {
    @Test func aRotatedPhotoComesOutUprightAtTheRequestedSize() async throws {
        let data = try Corpus.data("exif-orientation", "Portrait_6.jpg")
        let info = try JPEGDecoder().readInfo(data)
        let pipeline = ImagePipeline(configuration: .init(
            decoders: DecoderRegistry().registering(JPEGDecoder()),
            loaders: LoaderRegistry().registering(MemoryLoader(files: ["photo": data]))))
        let url = try #require(URL(string: "memory://photo"))
        let response = try await pipeline.image(for: ImageRequest(url: url, width: 64, height: 64))
        let expected = ResizePlan(source: info.uprightSize, target: .pixels(PixelSize(width: 64, height: 64)), contentMode: .fit)
        #expect(response.bitmap.size == expected.outputSize)
        #expect(response.bitmap.height == 64 && response.bitmap.width < 64, "portrait upright")
        #expect(response.originalSize == info.uprightSize)
        #expect(response.bitmap == (try Fixtures.thumbnail(JPEGDecoder(), data, box: PixelSize(width: 64, height: 64))))
    }

    /// The request's filter is applied after the DCT scaling, and each filter gets its own
    /// memory-cache entry: asking for both gives two different pictures, each exactly the
    /// scaled decode resampled with that filter.
    @Test func theRequestsFilterResamplesTheScaledDecode() async throws {
        let data = try Corpus.data("exif-orientation", "Landscape_1.jpg")
        let pipeline = ImagePipeline(configuration: .init(
            decoders: DecoderRegistry().registering(JPEGDecoder()),
            loaders: LoaderRegistry().registering(MemoryLoader(files: ["photo": data]))))
        let url = try #require(URL(string: "memory://photo"))
        let info = try JPEGDecoder().readInfo(data)
        let plan = ResizePlan(source: info.uprightSize, target: .pixels(PixelSize(width: 100, height: 100)), contentMode: .fit)
        let scaled = try JPEGDecoder().decode(data, options: DecodeOptions(targetSize: plan.scaledSize)).bitmap
        var results: [Bitmap] = []
        for filter in [ResamplingFilter.lanczos3, .areaAverage] {
            var request = ImageRequest(url: url, width: 100, height: 100)
            request.processing.resamplingFilter = filter
            let response = try await pipeline.image(for: request)
            #expect(response.bitmap == Resampler.resample(scaled, plan: plan, filter: filter), "\(filter)")
            results.append(response.bitmap)
        }
        #expect(results[0] != results[1])
    }

    @Test func aDamagedJPEGReachesTheCallerAsATypedError() async throws {
        let pipeline = ImagePipeline(configuration: .init(
            decoders: DecoderRegistry().registering(JPEGDecoder()),
            loaders: LoaderRegistry().registering(MemoryLoader(files: ["bad": Data([0xFF, 0xD8, 0xFF, 0xC0, 0, 2])]))))
        let url = try #require(URL(string: "memory://bad"))
        await #expect(throws: ImagePipelineError.self) {
            _ = try await pipeline.image(for: ImageRequest(url: url, width: 64, height: 64))
        }
    }
}

/// The strictness a request's initialiser takes (`decoding:`), on a photo cut in half.
@Suite(.tags(.cpuBound))
struct DecodingStrictnessTests {
    @Test func aTruncatedJPEGIsShownWithWarningsByDefaultAndFailsStrictly() async throws {
        let sample = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../../Samples/mandelbrot.jpg")
        let whole = try Data(contentsOf: sample)
        let pipeline = ImagePipeline(configuration: .init(
            decoders: DecoderRegistry().registering(JPEGDecoder()),
            loaders: LoaderRegistry().registering(MemoryLoader(files: ["cut": whole.prefix(whole.count / 2)]))))
        let url = try #require(URL(string: "memory://cut"))
        let lenient = try await pipeline.image(for: ImageRequest(url: url, width: 64, height: 64))
        #expect(!lenient.warnings.isEmpty && lenient.bitmap.size.isValid)
        let strict = ImageRequest(url: url, width: 64, height: 64, decoding: .strict)
        #expect(strict.processing.strictDecoding)
        let error = await #expect(throws: ImagePipelineError.self) { _ = try await pipeline.image(for: strict) }
        guard case .decodingFailed(url, let underlying)? = error, case .truncatedData(_, let message)? = underlying as? ImagePipelineError else {
            Issue.record("not a decoding failure with the codec's warning: \(String(describing: error))"); return
        }
        #expect(message == lenient.warnings.first)
        // The main initialiser takes it too; either place makes a request strict.
        let viaMain = ImageRequest(url: url, targetSize: .pixels(PixelSize(width: 64, height: 64)), decoding: .strict)
        #expect(viaMain == strict)
        #expect(ImageRequest(url: url, processing: ProcessingOptions(strictDecoding: true)).processing.strictDecoding)
        await #expect(throws: ImagePipelineError.self) { _ = try await pipeline.image(for: viaMain) }

        // A server's configuration makes every request strict, the default ones too.
        var configuration = pipeline.configuration
        configuration.memoryCache = MemoryCache(costLimit: 1 << 20)
        configuration.decodingStrictness = .strict
        let server = ImagePipeline(configuration: configuration)
        #expect(server.key(for: ImageRequest(url: url, width: 64, height: 64)) == server.key(for: strict))
        await #expect(throws: ImagePipelineError.self) { _ = try await server.image(for: ImageRequest(url: url, width: 64, height: 64)) }
    }
}
