import CodecSVG
import Foundation
import LoaderFile
import PipelineCore
import PipelineTestSupport
import Testing

/// Through the pipeline: a vector picture is drawn at the size asked for (larger than its own
/// too), never decoded small and enlarged; the pixel limit bounds the size drawn.
@Suite(.enabled(if: Corpus.has("svg"), Corpus.missing("svg")), .tags(.cpuBound))
struct SVGPipelineTests {
    static func pipeline(maxPixelCount: Int = 100_000_000) -> ImagePipeline {
        makePipeline(loader: FileDataLoader(), decoders: DecoderRegistry().registering(SVGDecoder()), maxPixelCount: maxPixelCount)
    }

    static func url(_ name: String) -> URL { Corpus.folder("svg").appendingPathComponent(name) }

    static func direct(_ name: String, _ size: PixelSize, _ format: PixelFormat = .rgba8Premultiplied) throws -> Bitmap {
        try SVGDecoder().decode(Corpus.data("svg", name), options: DecodeOptions(targetSize: size, pixelFormat: format)).bitmap
    }

    /// A 16-pixel icon at 512: the decoder's own 512-pixel drawing, not an enlargement.
    @Test func aSixteenPixelIconIsDrawnAt512() async throws {
        let name = "adwaita-user-home-symbolic.svg"
        let response = try await Self.pipeline().image(for: ImageRequest(url: Self.url(name), width: 512, height: 512))
        #expect(response.originalSize == PixelSize(width: 16, height: 16))
        #expect(response.format == .svg)
        #expect(response.bitmap == (try Self.direct(name, PixelSize(width: 512, height: 512))))
    }

    /// Fit keeps the aspect ratio (150×90 in 300×300 is 300×180), straight output asked for
    /// comes straight from the decoder (nothing resamples it).
    @Test func fitDrawsAtTheOutputSizeInTheFormatAsked() async throws {
        let name = "hand-viewbox-nonsquare.svg"
        var request = ImageRequest(url: Self.url(name), width: 300, height: 300)
        request.processing.pixelFormat = .rgba8Straight
        let response = try await Self.pipeline().image(for: request)
        #expect(response.bitmap.size == PixelSize(width: 300, height: 180))
        #expect(response.bitmap == (try Self.direct(name, PixelSize(width: 300, height: 180), .rgba8Straight)))
    }

    /// Fill draws the cover size (128×64 for 120×60 into 64×64) and crops the centre.
    @Test func fillDrawsTheCoverAndCropsIt() async throws {
        let name = "hand-par-meet.svg"
        let response = try await Self.pipeline().image(for: ImageRequest(url: Self.url(name), width: 64, height: 64, contentMode: .fill))
        #expect(response.bitmap.size == PixelSize(width: 64, height: 64))
        let cover = try Self.direct(name, PixelSize(width: 128, height: 64))
        var largest = 0
        for y in 0..<64 {
            for x in 0..<64 {
                let a = response.bitmap.pixel(x: x, y: y), b = cover.pixel(x: x + 32, y: y)
                largest = max(largest, abs(Int(a.r) - Int(b.r)), abs(Int(a.g) - Int(b.g)), abs(Int(a.b) - Int(b.b)), abs(Int(a.a) - Int(b.a)))
            }
        }
        #expect(largest <= 1, "the crop differs from the cover's centre by \(largest)")
    }

    /// The limit bounds the size drawn: the 10⁸-pixel-a-side canvas fails at its own size and
    /// draws fitted in 64×64; a small icon asked at 20,000 × 20,000 is over a 100 MP limit.
    @Test func thePixelLimitBoundsTheSizeDrawn() async throws {
        let pipeline = Self.pipeline()
        let huge = Self.url("invalid/huge-canvas.svg")
        await #expect {
            _ = try await pipeline.image(for: ImageRequest(url: huge))
        } throws: { error in
            guard case ImagePipelineError.decodingFailed(let url, let underlying) = error, url == huge,
                  case ImagePipelineError.tooManyPixels = underlying else { return false }
            return true
        }
        let fitted = try await pipeline.image(for: ImageRequest(url: huge, width: 64, height: 64))
        #expect(fitted.bitmap.size == PixelSize(width: 64, height: 64))
        await #expect(throws: ImagePipelineError.self) {
            _ = try await pipeline.image(for: ImageRequest(url: Self.url("tango-computer.svg"), width: 20_000, height: 20_000))
        }
    }

    /// A damaged document fails naming its URL.
    @Test func aDamagedDocumentNamesItsURL() async throws {
        let truncated = Self.url("invalid/truncated.svg")
        await #expect {
            _ = try await Self.pipeline().image(for: ImageRequest(url: truncated, width: 64, height: 64))
        } throws: { error in
            guard case ImagePipelineError.decodingFailed(let url, _) = error else { return false }
            return url == truncated && "\(error)".contains("truncated.svg")
        }
    }
}
