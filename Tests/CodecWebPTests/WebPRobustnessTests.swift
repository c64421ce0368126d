import CodecWebP
import Foundation
import PipelineCore
import PipelineTestSupport
import Testing

/// Damaged and hostile WebP files: a typed error, never a crash or a huge allocation.
@Suite(.enabled(if: Corpus.has("webp"), Corpus.missing("webp")), .tags(.cpuBound))
struct WebPRobustnessTests {
    static func outcome(_ data: Data, options: DecodeOptions = DecodeOptions(), label: String) -> DecodedImage? {
        do {
            return try WebPDecoder().decode(data, options: options)
        } catch let error as ImagePipelineError {
            if case .corruptData(format: .webp?, _) = error { return nil }
            if case .truncatedData(format: .webp?, _) = error { return nil }
            Issue.record("\(label): unexpected error \(error)")
            return nil
        } catch {
            Issue.record("\(label): untyped error \(error)")
            return nil
        }
    }

    static func samples() throws -> [(String, Data)] {
        try ["test.webp", "lossless1.webp", "lossy_alpha1.webp", "bad_palette_index.webp"].map { ($0, try Corpus.data("webp", $0)) }
            + [("animation", try WebPAnimationTests.animation())]
    }

    @Test func emptyDataAndBareHeadersFail() {
        for bytes in [[], Array("RIFF".utf8), Array("RIFF\u{0}\u{0}\u{0}\u{0}WEBP".utf8), Array("RIFF\u{4}\u{0}\u{0}\u{0}WEBPVP8 ".utf8)] {
            #expect(throws: ImagePipelineError.self) { _ = try WebPDecoder().readInfo(Data(bytes)) }
            #expect(Self.outcome(Data(bytes), label: "\(bytes)") == nil)
        }
    }

    /// Corrupt on purpose upstream, but libwebp (like `dwebp`, whose md5 the list has) decodes
    /// it, drawing the out-of-range palette entries as transparent black: it must decode, not crash.
    @Test func badPaletteIndexDecodesLikeDwebp() throws {
        let decoded = try #require(Self.outcome(try Corpus.data("webp", "bad_palette_index.webp"), label: "bad_palette_index"))
        #expect(decoded.bitmap.size == decoded.info.size)
    }

    /// libwebp's error names reach the message.
    @Test func errorsNameTheStatusCode() throws {
        let data = try Corpus.data("webp", "test.webp")
        #expect(throws: ImagePipelineError.truncatedData(format: .webp, message: "libwebp failed decoding: VP8_STATUS_NOT_ENOUGH_DATA")) {
            _ = try WebPDecoder().decode(data.prefix(data.count / 2), options: DecodeOptions())
        }
    }

    @Test func truncatedFilesFailAtEveryCut() throws {
        for (name, data) in try Self.samples() {
            for cut in stride(from: 0, to: data.count - 1, by: max(1, data.count / 97)) {
                let truncated = data.prefix(cut)
                #expect(Self.outcome(truncated, label: "\(name) cut at \(cut)") == nil, "\(name) cut at \(cut)")
                #expect(Self.outcome(truncated, options: DecodeOptions(targetSize: PixelSize(width: 7, height: 7)),
                                     label: "\(name) cut at \(cut), scaled") == nil, "\(name) cut at \(cut), scaled")
            }
        }
    }

    @Test func randomByteFlipsNeverCrash() throws {
        var generator = SeededGenerator(seed: 2026)
        for (name, data) in try Self.samples() {
            for trial in 0..<150 {
                var damaged = [UInt8](data)
                for _ in 0..<Int.random(in: 1...6, using: &generator) {
                    let at = Int.random(in: 12..<damaged.count, using: &generator)
                    damaged[at] = UInt8.random(in: 0...255, using: &generator)
                }
                let target = trial.isMultiple(of: 2) ? nil : PixelSize(width: 9, height: 9)
                if let decoded = Self.outcome(Data(damaged), options: DecodeOptions(targetSize: target), label: "\(name) #\(trial)") {
                    let size = decoded.info.size
                    let expected = target.map { PixelSize(width: min($0.width, size.width), height: min($0.height, size.height)) } ?? size
                    #expect(decoded.bitmap.size == expected, "\(name) #\(trial)")
                }
            }
        }
    }

    /// A VP8L header rewritten to 16384×16384 (268 megapixels): `.tooManyPixels` from the
    /// header, before any pixel buffer is allocated.
    @Test func aGiantHeaderIsRefusedBeforeDecoding() throws {
        var bytes = [UInt8](try Corpus.data("webp", "lossless1.webp"))
        #expect(bytes[12..<16] == ArraySlice("VP8L".utf8) && bytes[20] == 0x2F)
        // 14 bits width − 1, 14 bits height − 1, little-endian from byte 21; keep alpha and version bits.
        let packed = UInt32(16383) | UInt32(16383) << 14 | UInt32(bytes[24] & 0xF0) << 24
        for k in 0..<4 { bytes[21 + k] = UInt8(truncatingIfNeeded: packed >> (8 * UInt32(k))) }
        let data = Data(bytes)
        let giant = PixelSize(width: 16384, height: 16384)
        #expect(try WebPDecoder().readInfo(data).size == giant)
        #expect(throws: ImagePipelineError.tooManyPixels(giant, limit: 100_000_000)) {
            _ = try WebPDecoder().decode(data, options: DecodeOptions(targetSize: PixelSize(width: 64, height: 64)))
        }
        let canvas = PixelSize(width: 16000, height: 9000)
        let animation = try WebPAnimationTests.animation(canvas: canvas)
        #expect(throws: ImagePipelineError.tooManyPixels(canvas, limit: 100_000_000)) {
            _ = try WebPDecoder().decode(animation, options: DecodeOptions())
        }
    }
}
