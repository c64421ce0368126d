import CodecPNG
import Foundation
import PipelineCore
import PipelineTestSupport
import Testing

/// Damaged and hostile PNGs: a typed error, never a crash, a hang or a huge allocation.
@Suite(.tags(.cpuBound))
struct PNGRobustnessTests {
    static func outcome(_ data: Data, options: DecodeOptions = DecodeOptions(), label: String) -> DecodedImage? {
        do {
            return try PNGDecoder().decode(data, options: options)
        } catch is ImagePipelineError {
            return nil
        } catch {
            Issue.record("\(label): untyped error \(error)")
            return nil
        }
    }

    static func samples() throws -> [(String, Data)] {
        var result = [("encoded", try PNGEncoder().encode(PNGStreamingTests.pattern(width: 90, height: 60)))]
        if Corpus.has("png-suite") {
            for name in ["basi6a16.png", "basn3p04.png", "tbbn3p08.png"] {
                result.append((name, try Corpus.data("png-suite/png", name)))
            }
        }
        return result
    }

    @Test func zeroBytesAndTheBareSignatureFail() {
        let signature: [UInt8] = [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]
        for bytes in [[], signature, signature + [0, 0, 0, 13]] {
            #expect(throws: ImagePipelineError.self) { _ = try PNGDecoder().readInfo(Data(bytes)) }
            #expect(throws: ImagePipelineError.self) { _ = try PNGDecoder().decode(Data(bytes), options: DecodeOptions()) }
        }
    }

    /// libpng cannot resume a cut stream, so every cut is an error (also when shrinking).
    @Test func truncatedFilesFailAtEveryCut() throws {
        for (name, data) in try Self.samples() {
            for cut in stride(from: 0, to: data.count - 12, by: max(1, data.count / 89)) {
                let truncated = data.prefix(cut)
                #expect(Self.outcome(truncated, label: "\(name) cut at \(cut)") == nil, "\(name) cut at \(cut)")
                #expect(Self.outcome(truncated, options: DecodeOptions(targetSize: PixelSize(width: 7, height: 7)),
                                     label: "\(name) cut at \(cut), shrinking") == nil)
            }
        }
    }

    @Test func randomByteFlipsNeverCrash() throws {
        var generator = SeededGenerator(seed: 2026)
        for (name, data) in try Self.samples() {
            for trial in 0..<100 {
                var damaged = [UInt8](data)
                for _ in 0..<Int.random(in: 1...6, using: &generator) {
                    let at = Int.random(in: 8..<damaged.count, using: &generator)
                    damaged[at] = UInt8.random(in: 0...255, using: &generator)
                }
                let target = trial.isMultiple(of: 2) ? nil : PixelSize(width: 9, height: 9)
                if let decoded = Self.outcome(Data(damaged), options: DecodeOptions(targetSize: target), label: "\(name) #\(trial)") {
                    #expect(decoded.bitmap.size.isValid)
                }
            }
        }
    }

    /// IHDR rewritten to 65,535×65,535 (with a correct CRC): refused by the pixel limit from the
    /// header, before libpng allocates anything for the rows.
    @Test func aGiantHeaderIsRefusedBeforeDecoding() throws {
        var bytes = [UInt8](try PNGEncoder().encode(PNGStreamingTests.pattern(width: 4, height: 4)))
        for i in 16..<24 { bytes[i] = i % 4 < 2 ? 0 : 0xFF }  // width, height = 0x0000FFFF
        let crc = CRC32.checksum(bytes[12..<29])
        for k in 0..<4 { bytes[29 + k] = UInt8(truncatingIfNeeded: crc >> (24 - 8 * k)) }
        let data = Data(bytes)
        let giant = PixelSize(width: 65535, height: 65535)
        #expect(try PNGDecoder().readInfo(data).size == giant)
        #expect(throws: ImagePipelineError.tooManyPixels(giant, limit: 100_000_000)) {
            _ = try PNGDecoder().decode(data, options: DecodeOptions(targetSize: PixelSize(width: 64, height: 64)))
        }
    }

    @Test func strictDecodingTurnsWarningsIntoErrors() throws {
        // A text chunk with a bad CRC is ancillary: libpng warns and skips it.
        var bytes = [UInt8](try PNGEncoder().encode(PNGStreamingTests.pattern(width: 4, height: 4)))
        let chunk: [UInt8] = [0, 0, 0, 3] + Array("tEXt".utf8) + Array("a\0b".utf8) + [0xDE, 0xAD, 0xBE, 0xEF]
        bytes.insert(contentsOf: chunk, at: 33)  // after IHDR
        let lenient = try PNGDecoder().decode(Data(bytes), options: DecodeOptions())
        #expect(!lenient.warnings.isEmpty, "the bad CRC is reported")
        #expect(throws: ImagePipelineError.self) {
            _ = try PNGDecoder().decode(Data(bytes), options: DecodeOptions(strict: true))
        }
    }
}
