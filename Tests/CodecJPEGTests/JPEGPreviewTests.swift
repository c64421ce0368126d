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
@Suite(.tags(.cpuBound))
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

    /// The previews of `file` that cut it at different places, in order, from the lengths at
    /// which a correct cut can change: just before and just after each `FF xx` pair that could
    /// be a marker arrives (a naive search, independent of the decoder's walk), and the whole
    /// file; and halfway between two such pairs, in the middle of a scan's data, where a cut
    /// that is right never moves (so a walk that ended a scan early shows up as an extra cut).
    static func distinctPreviews(_ file: Data) -> [ProgressivePreview] {
        let bytes = [UInt8](file)
        var markers: [Int] = []
        for i in 0..<max(0, bytes.count - 1) where bytes[i] == 0xFF && bytes[i + 1] != 0x00 && bytes[i + 1] != 0xFF
            && !(0xD0...0xD7).contains(bytes[i + 1]) {
            markers.append(i)
        }
        let halfway = zip(markers, markers.dropFirst()).map { ($0 + $1) / 2 }
        let lengths = Set(markers.flatMap { [$0 + 1, $0 + 2] } + halfway + [bytes.count]).sorted()
        var previews: [ProgressivePreview] = []
        for length in lengths {
            guard let preview = decoder.preview(of: file.prefix(length)) else { continue }
            if preview.data.count != previews.last?.data.count { previews.append(preview) }
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
            let score = Self.fastPSNR(decoded.bitmap, final)
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

    // MARK: - The same pixels as libjpeg's buffered-image mode

    /// libjpeg's buffered-image output pass after each scan of `file` at `scale`/8
    /// (`CJPEGTestBuffered`), as bitmaps; the helper's own warnings must be none.
    static func bufferedPasses(_ file: Data, scale: Int, sourceLocation: SourceLocation = #_sourceLocation) throws -> [Bitmap] {
        var out: UnsafeMutablePointer<UInt8>?
        var width: Int32 = 0, height: Int32 = 0, passes: Int32 = 0, warnings: Int32 = 0
        var message = [CChar](repeating: 0, count: 256)
        let code = file.withUnsafeBytes { bytes in
            message.withUnsafeMutableBufferPointer { text in
                jpegtest_buffered_passes(bytes.baseAddress?.assumingMemoryBound(to: UInt8.self), bytes.count, Int32(scale),
                                         &out, &width, &height, &passes, &warnings, text.baseAddress, text.count)
            }
        }
        defer { free(out) }
        let text = String(decoding: message.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        try #require(code == 0, "buffered-image decode failed: \(text)", sourceLocation: sourceLocation)
        #expect(warnings == 0, "libjpeg warned in buffered-image mode", sourceLocation: sourceLocation)
        let pixels = try #require(out, sourceLocation: sourceLocation)
        let passBytes = Int(width) * Int(height) * 4
        return try (0..<Int(passes)).map { pass in
            let bytes = [UInt8](UnsafeBufferPointer(start: pixels + pass * passBytes, count: passBytes))
            return try #require(Bitmap(width: Int(width), height: Int(height), bytesPerRow: Int(width) * 4, bytes: bytes),
                                sourceLocation: sourceLocation)
        }
    }

    /// `file` rewritten losslessly as libjpeg's progressive script (`jpegtran -progressive`),
    /// its EXIF and ICC segments kept.
    static func progressive(_ file: Data, arithmetic: Bool = false) throws -> Data {
        var out: UnsafeMutablePointer<UInt8>?
        var size: UInt = 0
        let code = file.withUnsafeBytes { bytes in
            jpegtest_make_progressive(bytes.baseAddress?.assumingMemoryBound(to: UInt8.self), bytes.count, arithmetic ? 1 : 0,
                                      &out, &size)
        }
        defer { free(out) }
        try #require(code == 0)
        return Data(bytes: try #require(out), count: Int(size))
    }

    /// The largest difference of any byte of any pixel (255 when the sizes differ); rows are
    /// compared with `memcmp` first, so equal pictures cost little even in a debug build.
    static func maxDifference(_ a: Bitmap, _ b: Bitmap) -> Int {
        guard a.size == b.size else { return 255 }
        let rowBytes = a.width * 4
        return a.withUnsafeBytes { p in
            b.withUnsafeBytes { q in
                guard let pBase = p.baseAddress, let qBase = q.baseAddress else { return 0 }
                var worst = 0
                for y in 0..<a.height {
                    let pRow = pBase + y * a.bytesPerRow, qRow = qBase + y * b.bytesPerRow
                    guard memcmp(pRow, qRow, rowBytes) != 0 else { continue }
                    for i in 0..<rowBytes { worst = max(worst, abs(Int(pRow[i]) - Int(qRow[i]))) }
                }
                return worst
            }
        }
    }

    /// PSNR of R, G and B, from the bitmaps' bytes in one copy each (the support module's
    /// bitmap overload builds the bytes pixel by pixel: too slow for megapixels in debug).
    static func fastPSNR(_ a: Bitmap, _ b: Bitmap) -> Double {
        guard a.size == b.size, a.bytesPerRow == a.width * 4, b.bytesPerRow == b.width * 4 else { return 0 }
        return psnr(a.withUnsafeBytes { Array($0) }, b.withUnsafeBytes { Array($0) })
    }

    /// Every preview of `file`, decoded at `scale`/8 by the ordinary decoder (stored pixels: no
    /// orientation, no profile, as the C helper), equals the buffered-image output pass for its
    /// last scan, byte for byte; and the last pass is the final decode. Returns the previews.
    @discardableResult
    static func expectBufferedEquivalence(_ file: Data, scales: [Int] = [8, 3],
                                          sourceLocation: SourceLocation = #_sourceLocation) throws -> [ProgressivePreview] {
        let previews = distinctPreviews(file)
        let size = try decoder.readInfo(file).size
        for scale in scales {
            let options = DecodeOptions(targetSize: scale == 8 ? nil : target(scale: scale, of: size), appliesOrientation: false,
                                        strict: true, convertsToSRGB: false)
            let passes = try bufferedPasses(file, scale: scale, sourceLocation: sourceLocation)
            // One pass per scan; the previews show all but the last (it ends with the EOI).
            #expect(previews.map(\.steps) == Array(1..<passes.count), sourceLocation: sourceLocation)
            for preview in previews where preview.steps < passes.count {
                let decoded = try decoder.decode(preview.data, options: options)
                let difference = maxDifference(decoded.bitmap, passes[preview.steps - 1])
                #expect(difference == 0, "scale \(scale)/8, \(preview.steps) scans: off by up to \(difference)",
                        sourceLocation: sourceLocation)
            }
            let final = try decoder.decode(file, options: options)
            #expect(maxDifference(final.bitmap, try #require(passes.last)) == 0, sourceLocation: sourceLocation)
        }
        return previews
    }

    @Test(arguments: [(Fixtures.Kind.rgb, false), (.gray, false), (.rgb, true)])
    func previewsAreTheBufferedImageOutputPasses(kind: Fixtures.Kind, arithmetic: Bool) throws {
        let file = try #require(Fixtures.jpeg(width: 61, height: 45, kind: kind, progressive: true, arithmetic: arithmetic))
        try Self.expectBufferedEquivalence(file, scales: [8, 4, 3, 1])
    }

    /// The corpus has no progressive JPEG: its 8-bit files, rewritten losslessly as progressive
    /// (the same coefficients; Huffman, and arithmetic for the small ones), each give a preview
    /// per scan but the last, that decode without warnings through orientation and colour
    /// management, come closer to the final picture, and equal the buffered-image passes (at
    /// full size, and 1/4; the 1200×1800 photo at 1/4 only, to keep a debug run short).
    @Test(.enabled(if: Corpus.has("jpeg"), Corpus.missing("jpeg")),
          arguments: [("jpeg/testorig.jpg", [8, 2]), ("jpeg/testimgint.jpg", [8, 2]), ("jpeg/testimgari.jpg", [8, 2]),
                      ("icc/AdobeRGB1998.jpg", [8, 2]), ("icc/ProPhotoRGB.jpg", [8]), ("icc/SwappedRedAndGreen.jpg", [8]),
                      ("exif-orientation/Landscape_6.jpg", [2])])
    func corpusFilesMadeProgressiveGiveAPreviewPerScan(path: String, scales: [Int]) async throws {
        // Megapixel decodes: under the memory tests' lock, so that their peak measurements never
        // see this test's memory come and go.
        try await ResidentMemory.exclusively {
            let folder = String(path.prefix { $0 != "/" })
            try #require(Corpus.has(folder), Corpus.missing(folder))
            let source = try Corpus.data(folder, String(path.dropFirst(folder.count + 1)))
            // Sequential as stored: nothing.
            #expect(Self.distinctPreviews(source).isEmpty)
            for arithmetic in scales.contains(8) ? [false, true] : [false] {
                let file = try Self.progressive(source, arithmetic: arithmetic)
                let info = try Self.decoder.readInfo(file)
                #expect(info.isProgressive)
                let previews = try Self.expectBufferedEquivalence(file, scales: scales)
                #expect(previews.count == (info.componentCount == 1 ? 5 : 9), "\(path): \(previews.count) previews")
                guard !arithmetic else { continue }
                // As the pipeline decodes them: upright, in sRGB, at the smallest scale tested.
                let target = Self.target(scale: scales.min() ?? 8, of: info.uprightSize)
                let final = try Self.decoder.decode(file, options: DecodeOptions(targetSize: target))
                var last = 0.0
                for preview in previews {
                    let decoded = try Self.decoder.decode(preview.data, options: DecodeOptions(targetSize: target))
                    #expect(decoded.warnings.isEmpty, "\(path), \(preview.steps) scans: \(decoded.warnings)")
                    #expect(decoded.bitmap.size == final.bitmap.size)
                    let score = Self.fastPSNR(decoded.bitmap, final.bitmap)
                    #expect(score >= last, "\(path), \(preview.steps) scans: \(score) dB after \(last) dB")
                    last = score
                }
            }
        }
    }

    /// The 12-bit file (which this libjpeg cannot decode) is baseline: no preview.
    @Test(.enabled(if: Corpus.has("jpeg"), Corpus.missing("jpeg")))
    func theTwelveBitCorpusFileGivesNoPreview() throws {
        let file = try Corpus.data("jpeg", "monkey12.jpg")
        #expect(Self.distinctPreviews(file).isEmpty)
    }

    // MARK: - Robustness and cost

    /// Every prefix of mutated progressive files (bit flips, truncations, duplicated, deleted and
    /// swapped segments, extreme lengths and dimensions: FuzzSupport's `Mutator`): a preview is
    /// nil or a well-formed cut of that prefix, and decoding it fails or succeeds, never crashes.
    @Test func mutatedFilesGiveWellFormedPreviewsOrNone() throws {
        let seeds = [try Self.colourFile(), try #require(Fixtures.jpeg(width: 40, height: 33, kind: .gray, progressive: true,
                                                                        arithmetic: true)),
                     try #require(Fixtures.jpeg(width: 32, height: 24, progressive: true, restartRows: 1))]
        var previews = 0, decoded = 0
        for (index, seed) in seeds.enumerated() {
            for mutation in 0..<40 {
                let bytes = Mutator.mutate([UInt8](seed), format: .jpeg, seed: UInt64(index * 1000 + mutation)).bytes
                let file = Data(bytes)
                var seen = 0
                for length in 0...file.count {
                    guard let preview = Self.decoder.preview(of: file.prefix(length)) else { continue }
                    Self.expectWellFormed(preview, of: file, length: length)
                    previews += 1
                    guard preview.steps != seen else { continue }
                    seen = preview.steps
                    if (try? Self.decoder.decode(preview.data, options: DecodeOptions())) != nil { decoded += 1 }
                }
            }
        }
        #expect(previews > 0 && decoded > 0, "\(previews) previews, \(decoded) decoded")
    }

    /// The walk is linear: the preview of a 1–2 MB progressive file (all but its last byte)
    /// costs a few milliseconds, the copy of the bytes included.
    @Test func thePreviewOfAMegabyteFileIsCheap() async throws {
        // Tens of megabytes of pixels and coefficients: under the memory tests' lock (see above).
        try await ResidentMemory.exclusively {
            var rng = SeededGenerator(seed: 2026)
            let (width, height) = (1600, 1200)
            // Noise over a gradient: incompressible enough to take 1–2 MB at quality 92.
            let pattern = Fixtures.rgbPattern(width: width, height: height)
            let pixels = pattern.map { UInt8(clamping: Int($0) + Int.random(in: -70...70, using: &rng)) }
            var out: UnsafeMutablePointer<UInt8>?
            var size: UInt = 0
            let code = pixels.withUnsafeBufferPointer {
                jpegtest_encode($0.baseAddress, Int32(width), Int32(height), 3, 92, 1, 0, 0, &out, &size)
            }
            defer { jpegtest_free(out) }
            try #require(code == 0)
            let file = Data(bytes: try #require(out), count: Int(size))
            #expect((1_000_000...2_000_000).contains(file.count), "\(file.count) bytes")
            let partial = file.dropLast()
            let clock = ContinuousClock()
            var preview: ProgressivePreview?
            var best = Duration.seconds(1000)
            for _ in 0..<5 {
                let elapsed = clock.measure { preview = Self.decoder.preview(of: partial) }
                best = min(best, elapsed)
            }
            #expect(preview?.steps == 9)
            print("JPEGPreviewTests: preview(of:) of \(partial.count) bytes (\(width)×\(height) progressive) took \(best)")
            // Generous for a debug build on a loaded machine: a quadratic walk would take seconds.
            #expect(best < .milliseconds(250), "\(best)")
        }
    }
}
