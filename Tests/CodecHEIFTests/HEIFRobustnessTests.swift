import CodecHEIF
import Foundation
import PipelineCore
import PipelineTestSupport
import Testing

/// Damaged and hostile HEIF files: a typed error or a picture, never a crash.
@Suite(.enabled(if: Corpus.has("heif"), Corpus.missing("heif")), .tags(.cpuBound))
struct HEIFRobustnessTests {
    static func outcome(_ data: Data, options: DecodeOptions = DecodeOptions(), label: String) -> DecodedImage? {
        do {
            return try HEIFDecoder().decode(data, options: options)
        } catch let error as ImagePipelineError {
            switch error {
            case .corruptData(format: .heif?, _), .truncatedData(format: .heif?, _), .unsupported(format: .heif, _): return nil
            default: Issue.record("\(label): unexpected error \(error)"); return nil
            }
        } catch {
            Issue.record("\(label): untyped error \(error)")
            return nil
        }
    }

    @Test func emptyDataAndBareHeadersFail() {
        for bytes in [[], Array("\u{0}\u{0}\u{0}\u{10}ftypheic".utf8), Array("\u{0}\u{0}\u{0}\u{10}ftypheic\u{0}\u{0}\u{0}\u{0}".utf8)] {
            #expect(throws: ImagePipelineError.self) { _ = try HEIFDecoder().readInfo(Data(bytes)) }
            #expect(Self.outcome(Data(bytes), label: "\(bytes)") == nil)
        }
    }

    /// libheif's own message reaches the error.
    @Test func errorsCarryLibheifsMessage() throws {
        let data = try Corpus.data("heif", "rainbow-451x461.heic")
        do {
            _ = try HEIFDecoder().decode(data.prefix(100), options: DecodeOptions())
            Issue.record("a 100-byte prefix decoded")
        } catch let ImagePipelineError.corruptData(format, message), let ImagePipelineError.truncatedData(format, message) {
            #expect(format == .heif)
            #expect(message.hasPrefix("libheif failed reading the file: "), "\(message)")
            // The context owns the message: it must be copied before the context is freed.
            #expect(!message.contains("\u{FFFD}") && message.count > "libheif failed reading the file: ".count + 8, "\(message)")
        }
    }

    @Test func truncatedFilesFailOrDecodeAtEveryCut() throws {
        let data = try Corpus.data("heif", "rainbow-451x461.heic")
        for cut in stride(from: 0, to: data.count - 1, by: data.count / 23) {
            let truncated = data.prefix(cut)
            if let decoded = Self.outcome(truncated, label: "cut at \(cut)") {
                #expect(decoded.bitmap.size == decoded.info.size, "cut at \(cut)")
            }
        }
    }

    @Test func truncatedExampleFailsOrDecodes() throws {
        let data = try Corpus.data("heif", "example.heic")
        for cut in [16, 500, 921, 2000, 30_000, data.count / 2, data.count - 10] {
            if let decoded = Self.outcome(data.prefix(cut), options: DecodeOptions(targetSize: PixelSize(width: 50, height: 50)),
                                          label: "example cut at \(cut)") {
                #expect(decoded.bitmap.size.width >= 50 && decoded.bitmap.size.height >= 50, "example cut at \(cut)")
            }
        }
    }

    /// Seeded flips, half in the `meta` box (structure), half anywhere (the HEVC streams).
    @Test func randomByteFlipsNeverCrash() throws {
        var generator = SeededGenerator(seed: 2026)
        let data = try Corpus.data("heif", "example.heic")
        for trial in 0..<40 {
            var damaged = [UInt8](data)
            let range = trial.isMultiple(of: 2) ? 16..<1000 : 16..<damaged.count
            for _ in 0..<Int.random(in: 1...4, using: &generator) {
                damaged[Int.random(in: range, using: &generator)] = UInt8.random(in: 0...255, using: &generator)
            }
            let target = trial % 4 < 2 ? PixelSize(width: 64, height: 64) : nil
            if let decoded = Self.outcome(Data(damaged), options: DecodeOptions(targetSize: target), label: "flip #\(trial)") {
                if let target {
                    #expect(decoded.bitmap.size.width >= target.width && decoded.bitmap.size.height >= target.height, "flip #\(trial)")
                } else {
                    #expect(decoded.bitmap.size == decoded.info.size, "flip #\(trial)")
                }
            }
        }
    }

    @Test func tooManyPixelsBeforeDecoding() throws {
        let data = try Corpus.data("heif", "example.heic")
        #expect(throws: ImagePipelineError.tooManyPixels(PixelSize(width: 1280, height: 854), limit: 1_000_000)) {
            _ = try HEIFDecoder().decode(data, options: DecodeOptions(maxPixelCount: 1_000_000))
        }
    }
}
