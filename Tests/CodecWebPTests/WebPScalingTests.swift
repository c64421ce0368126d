import CodecWebP
import Foundation
import PipelineCore
import PipelineTestSupport
import Testing

/// libwebp's built-in scaling, and the decoder inside a pipeline.
@Suite(.enabled(if: Corpus.has("webp"), Corpus.missing("webp")), .tags(.cpuBound))
struct WebPScalingTests {
    /// Mean and largest absolute difference per channel of two equal-size bitmaps.
    static func difference(_ a: Bitmap, _ b: Bitmap) -> (mean: Double, max: Int) {
        var total = 0, largest = 0
        for y in 0..<a.height {
            for x in 0..<a.width {
                let p = a.pixel(x: x, y: y), q = b.pixel(x: x, y: y)
                for (u, v) in [(p.r, q.r), (p.g, q.g), (p.b, q.b), (p.a, q.a)] {
                    let d = abs(Int(u) - Int(v))
                    total += d
                    largest = max(largest, d)
                }
            }
        }
        return (Double(total) / Double(a.width * a.height * 4), largest)
    }

    /// libwebp scales while decoding to exactly the target; its box filter and the core
    /// resampler differ only a little, so the result must be close to full decode + resample.
    @Test(arguments: [("test.webp", PixelSize(width: 40, height: 40)), ("test.webp", PixelSize(width: 127, height: 3)),
                      ("lossless1.webp", PixelSize(width: 200, height: 61)), ("lossless_vec_2_6.webp", PixelSize(width: 17, height: 9)),
                      ("vp80-00-comprehensive-001.webp", PixelSize(width: 1, height: 1))])
    func scaledDecodeIsCloseToFullDecodeThenResample(_ name: String, _ target: PixelSize) throws {
        let data = try Corpus.data("webp", name)
        let full = try WebPDecoder().decode(data, options: DecodeOptions()).bitmap
        let scaled = try WebPDecoder().decode(data, options: DecodeOptions(targetSize: target)).bitmap
        #expect(scaled.size == target)
        let (mean, largest) = Self.difference(scaled, Resampler.resample(full, to: target))
        #expect(mean < 3, "\(name) → \(target): mean difference \(mean), largest \(largest)")
    }

    /// Lossy with alpha is decoded whole and resampled premultiplied: exactly the core resampler.
    @Test(arguments: ["lossy_alpha1.webp", "lossy_alpha4.webp", "alpha_filter_2.webp"])
    func lossyAlphaIsResampledPremultiplied(_ name: String) throws {
        let data = try Corpus.data("webp", name)
        let full = try WebPDecoder().decode(data, options: DecodeOptions()).bitmap
        let target = PixelSize(width: max(1, full.width / 5), height: max(1, full.height / 5))
        let scaled = try WebPDecoder().decode(data, options: DecodeOptions(targetSize: target)).bitmap
        #expect(scaled == Resampler.resample(full, to: target))
    }

    @Test func aTargetLargerThanThePictureGivesFullSizeAndOneSmallerSideIsClamped() throws {
        let data = try Corpus.data("webp", "test.webp")
        let larger = try WebPDecoder().decode(data, options: DecodeOptions(targetSize: PixelSize(width: 500, height: 500)))
        #expect(larger.bitmap.size == PixelSize(width: 128, height: 128))
        let mixed = try WebPDecoder().decode(data, options: DecodeOptions(targetSize: PixelSize(width: 500, height: 64)))
        #expect(mixed.bitmap.size == PixelSize(width: 128, height: 64))
    }

    /// `bryce.webp`, 11158×2156 lossy (96 MB as a bitmap), shrunk to 256 px wide: libwebp scales
    /// macroblock rows as it decodes them, so the peak grows by a small fraction of the full
    /// decode's. (Lossless is not measured: libwebp's VP8L decoder keeps a full-size ARGB
    /// buffer of its own, since back-references may reach any earlier pixel.)
    @Test func aLossyThumbnailNeverHoldsTheFullBitmap() async throws {
        try await ResidentMemory.exclusively {
            let data = try Corpus.data("webp", "bryce.webp")
            let target = PixelSize(width: 256, height: 49)
            var thumbnail: DecodedImage?
            let growth = try #require(try ResidentMemory.peakGrowth {
                thumbnail = try WebPDecoder().decode(data, options: DecodeOptions(targetSize: target))
            }, "cannot measure the peak RSS on this system")
            #expect(thumbnail?.bitmap.size == target)
            #expect(growth < 12_000_000, "thumbnail decode grew the peak by \(growth) bytes")
            var full: DecodedImage?
            let fullGrowth = try #require(try ResidentMemory.peakGrowth(attempts: 1, largest: true) {
                full = try WebPDecoder().decode(data, options: DecodeOptions())
            })
            #expect(full?.bitmap.size == PixelSize(width: 11158, height: 2156))
            #expect(fullGrowth > 80_000_000, "the full decode holds the 96 MB bitmap (grew \(fullGrowth))")
        }
    }

    @Test func aPipelineWithTheWebPDecoderReturnsTheRequestedSize() async throws {
        let data = try Corpus.data("webp", "lossy_alpha1.webp")
        let loader = HeldLoader(schemes: ["test"]) { _ in .success(.data(data, ResponseMetadata())) }
        let pipeline = ImagePipeline(configuration: ImagePipeline.Configuration(
            decoders: DecoderRegistry().registering(WebPDecoder()), loaders: LoaderRegistry([loader])))
        let info = try WebPDecoder().readInfo(data)
        let full = try await pipeline.image(for: ImageRequest(url: try #require(URL(string: "test:///alpha.webp"))))
        #expect(full.format == .webp)
        #expect(full.bitmap.size == info.size)
        #expect(full.originalSize == info.size)
        let thumb = try await pipeline.image(for: ImageRequest(url: try #require(URL(string: "test:///alpha.webp")), width: 100, height: 100))
        #expect(thumb.bitmap.size.width == 100 || thumb.bitmap.size.height == 100)
        #expect(thumb.bitmap.size.width <= 100 && thumb.bitmap.size.height <= 100)
    }
}
