import CJPEGTestBuffered
import CJPEGTestEncoder
import CodecJPEG
import Foundation
import FuzzSupport
import PipelineCore
import PipelineTestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// Progressive previews (issue 26): `JPEGDecoder.preview(of:)` cuts a progressive JPEG still
/// arriving after its last complete scan and closes it with an EOI; the cut decodes, through the
/// ordinary decoder, as libjpeg's buffered-image mode shows the output pass for that scan.
struct JPEGPreviewTests {
    static let decoder = JPEGDecoder()

    /// libjpeg's own progressive script on 4:2:0 colour: 10 scans (DC, then AC bands and
    /// refinements per component), optimised tables before each.
    static func colourFile() throws -> Data {
        try #require(Fixtures.jpeg(width: 61, height: 45, progressive: true))
    }

    /// The preview of every prefix length, `0...file.count` (index = length).
    static func previewsAtEveryLength(_ file: Data) -> [ProgressivePreview?] {
        (0...file.count).map { decoder.preview(of: file.prefix($0)) }
    }

    /// The first preview of each step count, in order, from the lengths at which a preview can
    /// change: just before and just after each `FF xx` pair that could be a marker arrives (a
    /// naive search, independent of the decoder's walk), and the whole file.
    static func distinctPreviews(_ file: Data) -> [ProgressivePreview] {
        let bytes = [UInt8](file)
        var lengths: [Int] = []
        for i in 0..<max(0, bytes.count - 1) where bytes[i] == 0xFF && bytes[i + 1] != 0x00 && bytes[i + 1] != 0xFF
            && !(0xD0...0xD7).contains(bytes[i + 1]) {
            lengths += [i + 1, i + 2]
        }
        var previews: [ProgressivePreview] = []
        for length in lengths + [bytes.count] {
            guard let preview = decoder.preview(of: file.prefix(length)) else { continue }
            if preview.steps > (previews.last?.steps ?? 0) { previews.append(preview) }
        }
        return previews
    }

    /// What every preview of a prefix of `file` must be: the prefix's start, cut no later than
    /// it ends, closed with `FF D9`, at least one step.
    static func expectWellFormed(_ preview: ProgressivePreview, of file: Data, length: Int,
                                 sourceLocation: SourceLocation = #_sourceLocation) {
        #expect(preview.steps >= 1, sourceLocation: sourceLocation)
        #expect(preview.data.count >= 4 && preview.data.count <= length + 2, sourceLocation: sourceLocation)
        #expect(preview.data.suffix(2).elementsEqual([0xFF, 0xD9]), sourceLocation: sourceLocation)
        #expect(preview.data.dropLast(2).elementsEqual(file.prefix(preview.data.count - 2)), sourceLocation: sourceLocation)
    }

    /// The target that makes the decoder pick DCT scale `m`/8 for a picture of `size`.
    static func target(scale m: Int, of size: PixelSize) -> PixelSize {
        PixelSize(width: (size.width * m + 7) / 8, height: (size.height * m + 7) / 8)
    }

    // MARK: - Steps and quality

    @Test func stepsRiseWithThePrefixLength() throws {
        let file = try Self.colourFile()
        let previews = Self.previewsAtEveryLength(file)
        var last = 0
        for (length, preview) in previews.enumerated() {
            if let preview { Self.expectWellFormed(preview, of: file, length: length) }
            guard length < file.count else { continue }
            let steps = preview?.steps ?? 0
            #expect(steps >= last, "length \(length): \(steps) steps after \(last)")
            last = steps
        }
        // 10 scans: previews of 1...9. The 10th is complete only once the EOI is there, and
        // then the whole file has arrived: the final decode shows it.
        #expect(Set(previews.compactMap { $0?.steps }) == Set(1...9))
        #expect(previews[file.count] == nil)
        // The naive marker search finds the same previews as every length does.
        #expect(Self.distinctPreviews(file).map(\.steps) == Array(1...9))
    }

    @Test func eachPreviewIsCloserToTheFinalPicture() throws {
        let file = try Self.colourFile()
        let final = try Self.decoder.decode(file, options: DecodeOptions()).bitmap
        var last = 0.0
        var scores: [Double] = []
        for preview in Self.distinctPreviews(file) {
            let decoded = try Self.decoder.decode(preview.data, options: DecodeOptions())
            #expect(decoded.warnings.isEmpty, "\(preview.steps) scans: \(decoded.warnings)")
            let score = psnr(decoded.bitmap, final)
            scores.append(score)
            #expect(score >= last, "\(preview.steps) scans: \(score) dB after \(last) dB")
            last = score
        }
        // The DC scan alone already shows the picture; the last preview nearly is it.
        #expect(scores.count == 9 && scores[0] > 20 && scores[8] > 40, "\(scores)")
    }

    /// DCT scaling applies to previews as to the final decode: 1/8 … 8/8, no warnings.
    @Test func previewsDecodeWithoutWarningsAtEverySize() throws {
        let file = try Self.colourFile()
        let size = PixelSize(width: 61, height: 45)
        for preview in Self.distinctPreviews(file) {
            for m in 1...8 {
                let target = Self.target(scale: m, of: size)
                let decoded = try Self.decoder.decode(preview.data, options: DecodeOptions(targetSize: target, strict: true))
                #expect(decoded.bitmap.size == target)
                #expect(decoded.info.isProgressive)
            }
        }
    }

