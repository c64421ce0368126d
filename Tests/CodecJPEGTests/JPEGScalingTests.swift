import CodecJPEG
import Foundation
import PipelineCore
import PipelineTestSupport
import Testing

/// DCT scaling, colour layouts and coding modes, on pictures the tests write with libjpeg.
@Suite(.tags(.cpuBound))
struct JPEGScalingTests {
    @Test func scaleIsTheSmallestEighthThatCoversTheTarget() throws {
        let data = try #require(Fixtures.jpeg(width: 600, height: 400))
        let cases: [(PixelSize, PixelSize)] = [
            (PixelSize(width: 75, height: 50), PixelSize(width: 75, height: 50)),     // 1/8
            (PixelSize(width: 76, height: 50), PixelSize(width: 150, height: 100)),   // 2/8
            (PixelSize(width: 300, height: 10), PixelSize(width: 300, height: 200)),  // 4/8
            (PixelSize(width: 451, height: 300), PixelSize(width: 525, height: 350)), // 7/8
            (PixelSize(width: 600, height: 400), PixelSize(width: 600, height: 400)), // 8/8
        ]
        for (target, expected) in cases {
            let decoded = try JPEGDecoder().decode(data, options: DecodeOptions(targetSize: target))
            #expect(decoded.bitmap.size == expected, "target \(target)")
        }
    }

    /// A target bigger than the picture decodes at full size: DCT scaling never upsizes here.
    @Test func targetLargerThanThePictureGivesFullSize() throws {
        let data = try #require(Fixtures.jpeg(width: 40, height: 30))
        let decoded = try JPEGDecoder().decode(data, options: DecodeOptions(targetSize: PixelSize(width: 400, height: 300)))
        #expect(decoded.bitmap.size == PixelSize(width: 40, height: 30))
    }

    /// Orientation 6 stores a landscape for a portrait: the upright target must be transposed
    /// before choosing the scale, and the result must cover it upright.
    @Test(.enabled(if: Corpus.has("exif-orientation"), Corpus.missing("exif-orientation")))
    func rotatedFilesCoverTheUprightTarget() throws {
        let data = try Corpus.data("exif-orientation", "Portrait_6.jpg")
        let info = try JPEGDecoder().readInfo(data)
        #expect(info.uprightSize.height > info.uprightSize.width, "a portrait upright")
        let target = PixelSize(width: info.uprightSize.width / 5, height: info.uprightSize.height / 5)
        let decoded = try JPEGDecoder().decode(data, options: DecodeOptions(targetSize: target))
        #expect(decoded.bitmap.width >= target.width && decoded.bitmap.height >= target.height)
        #expect(decoded.bitmap.width < info.uprightSize.width, "it was scaled down")
    }

    @Test func scaledDecodeLooksLikeFullDecodeThenResize() throws {
        let data = try #require(Fixtures.jpeg(width: 800, height: 600))
        let target = PixelSize(width: 100, height: 75)
        let full = try JPEGDecoder().decode(data, options: DecodeOptions()).bitmap
        let scaled = try JPEGDecoder().decode(data, options: DecodeOptions(targetSize: target)).bitmap
        #expect(scaled.size == target)
        let difference = Fixtures.meanDifference(scaled, Resampler.resample(full, to: target))
        #expect(difference < 2, "mean difference \(difference)")
    }

    @Test(arguments: [Fixtures.Kind.gray, .rgb, .cmyk, .ycck])
    func colourLayoutsDecodeToThePattern(_ kind: Fixtures.Kind) throws {
        let data = try #require(Fixtures.jpeg(width: 96, height: 64, kind: kind))
        let decoded = try JPEGDecoder().decode(data, options: DecodeOptions())
        #expect(decoded.info.componentCount == (kind == .gray ? 1 : (kind == .rgb ? 3 : 4)))
        let expected = Fixtures.patternBitmap(width: 96, height: 64, gray: kind == .gray)
        let difference = Fixtures.meanDifference(decoded.bitmap, expected)
        #expect(difference < 3, "\(kind): mean difference \(difference)")
        #expect(decoded.bitmap.pixel(x: 5, y: 5).a == 255)
    }

    @Test(arguments: [(true, false, 0), (false, true, 0), (false, false, 1), (true, true, 2)])
    func codingModesDecodeToThePattern(progressive: Bool, arithmetic: Bool, restartRows: Int) throws {
        let data = try #require(Fixtures.jpeg(width: 130, height: 90, progressive: progressive,
                                              arithmetic: arithmetic, restartRows: restartRows))
        if restartRows > 0 { #expect(data.contains(0xDD), "a DRI marker was written") }
        let info = try JPEGDecoder().readInfo(data)
        #expect(info.isProgressive == progressive)
        for target in [nil, PixelSize(width: 33, height: 23)] {
            let decoded = try JPEGDecoder().decode(data, options: DecodeOptions(targetSize: target))
            let expected = Fixtures.patternBitmap(width: 130, height: 90)
            let difference = Fixtures.meanDifference(decoded.bitmap, Resampler.resample(expected, to: decoded.bitmap.size))
            #expect(difference < 3, "mean difference \(difference) at \(String(describing: target))")
            #expect(decoded.warnings.isEmpty)
        }
    }

    /// A big picture asked for small is decoded at 1/8 and never exists at full size: the
    /// process's peak memory grows by far less than the full bitmap (24 MB here).
    @Test func aThumbnailOfABigPictureNeverHoldsTheFullBitmap() async throws {
        try await ResidentMemory.exclusively {
            let data = try #require(Fixtures.jpeg(width: 3000, height: 2000, quality: 80))
            var decoded: DecodedImage?
            let growth = try #require(try ResidentMemory.peakGrowth {
                decoded = try JPEGDecoder().decode(data, options: DecodeOptions(targetSize: PixelSize(width: 256, height: 171)))
            }, "cannot measure the peak RSS on this system")
            #expect(decoded?.bitmap.size == PixelSize(width: 375, height: 250))
            #expect(growth < 6_000_000, "peak grew by \(growth) bytes; the full bitmap is 24 MB")
            // The largest of 30 (about 2 s): the fuzz suites run beside this one, and memory they
            // free during a window hides growth; once all 7 of 7 windows saw none.
            let fullGrowth = try #require(try ResidentMemory.peakGrowth(attempts: 30, largest: true) {
                _ = try JPEGDecoder().decode(data, options: DecodeOptions())
            })
            #expect(fullGrowth > 20_000_000, "the full decode holds the 24 MB bitmap (grew \(fullGrowth))")
        }
    }
}
