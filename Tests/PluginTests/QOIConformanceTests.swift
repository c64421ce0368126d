import Foundation
import PipelineCore
import PipelineTestSupport
import QOIExample
import Testing

/// The example's QOI decoder and encoder against the reference encoder (qoi.h) and against op
/// sequences built by hand, whose pixels are worked out from the specification.
@Suite("QOI conformance", .tags(.cpuBound))
struct QOIConformanceTests {
    @Test(arguments: QOIFixture.names)
    func decodesTheReferenceEncodersFilesToTheExactPixels(_ name: String) throws {
        let fixture = try QOIFixture(name)
        let decoded = try QOIDecoder().decode(fixture.qoi, options: DecodeOptions())
        #expect(decoded.info == ImageInfo(format: .qoi, size: fixture.size, hasAlpha: fixture.channels == 4,
                                          componentCount: fixture.channels, bitDepth: 8))
        #expect(decoded.warnings.isEmpty)
        #expect(difference(decoded.bitmap, fixture.premultiplied) == nil)
    }

    @Test(arguments: QOIFixture.names)
    func encodesTheSameBytesAsTheReferenceEncoder(_ name: String) throws {
        let fixture = try QOIFixture(name)
        #expect(try QOIEncoder().encode(rgba: fixture.rgba, size: fixture.size, channels: fixture.channels) == fixture.qoi)
    }

    @Test func theFixturesUseEveryOp() throws {
        var seen: Set<String> = []
        for name in QOIFixture.names {
            let bytes = [UInt8](try QOIFixture(name).qoi)
            var p = 14
            while p < bytes.count - 8 {
                let op = bytes[p]
                switch op {
                case 0xFE: seen.insert("RGB"); p += 4
                case 0xFF: seen.insert("RGBA"); p += 5
                default:
                    switch op >> 6 {
                    case 0: seen.insert("INDEX"); p += 1
                    case 1: seen.insert("DIFF"); p += 1
                    case 2: seen.insert("LUMA"); p += 2
                    default: seen.insert("RUN"); p += 1
                    }
                }
            }
        }
        #expect(seen == ["RGB", "RGBA", "INDEX", "DIFF", "LUMA", "RUN"])
    }

    @Test func decodesEveryOpBuiltByHand() throws {
        let ops: [UInt8] = [
            0xFE, 16, 32, 48,          // RGB → (16, 32, 48, 255)
            0x5B,                      // DIFF −1, 0, +1 → (15, 32, 49, 255)
            0xAA, 0x5C,                // LUMA dg +10, dr−dg −3, db−dg +4 → (22, 42, 63, 255)
            0xFF, 128, 64, 32, 128,    // RGBA → (128, 64, 32, 128)
            0x15,                      // INDEX 21 = hash(16, 32, 48, 255) → (16, 32, 48, 255)
            0xC2,                      // RUN of 3
        ]
        let decoded = try QOIDecoder().decode(qoiFile(width: 4, height: 2, body: ops + qoiEnd), options: DecodeOptions())
        let first = (UInt8(16), UInt8(32), UInt8(48), UInt8(255))
        #expect(difference(decoded.bitmap, bitmap(PixelSize(width: 4, height: 2), straight: [
            first, (15, 32, 49, 255), (22, 42, 63, 255), (128, 64, 32, 128), first, first, first, first,
        ])) == nil)
        #expect(decoded.bitmap.pixel(x: 3, y: 0) == (64, 32, 16, 128), "premultiplied")
        #expect(decoded.warnings.isEmpty)
    }

    @Test func differencesWrapAroundAndThreeChannelsStayOpaque() throws {
        let ops: [UInt8] = [
            0x40,                      // DIFF −2, −2, −2 from the start pixel (0, 0, 0) → 254, 254, 254
            0x80, 0xF0,                // LUMA dg −32, dr−dg +7, db−dg −8 → (229, 222, 214)
            0xFF, 1, 2, 3, 7,          // RGBA in a 3-channel file: the alpha is not shown
            0x00,                      // INDEX 0: never written, so (0, 0, 0, 0), shown opaque
        ]
        let decoded = try QOIDecoder().decode(qoiFile(width: 2, height: 2, channels: 3, body: ops + qoiEnd),
                                              options: DecodeOptions())
        #expect(decoded.info.hasAlpha == false)
        #expect(difference(decoded.bitmap, bitmap(PixelSize(width: 2, height: 2), straight: [
            (254, 254, 254, 255), (229, 222, 214, 255), (1, 2, 3, 255), (0, 0, 0, 255),
        ])) == nil)
    }

    @Test func aRunLongerThanARowContinuesOnTheNextRowAndRunsOf62AreTheLongest() throws {
        // 62 + 62 + 1 pixels of the start pixel (0, 0, 0, 255), over five rows of 25.
        let decoded = try QOIDecoder().decode(qoiFile(width: 25, height: 5, channels: 3, body: [0xFD, 0xFD, 0xC0] + qoiEnd),
                                              options: DecodeOptions())
        #expect(difference(decoded.bitmap, bitmap(PixelSize(width: 25, height: 5), straight: Array(repeating: (0, 0, 0, 255), count: 125))) == nil)
        let encoded = try QOIEncoder().encode(rgba: Array(repeating: [0, 0, 0, 255], count: 125).flatMap { $0 },
                                              size: PixelSize(width: 25, height: 5), channels: 3)
        #expect(encoded == qoiFile(width: 25, height: 5, channels: 3, body: [0xFD, 0xFD, 0xC0] + qoiEnd))
    }

    @Test(arguments: QOIFixture.names)
    func shrinkingWhileReadingGivesTheResamplersPixels(_ name: String) throws {
        let fixture = try QOIFixture(name)
        let target = PixelSize(width: 37, height: 25)
        let shrunk = try QOIDecoder().decode(fixture.qoi, options: DecodeOptions(targetSize: target))
        #expect(difference(shrunk.bitmap, Resampler.resample(fixture.premultiplied, to: target)) == nil)
    }

    @Test func theEncoderRoundTripsABitmapThroughTheDecoder() throws {
        let fixture = try QOIFixture("glass-edge")
        let again = try QOIDecoder().decode(QOIEncoder().encode(fixture.premultiplied), options: DecodeOptions())
        #expect(difference(again.bitmap, fixture.premultiplied) == nil)
        #expect(throws: QOIEncoder.InvalidInput.self) {
            try QOIEncoder().encode(rgba: [1, 2, 3], size: PixelSize(width: 1, height: 1), channels: 4)
        }
    }

    @Test func aThumbnailNeverHoldsTheFullSizeBitmap() async throws {
        // 2000×1500 (a 12 MB bitmap at full size) with every op in play: a gradient with noise.
        let size = PixelSize(width: 2000, height: 1500)
        var rgba = [UInt8](repeating: 0, count: size.pixelCount * 4)
        var generator = SeededGenerator(seed: 7)
        for i in stride(from: 0, to: rgba.count, by: 4) {
            let x = (i / 4) % size.width, y = (i / 4) / size.width
            let noise = UInt8.random(in: 0...3, using: &generator)
            rgba[i] = UInt8(x * 255 / size.width) &+ noise
            rgba[i + 1] = UInt8(y * 255 / size.height)
            rgba[i + 2] = UInt8((x + y) % 256)
            rgba[i + 3] = x < 1000 ? 255 : UInt8(128 + (y % 128))
        }
        let data = try QOIEncoder().encode(rgba: rgba, size: size, channels: 4)
        rgba = []
        let target = PixelSize(width: 200, height: 150)
        try await ResidentMemory.exclusively {
            // The least growth of 5 runs (other suites allocate in parallel in this process); the
            // full-size path grows 11.8 MB here, streaming 0: 8 MiB tells them apart with room.
            let growth = try #require(try ResidentMemory.peakGrowth(attempts: 5) {
                let decoded = try QOIDecoder().decode(data, options: DecodeOptions(targetSize: target))
                #expect(decoded.bitmap.size == target)
            }, "no /proc/self/status")
            #expect(growth < 8 << 20, "peak grew \(growth) bytes; the full bitmap is \(size.pixelCount * 4)")
        }
    }
}