    /// Gray (6 scans) and arithmetic-coded progressive files (SOF10) give previews too.
    @Test(arguments: [(Fixtures.Kind.gray, false, 6), (.rgb, true, 10), (.gray, true, 6)])
    func otherProgressiveKindsGivePreviews(kind: Fixtures.Kind, arithmetic: Bool, scans: Int) throws {
        let file = try #require(Fixtures.jpeg(width: 40, height: 33, kind: kind, progressive: true, arithmetic: arithmetic))
        let previews = Self.distinctPreviews(file)
        #expect(previews.map(\.steps) == Array(1..<scans))
        for preview in previews {
            let decoded = try Self.decoder.decode(preview.data, options: DecodeOptions(strict: true))
            #expect(decoded.bitmap.size == PixelSize(width: 40, height: 33))
        }
    }

    /// Restart markers inside a scan do not end it.
    @Test func restartMarkersDoNotEndAScan() throws {
        let file = try #require(Fixtures.jpeg(width: 64, height: 64, progressive: true, restartRows: 1))
        #expect([UInt8](file).indices.dropLast().contains { file[$0] == 0xFF && (0xD0...0xD7).contains(file[$0 + 1]) })
        let previews = Self.distinctPreviews(file)
        #expect(previews.map(\.steps) == Array(1...9))
        for preview in previews {
            #expect(try Self.decoder.decode(preview.data, options: DecodeOptions(strict: true)).warnings.isEmpty)
        }
    }

    // MARK: - No preview

    @Test(arguments: [(false, 0), (true, 0), (false, 2)])
    func aBaselineFileGivesNoPreviewAtAnyLength(arithmetic: Bool, restartRows: Int) throws {
        let file = try #require(Fixtures.jpeg(width: 61, height: 45, arithmetic: arithmetic, restartRows: restartRows))
        #expect(Self.previewsAtEveryLength(file).allSatisfy { $0 == nil })
    }

    /// SOF1 (extended) and SOF3 (lossless) have their rows arrive top to bottom too: the frame
    /// marker of a baseline file patched to each gives nothing, though its scan is complete.
    @Test(arguments: [UInt8(0xC1), 0xC3, 0xCB])
    func aSequentialOrLosslessFrameGivesNoPreview(marker: UInt8) throws {
        let baseline = [UInt8](try #require(Fixtures.jpeg(width: 16, height: 16)))
        let sof = try #require(baseline.indices.dropLast().first { baseline[$0] == 0xFF && baseline[$0 + 1] == 0xC0 })
        // One more marker after the scan, so that it is complete before the EOI.
        func patched(_ code: UInt8) -> Data {
            var file = baseline
            file[sof + 1] = code
            return Data(file.dropLast(2) + [0xFF, 0xFE, 0x00, 0x02, 0xFF, 0xD9])
        }
        #expect(Self.previewsAtEveryLength(patched(marker)).allSatisfy { $0 == nil })
        // The same bytes marked progressive: the scan is there, so the frame marker alone said no.
        #expect(Self.decoder.preview(of: patched(0xC2).dropLast(2))?.steps == 1)
    }

    /// Nothing until the first scan is followed by a marker; then exactly that scan.
    @Test func truncatedHeadersGiveNoPreview() throws {
        let file = try Self.colourFile()
        let bytes = [UInt8](file)
        let sos = try #require(bytes.indices.dropLast().first { bytes[$0] == 0xFF && bytes[$0 + 1] == 0xDA })
        let data = sos + 2 + (Int(bytes[sos + 2]) << 8 | Int(bytes[sos + 3]))
        let next = try #require((data..<(bytes.count - 1)).first {
            bytes[$0] == 0xFF && bytes[$0 + 1] != 0 && !(0xD0...0xD7).contains(bytes[$0 + 1])
        })
        for length in 0..<(next + 2) {
            #expect(Self.decoder.preview(of: file.prefix(length)) == nil, "length \(length)")
        }
        let first = try #require(Self.decoder.preview(of: file.prefix(next + 2)))
        #expect(first.steps == 1 && first.data.count == next + 2)
    }

    @Test func bytesThatAreNotAJPEGGiveNoPreview() throws {
        var rng = SeededGenerator(seed: 26)
        let noise = Data((0..<4096).map { _ in UInt8.random(in: 0...255, using: &rng) })
        let png = Data([0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A] + [UInt8](repeating: 0, count: 64))
        for data in [Data(), Data([0xFF]), Data([0xFF, 0xD8]), Data([0xFF, 0xD8, 0xFF]), noise, png] {
            #expect(Self.decoder.preview(of: data) == nil)
        }
        // A progressive file's scans without its SOI.
        let file = try Self.colourFile()
        #expect(Self.decoder.preview(of: file.dropFirst(2).prefix(file.count / 2)) == nil)
    }

    @Test func theWholeFileGivesNoPreview() throws {
        let file = try Self.colourFile()
        #expect(Self.decoder.preview(of: file) == nil)
        #expect(Self.decoder.preview(of: file + Data([0x00, 0xFF, 0xD8])) == nil)
        #expect(Self.decoder.preview(of: file.dropLast())?.steps == 9)
    }

    /// The preview's prefix is refused like the file: a scan bomb gives no preview.
    @Test func aFileOverTheScanLimitsGivesNoPreview() throws {
        let bomb = ScanBombWriter.jpeg(width: 64, height: 64, scans: 40)
        let previews = Self.previewsAtEveryLength(bomb)
        // Scans 1...16 pass the default budget of 16 passes; 17 and later do not.
        #expect(previews.compactMap { $0?.steps }.max() == 16)
        #expect(JPEGDecoder(maxScans: 3).preview(of: bomb.dropLast())?.steps == nil)
    }
}
