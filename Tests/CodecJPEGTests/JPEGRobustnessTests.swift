import CodecJPEG
import Foundation
import PipelineCore
import PipelineTestSupport
import Testing

/// Hostile and damaged input: a typed error or a partial decode with warnings, never a crash,
/// a hang or an allocation beyond the pixel limit.
@Suite(.tags(.cpuBound))
struct JPEGRobustnessTests {
    /// Decodes and reports what happened; any error that is not ours fails the test.
    static func outcome(_ data: Data, options: DecodeOptions = DecodeOptions(), label: String) -> DecodedImage? {
        do {
            return try JPEGDecoder().decode(data, options: options)
        } catch is ImagePipelineError {
            return nil
        } catch {
            Issue.record("\(label): untyped error \(error)")
            return nil
        }
    }

    static func sample(progressive: Bool) throws -> Data {
        try #require(Fixtures.jpeg(width: 120, height: 80, progressive: progressive, restartRows: progressive ? 0 : 2))
    }

    @Test func zeroBytesAndJustTheMagicFail() {
        for bytes in [[], [0xFF, 0xD8, 0xFF], [0xFF, 0xD8, 0xFF, 0xD9]] as [[UInt8]] {
            #expect(throws: ImagePipelineError.self) { _ = try JPEGDecoder().readInfo(Data(bytes)) }
            #expect(throws: ImagePipelineError.self) { _ = try JPEGDecoder().decode(Data(bytes), options: DecodeOptions()) }
        }
    }

    /// Cut inside the headers: an error. Cut inside the scan: libjpeg pads the rest and says so
    /// in a warning; strict decoding turns that into an error.
    @Test(arguments: [false, true])
    func truncatedFilesFailOrDecodePartially(progressive: Bool) throws {
        let data = try Self.sample(progressive: progressive)
        var partial = 0
        for cut in stride(from: 0, to: data.count, by: max(1, data.count / 97)) {
            let truncated = data.prefix(cut)
            if let decoded = Self.outcome(truncated, label: "cut at \(cut)") {
                partial += 1
                #expect(decoded.bitmap.size == PixelSize(width: 120, height: 80))
                #expect(!decoded.warnings.isEmpty, "cut at \(cut) of \(data.count): a partial decode must warn")
                #expect(throws: ImagePipelineError.self) {
                    _ = try JPEGDecoder().decode(truncated, options: DecodeOptions(strict: true))
                }
            }
        }
        #expect(partial > 10, "cuts inside the scan data decode partially")
    }

    @Test(arguments: [false, true])
    func randomByteFlipsNeverCrash(progressive: Bool) throws {
        let data = try Self.sample(progressive: progressive)
        var generator = SeededGenerator(seed: progressive ? 7 : 42)
        for trial in 0..<150 {
            var damaged = [UInt8](data)
            for _ in 0..<Int.random(in: 1...8, using: &generator) {
                let at = Int.random(in: 2..<damaged.count, using: &generator)
                damaged[at] = UInt8.random(in: 0...255, using: &generator)
            }
            if let decoded = Self.outcome(Data(damaged), label: "trial \(trial)") {
                #expect(decoded.bitmap.size.isValid)
            }
        }
    }

    /// A header claiming 65,535×65,535 is beyond libjpeg's own maximum (65,500): an error from
    /// the header. One claiming 65,500×65,500 is refused by the pixel limit, before any allocation.
    @Test func giantHeadersAreRefusedBeforeDecoding() throws {
        var bytes = [UInt8](try Self.sample(progressive: false))
        let sof = try #require(bytes.indices.first { bytes[$0] == 0xFF && bytes[$0 + 1] == 0xC0 })
        for offset in 5...8 { bytes[sof + offset] = 0xFF }  // height and width, big-endian
        let error = #expect(throws: ImagePipelineError.self) { _ = try JPEGDecoder().decode(Data(bytes), options: DecodeOptions()) }
        #expect(error?.description.contains("65500") == true, "\(String(describing: error))")

        for offset in [6, 8] { bytes[sof + offset] = 0xDC }  // 0xFFDC = 65,500
        let data = Data(bytes)
        let giant = PixelSize(width: 65500, height: 65500)
        #expect(try JPEGDecoder().readInfo(data).size == giant)
        #expect(throws: ImagePipelineError.tooManyPixels(giant, limit: 100_000_000)) {
            _ = try JPEGDecoder().decode(data, options: DecodeOptions())
        }
        #expect(throws: ImagePipelineError.tooManyPixels(giant, limit: 1000)) {
            _ = try JPEGDecoder().decode(data, options: DecodeOptions(targetSize: PixelSize(width: 8, height: 8), maxPixelCount: 1000))
        }
    }

    @Test func nonJPEGBytesAreACorruptDataError() {
        let error = #expect(throws: ImagePipelineError.self) {
            _ = try JPEGDecoder().decode(Data("GIF89a not a jpeg at all".utf8), options: DecodeOptions())
        }
        if case .corruptData(format: .jpeg, let message)? = error {
            #expect(message.contains("JPEG"), "libjpeg's own message: \(message)")
        } else {
            Issue.record("expected corruptData, got \(String(describing: error))")
        }
    }

    @Test func canDecodeSniffsTheMagicOnly() {
        #expect(JPEGDecoder().canDecode(Data([0xFF, 0xD8, 0xFF, 0xE0])))
        #expect(!JPEGDecoder().canDecode(Data([0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A])))
        #expect(DecoderRegistry().registering(JPEGDecoder()).decoder(for: Data([0xFF, 0xD8, 0xFF, 0xDB])) is JPEGDecoder)
    }
}
