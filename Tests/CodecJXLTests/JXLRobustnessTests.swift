import CodecJXL
import Foundation
import PipelineCore
import PipelineTestSupport
import Testing

/// The broken and hostile files of `../shared/corpus/jxl/invalid/`, and every truncation of
/// three corpus files: typed errors, never a crash, a hang or a picture of a cut file.
///
/// The corrupt files are decoded with libjxl's stderr discarded
/// (``JXLDecoder/StandardError/discardedWhileDecoding``: libjxl prints a trace of each failure);
/// the truncations with the default decoder, which touches no file descriptor: a cut input is
/// `JXL_DEC_NEED_MORE_INPUT` (the input is left open), and libjxl prints nothing for it.
/// Serialized: fd 2 is one per process, and the stderr test's capture must not interleave with
/// the other tests' silencing (a silencer that leaves after the capture began would restore fd
/// 2 under it).
@Suite(.serialized, .enabled(if: Corpus.has("jxl"), Corpus.missing("jxl")), .tags(.cpuBound))
struct JXLRobustnessTests {
    static let decoder = JXLDecoder(standardError: .discardedWhileDecoding)
    static let plain = JXLDecoder()
    static let invalid = ["corrupt-box-size", "corrupt-header", "huge-dimensions", "truncated-12", "truncated-2",
                          "truncated-anim-half", "truncated-container-40", "truncated-half"]

