import CodecPNG
import Foundation
import PipelineCore
import PipelineTestSupport
import Testing

/// Row-by-row shrinking, the encoder, and memory.
@Suite(.tags(.cpuBound))
struct PNGStreamingTests {
    /// A premultiplied bitmap with a colour pattern and an alpha ramp (some pixels transparent).
    static func pattern(width: Int, height: Int, alpha: Bool = true) -> Bitmap {
        var bitmap = Bitmap(zeroed: PixelSize(width: width, height: height))
        bitmap.withUnsafeMutableBytes { bytes in
            for y in 0..<height {
                for x in 0..<width {
                    let i = (y * width + x) * 4
                    bytes[i] = UInt8(truncatingIfNeeded: x * 7)
                    bytes[i + 1] = UInt8(truncatingIfNeeded: y * 5)
                    bytes[i + 2] = UInt8(truncatingIfNeeded: (x ^ y) * 3)
                    bytes[i + 3] = alpha ? UInt8(truncatingIfNeeded: (x + y) % 256) : 255
                }
            }
            Bitmap.premultiply(bytes)
        }
        return bitmap
    }

    @Test func encoderRoundTripsThroughTheDecoder() throws {
        let original = Self.pattern(width: 67, height: 45)
        let data = try PNGEncoder().encode(original)
        #expect(PNGDecoder().canDecode(data))
        let decoded = try PNGDecoder().decode(data, options: DecodeOptions())
        #expect(decoded.bitmap == original, "premultiplied → straight → premultiplied is lossless for premultiplied input")
        #expect(decoded.info.hasAlpha)
        #expect(decoded.warnings.isEmpty)
    }

    /// Shrinking while reading rows gives exactly what a full decode plus the resampler gives.
    @Test(arguments: [PixelSize(width: 30, height: 20), PixelSize(width: 299, height: 1), PixelSize(width: 1, height: 199)])
    func shrinkingWhileReadingEqualsFullDecodeThenResize(_ target: PixelSize) throws {
        let data = try PNGEncoder(compressionLevel: 1).encode(Self.pattern(width: 300, height: 200))
        let full = try PNGDecoder().decode(data, options: DecodeOptions()).bitmap
        let shrunk = try PNGDecoder().decode(data, options: DecodeOptions(targetSize: target)).bitmap
        #expect(shrunk.size == target)
        #expect(shrunk == Resampler.resample(full, to: target))
    }

    /// The decoder shrinks with the filter it is asked for (rows streamed through it).
    @Test(arguments: ResamplingFilter.allCases)
    func shrinkingWhileReadingUsesTheRequestedFilter(_ filter: ResamplingFilter) throws {
        let data = try PNGEncoder(compressionLevel: 1).encode(Self.pattern(width: 300, height: 200))
        let full = try PNGDecoder().decode(data, options: DecodeOptions()).bitmap
        let target = PixelSize(width: 45, height: 30)
        let shrunk = try PNGDecoder().decode(data, options: DecodeOptions(targetSize: target, resamplingFilter: filter)).bitmap
        #expect(shrunk == Resampler.resample(full, to: target, filter: filter))
        let other: ResamplingFilter = filter == .lanczos3 ? .areaAverage : .lanczos3
        #expect(shrunk != Resampler.resample(full, to: target, filter: other))
    }

    @Test func aTargetLargerThanThePictureGivesFullSize() throws {
        let data = try PNGEncoder().encode(Self.pattern(width: 20, height: 10))
        let decoded = try PNGDecoder().decode(data, options: DecodeOptions(targetSize: PixelSize(width: 200, height: 100)))
        #expect(decoded.bitmap.size == PixelSize(width: 20, height: 10))
    }

    /// A 2000×2000 picture (16 MB as a bitmap) shrunk to 100 px: the peak memory grows by a
    /// small fraction of what a full decode needs.
    @Test func aThumbnailNeverHoldsTheFullBitmap() async throws {
        try await ResidentMemory.exclusively {
            let data = try PNGEncoder(compressionLevel: 1).encode(Self.pattern(width: 2000, height: 2000, alpha: false))
            var thumbnail: DecodedImage?
            let thumbnailGrowth = try #require(try ResidentMemory.peakGrowth {
                thumbnail = try PNGDecoder().decode(data, options: DecodeOptions(targetSize: PixelSize(width: 100, height: 100)))
            }, "cannot measure the peak RSS on this system")
            #expect(thumbnail?.bitmap.size == PixelSize(width: 100, height: 100))
            #expect(thumbnailGrowth < 8_000_000, "thumbnail decode grew the peak by \(thumbnailGrowth) bytes")
            var full: DecodedImage?
            // The control: the largest of many tries, since other suites of the run (not memory
            // tests, which this lock keeps out) may hand memory back meanwhile and hide a growth.
            let fullGrowth = try #require(try ResidentMemory.peakGrowth(attempts: 25, largest: true) {
                full = try PNGDecoder().decode(data, options: DecodeOptions())
            })
            #expect(full?.bitmap.size == PixelSize(width: 2000, height: 2000))
            #expect(fullGrowth > 12_000_000, "the full decode holds the 16 MB bitmap (grew \(fullGrowth))")
        }
    }

    /// A big file read through a memory mapping has its consumed pages handed back to the
    /// kernel while decoding; decoding the same mapping again must still see the same bytes.
    @Test func aMappedFileDecodesTheSameTwiceAfterItsPagesAreReleased() async throws {
        // Its buffers are big: keep it out of the memory tests' measurements.
        try await ResidentMemory.exclusively {
            let bitmap = Self.pattern(width: 1200, height: 1000)
            let encoded = try PNGEncoder(compressionLevel: 0).encode(bitmap)
            #expect(encoded.count > 4 << 20, "big enough for the release path")
            let url = FileManager.default.temporaryDirectory.appendingPathComponent("png-mapped-\(UUID().uuidString).png")
            try encoded.write(to: url)
            defer { try? FileManager.default.removeItem(at: url) }
            let mapped = try Data(contentsOf: url, options: .alwaysMapped)
            let target = PixelSize(width: 120, height: 100)
            let first = try PNGDecoder().decode(mapped, options: DecodeOptions(targetSize: target))
            let second = try PNGDecoder().decode(mapped, options: DecodeOptions(targetSize: target))
            let fromHeap = try PNGDecoder().decode(encoded, options: DecodeOptions(targetSize: target))
            #expect(first.bitmap == fromHeap.bitmap)
            #expect(second.bitmap == fromHeap.bitmap)
            #expect(mapped == encoded, "the mapping still reads as the file")
        }
    }
}
