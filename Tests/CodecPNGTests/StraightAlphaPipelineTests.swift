import CodecPNG
import Foundation
import PipelineCore
import PipelineTestSupport
import Testing

/// Straight alpha through the pipeline (``ProcessingOptions/pixelFormat``), with the real PNG
/// decoder over PngSuite files whose alpha is neither 0 nor 255 in many pixels.
@Suite(.enabled(if: Corpus.has("png-suite"), Corpus.missing("png-suite")), .tags(.cpuBound))
struct StraightAlphaPipelineTests {
    static let straight = ProcessingOptions(pixelFormat: .rgba8Straight)

    /// A pipeline over `file` of PngSuite, answering `test:///NAME`, recording its events.
    static func pipeline(_ file: String, events: EventRecorder) throws -> (ImagePipeline, URL) {
        let data = try Corpus.data("png-suite/png", file)
        let loader = HeldLoader(schemes: ["test"]) { _ in .success(.data(data, ResponseMetadata())) }
        var configuration = ImagePipeline.Configuration(decoders: DecoderRegistry().registering(PNGDecoder()),
                                                        loaders: LoaderRegistry([loader]))
        configuration.eventHandler = events.handler
        return (ImagePipeline(configuration: configuration), try #require(URL(string: "test:///\(file)")))
    }

    /// Full size, straight: the stored values exactly (PngSuite's reference), and the memory
    /// cache keeps the straight and the premultiplied answer apart.
    @Test func aFullSizeStraightRequestGetsTheStoredValuesAndIsCachedApart() async throws {
        let events = EventRecorder()
        let (pipeline, url) = try Self.pipeline("basn6a08.png", events: events)
        let reference = try JSONDecoder().decode([UInt8].self, from: Corpus.data("png-suite/json", "basn6a08.json"))
        let straightRequest = ImageRequest(url: url, processing: Self.straight)
        let straight = try await pipeline.image(for: straightRequest)
        #expect(straight.bitmap.pixelFormat == .rgba8Straight)
        #expect(straight.bitmap.unpremultipliedBytes() == reference)

        let premultiplied = try await pipeline.image(for: ImageRequest(url: url))
        #expect(premultiplied.source != .memory, "a premultiplied request must not get the straight entry")
        #expect(premultiplied.bitmap.pixelFormat == .rgba8Premultiplied)
        #expect(premultiplied.bitmap == straight.bitmap.premultiplied())
        #expect(pipeline.cachedImage(for: straightRequest)?.bitmap == straight.bitmap)
        #expect(pipeline.cachedImage(for: ImageRequest(url: url))?.bitmap == premultiplied.bitmap)
        #expect(events.count { if case .decoded = $0 { true } else { false } } == 2)
    }

    /// A thumbnail is resampled premultiplied (no fringes) whatever is asked; a straight
    /// request gets that result made straight once.
    @Test(arguments: [ContentMode.fit, .fill])
    func aStraightThumbnailIsThePremultipliedOneStraightened(mode: ContentMode) async throws {
        let (pipeline, url) = try Self.pipeline("basi6a08.png", events: EventRecorder())
        var request = ImageRequest(url: url, width: 13, height: 9, contentMode: mode)
        let premultiplied = try await pipeline.image(for: request)
        request.processing = Self.straight
        let straight = try await pipeline.image(for: request)
        #expect(straight.bitmap.pixelFormat == .rgba8Straight)
        #expect(straight.bitmap.size == premultiplied.bitmap.size)
        #expect(straight.bitmap == premultiplied.bitmap.straightened())
    }

    /// Processors run on premultiplied pixels: a straight request with processors shares the
    /// premultiplied decode and gets the processed result made straight.
    @Test func processorsRunPremultipliedAndAStraightRequestSharesTheDecode() async throws {
        let events = EventRecorder()
        let (pipeline, url) = try Self.pipeline("basn6a16.png", events: events)
        let processors: [ImageProcessor] = [.gaussianBlur(radius: 1), .roundedCorners(radius: 6)]
        var request = ImageRequest(url: url, processors: processors)
        let premultiplied = try await pipeline.image(for: request)
        request.processing = Self.straight
        let straight = try await pipeline.image(for: request)
        #expect(premultiplied.bitmap.pixelFormat == .rgba8Premultiplied)
        #expect(straight.bitmap.pixelFormat == .rgba8Straight)
        #expect(straight.bitmap == premultiplied.bitmap.straightened())
        #expect(events.count { if case .decoded = $0 { true } else { false } } == 1, "one premultiplied decode serves both")
        #expect(events.count { if case .processed = $0 { true } else { false } } == 2)
    }

    /// A processor called directly with a straight bitmap sees premultiplied pixels and gives
    /// back a straight result.
    @Test func aProcessorGivenAStraightBitmapWorksPremultiplied() throws {
        let straight = try PNGDecoder().decode(try Corpus.data("png-suite/png", "basn6a08.png"),
                                               options: DecodeOptions(pixelFormat: .rgba8Straight)).bitmap
        let blurred = try ImageProcessor.gaussianBlur(radius: 2).process(straight)
        #expect(blurred.pixelFormat == .rgba8Straight)
        #expect(blurred == (try ImageProcessor.gaussianBlur(radius: 2).process(straight.premultiplied())).straightened())
    }
}