    @Test(arguments: invalid)
    func invalidFileIsATypedError(_ name: String) throws {
        let data = try Corpus.data(JXLReference.folder, "invalid/\(name).jxl")
        #expect(throws: ImagePipelineError.self) {
            _ = try Self.decoder.decode(data, options: DecodeOptions())
        }
    }

    /// A cut is told from corruption: the message says where the file ends.
    @Test func truncationIsNamed() throws {
        let data = try Corpus.data(JXLReference.folder, "invalid/truncated-half.jxl")
        #expect {
            _ = try Self.decoder.decode(data, options: DecodeOptions())
        } throws: { error in
            "\(error)".contains("truncated: it ends inside the first frame's pixels")
        }
        let corrupt = try Corpus.data(JXLReference.folder, "invalid/corrupt-header.jxl")
        #expect {
            _ = try Self.decoder.decode(corrupt, options: DecodeOptions())
        } throws: { error in
            "\(error)".contains("corrupt") && !"\(error)".contains("truncated")
        }
    }

    /// 10⁶ × 10⁶ in a valid header: refused from it, before anything is allocated.
    @Test func hugeDimensionsAreRefusedFromTheHeader() throws {
        let data = try Corpus.data(JXLReference.folder, "invalid/huge-dimensions.jxl")
        let info = try Self.decoder.readInfo(data)
        #expect(info.size == PixelSize(width: 1_000_000, height: 1_000_000))
        #expect {
            _ = try Self.decoder.decode(data, options: DecodeOptions())
        } throws: { error in
            guard case ImagePipelineError.tooManyPixels = error else { return false }
            return true
        }
        #expect(throws: ImagePipelineError.self) {
            _ = try Self.decoder.makeAnimationDecoder(for: data, options: DecodeOptions())
        }
    }

    /// Half an animation: the complete leading frames, then a typed error.
    @Test func truncatedAnimationDeliversItsFramesThenFails() throws {
        let data = try Corpus.data(JXLReference.folder, "invalid/truncated-anim-half.jxl")
        let frames = try Self.decoder.makeAnimationDecoder(for: data, options: DecodeOptions())
        var delivered = 0
        #expect(throws: ImagePipelineError.self) {
            while try frames.nextFrame(size: nil) != nil { delivered += 1 }
        }
        #expect(delivered >= 1 && delivered < 14, "\(delivered) frames")
        #expect(try frames.nextFrame(size: nil) == nil, "after the error, the sequence has ended")
    }

    /// Every length of `photo-d1` (bare codestream) and `alpha-lossless`, and every 7th of
    /// `jpeg-recompressed` (container) and every 97th of `anim-moon`: each cut decodes to a
    /// typed error. A cut that still decodes must be the whole picture (only trailing boxes
    /// after the codestream were cut).
    @Test(arguments: [("photo-d1", 1), ("alpha-lossless", 1), ("jpeg-recompressed", 7), ("anim-moon", 97)])
    func everyTruncationIsATypedError(_ name: String, _ step: Int) throws {
        let data = try Corpus.data(JXLReference.folder, name + ".jxl")
        let whole = try Self.plain.decode(data, options: DecodeOptions()).bitmap
        var failures = 0, pictures = 0, wrong: [Int] = []
        for length in stride(from: 0, to: data.count, by: step) {
            let cut = data.prefix(length)
            do {
                let decoded = try Self.plain.decode(cut, options: DecodeOptions())
                pictures += 1
                if decoded.bitmap != whole { wrong.append(length) }
            } catch is ImagePipelineError {
                failures += 1
            } catch {
                wrong.append(length)
            }
        }
        #expect(wrong.isEmpty, "\(name): cuts at \(wrong.prefix(10)) gave a wrong picture or an untyped error")
        #expect(failures > 0)
        _ = pictures
    }

    /// Every cut of the animation as frames: typed errors or fewer frames, never a crash.
    @Test func truncatedAnimationsAtManyLengths() throws {
        let data = try Corpus.data(JXLReference.folder, "anim-moon.jxl")
        for length in stride(from: 0, to: data.count, by: 331) {
            do {
                let frames = try Self.plain.makeAnimationDecoder(for: data.prefix(length), options: DecodeOptions())
                while try frames.nextFrame(size: nil) != nil {}
                Issue.record("a cut at \(length) of \(data.count) bytes gave every frame")
            } catch is ImagePipelineError {
                continue
            }
        }
    }

    /// 200 copies of each file with 1 to 8 bytes replaced (seeded, the same every run), still
    /// and animation decodes: each a picture or a typed error, never a crash or a hang. The
    /// headers are mutated most (the first 64 bytes get half of the flips), where sizes and
    /// counts are.
    @Test(arguments: ["photo-d1", "jpeg-recompressed", "anim-moon", "alpha-lossless", "rgb16-lossless"])
    func byteFlipsArePicturesOrTypedErrors(_ name: String) throws {
        let data = try Corpus.data(JXLReference.folder, name + ".jxl")
        var random = SeededGenerator(seed: 0x4A58_4C00 ^ UInt64(data.count))
        var untyped: [String] = []
        for _ in 0..<200 {
            var bytes = [UInt8](data)
            for _ in 0..<Int.random(in: 1...8, using: &random) {
                let inHeader = Bool.random(using: &random)
                let index = Int.random(in: 0..<(inHeader ? min(64, bytes.count) : bytes.count), using: &random)
                bytes[index] = UInt8.random(in: 0...255, using: &random)
            }
            let mutated = Data(bytes)
            do {
                _ = try Self.decoder.decode(mutated, options: DecodeOptions(maxPixelCount: 50_000_000))
            } catch is ImagePipelineError {
            } catch {
                untyped.append("\(error)")
            }
            do {
                let limits = DecodeOptions(maxPixelCount: 50_000_000, maxAnimationPixelCount: 100_000_000)
                let frames = try Self.decoder.makeAnimationDecoder(for: mutated, options: limits)
                while try frames.nextFrame(size: PixelSize(width: 16, height: 16)) != nil {}
            } catch is ImagePipelineError {
            } catch {
                untyped.append("\(error)")
            }
        }
        #expect(untyped.isEmpty, "\(name): \(untyped.prefix(3))")
    }

    /// libjxl's failure traces: on fd 2 with the default decoder (the control), not with
    /// ``JXLDecoder/StandardError/discardedWhileDecoding``.
    @Test func standardErrorIsDiscardedWhenAsked() throws {
        let data = try Corpus.data(JXLReference.folder, "invalid/corrupt-header.jxl")
        let (_, quiet) = try capturingStandardError(givesBack: Self.isNotAJXLTrace) {
            _ = try? Self.decoder.decode(data, options: DecodeOptions())
        }
        #expect(!quiet.contains("lib/jxl/"), "\(quiet)")
        let (_, loud) = try capturingStandardError(givesBack: Self.isNotAJXLTrace) {
            _ = try? JXLDecoder().decode(data, options: DecodeOptions())
        }
        #expect(loud.contains("lib/jxl/"), "the control: libjxl 0.7 prints its failure trace")
    }

    /// Lines of stderr given back after a capture: what other tests wrote meanwhile, not
    /// libjxl's traces (the control's).
    static func isNotAJXLTrace(_ line: Substring) -> Bool { !line.contains("lib/jxl/") }
}
