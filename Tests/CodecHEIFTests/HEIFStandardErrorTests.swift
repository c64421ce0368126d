@testable import CodecHEIF
import Foundation
import PipelineCore
import PipelineTestSupport
import Testing

/// Codec logging stays off the process's stderr (fd 2): dav1d's through a logger, libde265's
/// through the opt-in ``HEIFDecoder/StandardError/discardedWhileDecoding``.
///
/// fd 2 is shared with every test running in parallel, so the checks look for text only the
/// code under test writes (dav1d's "Unknown OBU type", unique markers), never for "nothing at
/// all", and whatever else landed in the capture is written back to stderr afterwards.
@Suite(.serialized, .enabled(if: Corpus.has("heif"), Corpus.missing("heif")), .tags(.cpuBound))
struct HEIFStandardErrorTests {
    /// `example.avif` with the first 16 bytes of its `mdat` payload zeroed: the AV1 data starts
    /// with an OBU of type 0, which dav1d's default logger reported on stderr.
    static func corruptAVIF() throws -> Data {
        var data = try Corpus.data("heif", "example.avif")
        let mdat = try #require(data.firstRange(of: Data("mdat".utf8)))
        data.replaceSubrange(mdat.upperBound..<mdat.upperBound + 16, with: Data(count: 16))
        return data
    }

    @Test(.enabled(if: HEIFDecoder.decodesAVIF, "libheif has no AV1 decoder"))
    func dav1dLogsNothingAndItsMessageReachesTheError() throws {
        let (message, captured) = try capturingStandardError { () -> String in
            do {
                _ = try HEIFDecoder().decode(try Self.corruptAVIF(), options: DecodeOptions())
                return "decoded"
            } catch {
                return "\(error)"
            }
        }
        #expect(!captured.contains("OBU"), "dav1d wrote to stderr: \(captured)")
        #expect(message.contains("dav1d: Unknown OBU type 0"), "\(message)")
        #expect(HEIFLibrary.dav1dPluginRegistered)
    }

    /// The intact file still decodes through the plugin (pixels are compared with
    /// `heif-convert` in ``HEIFDecoderTests``).
    @Test(.enabled(if: HEIFDecoder.decodesAVIF, "libheif has no AV1 decoder"))
    func intactAVIFDecodes() throws {
        let decoded = try HEIFDecoder().decode(try Corpus.data("heif", "example.avif"), options: DecodeOptions())
        #expect(decoded.bitmap.size == decoded.info.size)
    }

    /// Messages are one line: libheif ends some with "\n".
    @Test func libheifMessagesAreTrimmed() throws {
        let data = try Corpus.data("heif", "rainbow-451x461.heic")
        #expect(HEIFLibrary.text("Invalid input: bounds (points to file position 280)\n") == "Invalid input: bounds (points to file position 280)")
        do {
            _ = try HEIFDecoder().decode(data.prefix(data.count / 2), options: DecodeOptions())
            Issue.record("half a file decoded")
        } catch let ImagePipelineError.corruptData(_, message), let ImagePipelineError.truncatedData(_, message) {
            #expect(!message.contains("\n") && message == message.trimmingCharacters(in: .whitespacesAndNewlines), "\(message)")
        }
    }

    /// The silencer discards writes to fd 2 while inside (nested too) and restores fd 2 after.
    @Test func silencerDiscardsWritesInsideAndRestoresAfter() throws {
        let inside = "inside-\(UUID().uuidString)", nested = "nested-\(UUID().uuidString)"
        let after = "after-\(UUID().uuidString)"
        let (_, captured) = try capturingStandardError {
            StandardErrorSilencer.silenced {
                FileHandle.standardError.write(Data((inside + "\n").utf8))
                StandardErrorSilencer.silenced { FileHandle.standardError.write(Data((nested + "\n").utf8)) }
                FileHandle.standardError.write(Data((inside + "\n").utf8))
            }
            FileHandle.standardError.write(Data((after + "\n").utf8))
        }
        #expect(!captured.contains(inside) && !captured.contains(nested), "\(captured)")
        #expect(captured.contains(after), "fd 2 was not restored: \(captured)")
    }

    /// libde265 prints "SPS error: …" for this file (one bit of its SPS flipped); the opt-in
    /// decoder keeps it off fd 2, and both fail with a typed error.
    @Test func libde265DiagnosticsAreDiscardedWhenAsked() throws {
        var data = try Corpus.data("heif", "rainbow-451x461.heic")
        data[313] ^= 0x10  // log2_min_luma_coding_block_size changes: "SPS error: CB alignment"
        // Other tests may decode damaged HEVC meanwhile (and print the same words), so absence
        // is not asserted in-process: the silencer's own test above uses unique markers, and
        // ImgpipeTests checks a whole process's stderr for this very file.
        #expect(throws: ImagePipelineError.self) {
            _ = try HEIFDecoder(standardError: .discardedWhileDecoding).decode(data, options: DecodeOptions())
        }
        let (failed, loud) = try capturingStandardError { () -> Bool in
            (try? HEIFDecoder().decode(data, options: DecodeOptions())) == nil
        }
        #expect(failed)
        #expect(loud.contains("SPS error"), "libde265 no longer prints: the silencer may be unneeded. \(loud)")
    }
}
