import Foundation
import PipelineCore
import PipelineTestSupport
import QOIExample
import Testing

/// Bad QOI files give the plugin's typed errors (or the core's pixel-limit error) — never a
/// trap, and never an allocation the data could not fill.
@Suite("QOI errors", .tags(.cpuBound))
struct QOIErrorTests {
    static let pixel: [UInt8] = [0xFE, 1, 2, 3]

    @Test func badHeadersGiveTypedErrors() throws {
        let cases: [(Data, QOIError)] = [
            (Data(), .truncatedHeader(byteCount: 0)),
            (Data("qoif".utf8) + Data([0, 0, 0, 1, 0, 0]), .truncatedHeader(byteCount: 10)),
            (qoiFile(width: 0, height: 5, body: Self.pixel + qoiEnd), .emptySize(width: 0, height: 5)),
            (qoiFile(width: 5, height: 0, body: Self.pixel + qoiEnd), .emptySize(width: 5, height: 0)),
            (qoiFile(width: 1, height: 1, channels: 2, body: Self.pixel + qoiEnd), .badChannels(2)),
            (qoiFile(width: 1, height: 1, channels: 5, body: Self.pixel + qoiEnd), .badChannels(5)),
            (qoiFile(width: 1, height: 1, colorspace: 2, body: Self.pixel + qoiEnd), .badColorspace(2)),
        ]
        for (data, error) in cases {
            #expect(throws: error) { try QOIDecoder().readInfo(data) }
            #expect(throws: error) { try QOIDecoder().decode(data, options: DecodeOptions()) }
        }
    }

    @Test func dataTooShortForThePixelsIsTruncated() throws {
        let cases: [[UInt8]] = [
            [],                                  // no ops at all
            Self.pixel + qoiEnd,                 // one pixel of four
            [0xFE, 1, 2],                        // an RGB op cut short, no end marker
            [0xFF, 1, 2, 3] + qoiEnd,            // an RGBA op cut short before the end marker
            [0xC1, 0x80] + qoiEnd,               // a LUMA op without its second byte
        ]
        for body in cases {
            #expect(throws: QOIError.truncatedPixels(expected: 4)) {
                try QOIDecoder().decode(qoiFile(width: 2, height: 2, body: body), options: DecodeOptions())
            }
        }
    }

    @Test func aMissingEndMarkerIsAWarningAndFailsAStrictDecode() throws {
        let data = qoiFile(width: 1, height: 1, body: Self.pixel)
        let decoded = try QOIDecoder().decode(data, options: DecodeOptions())
        #expect(decoded.bitmap.pixel(x: 0, y: 0) == (1, 2, 3, 255))
        #expect(decoded.warnings == ["the QOI end marker is missing"])
        #expect(throws: ImagePipelineError.corruptData(format: .qoi, message: "the QOI end marker is missing")) {
            try QOIDecoder().decode(data, options: DecodeOptions(strict: true))
        }
        let extra = try QOIDecoder().decode(qoiFile(width: 1, height: 1, body: Self.pixel + [0xC0, 0xC0] + qoiEnd),
                                            options: DecodeOptions())
        #expect(extra.warnings == ["2 bytes of QOI data after the last pixel"])
    }

    @Test func aHeaderOverThePixelLimitIsRefusedFromTheHeaderAlone() throws {
        // 4,294,967,295 × 4,294,967,295: the product does not fit in 64 bits.
        let huge = qoiFile(width: .max, height: .max, body: qoiEnd)
        #expect(try QOIDecoder().readInfo(huge).size == PixelSize(width: Int(UInt32.max), height: Int(UInt32.max)))
        #expect(throws: ImagePipelineError.tooManyPixels(PixelSize(width: Int(UInt32.max), height: Int(UInt32.max)),
                                                          limit: 100_000_000)) {
            try QOIDecoder().decode(huge, options: DecodeOptions())
        }
        // With no pixel limit at all, the decoder still sees that the data cannot hold them.
        #expect(throws: QOIError.truncatedPixels(expected: Int.max)) {
            try QOIDecoder().decode(huge, options: DecodeOptions(maxPixelCount: .max))
        }
    }

    @Test func aLyingHeaderAllocatesNothing() async throws {
        // 20,000 × 20,000 (a 1.6 GB bitmap) under the limit, with 4 KB of runs: refused up front.
        let data = qoiFile(width: 20_000, height: 20_000, body: Array(repeating: 0xFD, count: 4096) + qoiEnd)
        try await ResidentMemory.exclusively {
            let growth = try #require(try ResidentMemory.peakGrowth {
                #expect(throws: QOIError.truncatedPixels(expected: 400_000_000)) {
                    try QOIDecoder().decode(data, options: DecodeOptions(maxPixelCount: 500_000_000))
                }
            }, "no /proc/self/status")
            #expect(growth < 8 << 20, "peak grew \(growth) bytes")
        }
    }

    @Test func everyTruncationAndSeededByteFlipsGiveAPictureOrATypedError() throws {
        let data = try QOIFixture("glass-edge").qoi
        var inputs = (0..<data.count).filter { $0 < 64 || $0 % 13 == 0 || $0 > data.count - 16 }.map { data.prefix($0) }
        var generator = SeededGenerator(seed: 0x51_4F49)
        for _ in 0..<300 {
            var copy = [UInt8](data)
            for _ in 0..<Int.random(in: 1...4, using: &generator) {
                copy[Int.random(in: 0..<copy.count, using: &generator)] = UInt8.random(in: 0...255, using: &generator)
            }
            inputs.append(Data(copy))
        }
        for input in inputs {
            do {
                let decoded = try QOIDecoder().decode(input, options: DecodeOptions(targetSize: PixelSize(width: 30, height: 20)))
                #expect(decoded.info.format == .qoi)
            } catch is QOIError {
            } catch let error as ImagePipelineError {
                guard case .tooManyPixels = error else { Issue.record("unexpected \(error)"); continue }
            }
        }
    }
}
