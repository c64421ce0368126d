import CodecPNG
import Foundation
import PipelineCore
import PipelineTestSupport
import Testing

/// PngSuite conformance: every valid file decodes at its own size to the reference pixels,
/// every `x*.png` (corrupt on purpose) fails with a typed error.
@Suite(.enabled(if: Corpus.has("png-suite"), Corpus.missing("png-suite")))
struct PngSuiteTests {
    static var files: [String] {
        let folder = Corpus.folder("png-suite/png")
        let names = (try? FileManager.default.contentsOfDirectory(atPath: folder.path)) ?? []
        return names.filter { $0.hasSuffix(".png") }.sorted()
    }

    static var validFiles: [String] { files.filter { !$0.hasPrefix("x") } }
    static var corruptFiles: [String] { files.filter { $0.hasPrefix("x") } }

    @Test func theSuiteIsThere() {
        #expect(Self.validFiles.count >= 150)
        #expect(Self.corruptFiles.count >= 14)
    }

    /// 8-bit files must match exactly; 16-bit ones, scaled to 8 bits, within ±1 of `*_to8.json`.
    /// Compared straight (un-premultiplied): where alpha is below 255 the premultiplied byte
    /// cannot carry all 8 bits of colour, so the round trip may move a channel by at most
    /// `ceil(127.5 / alpha)`; colour under alpha 0 does not exist once premultiplied.
    /// The premultiplied values themselves must match the premultiplied reference exactly.
    @Test(arguments: validFiles)
    func decodesToTheReferencePixels(_ name: String) throws {
        let data = try Corpus.data("png-suite/png", name)
        let decoded = try PNGDecoder().decode(data, options: DecodeOptions())
        let stem = String(name.dropLast(4))
        let is16 = decoded.info.bitDepth == 16
        let reference = try Self.reference(stem, sixteenBit: is16)
        let bitmap = decoded.bitmap
        try #require(reference.count == bitmap.width * bitmap.height * 4, "\(name): reference has \(reference.count / 4) pixels, decoded \(bitmap.size)")

        let straight = bitmap.unpremultipliedBytes()
        var premultipliedReference = reference
        premultipliedReference.withUnsafeMutableBufferPointer { Bitmap.premultiply($0) }
        let tolerance = is16 ? 1 : 0
        var mismatches = 0
        var first: String?
        for p in 0..<(reference.count / 4) {
            let x = p % bitmap.width, y = p / bitmap.width
            let ours = bitmap.pixel(x: x, y: y)
            let oursPremultiplied = [Int(ours.r), Int(ours.g), Int(ours.b), Int(ours.a)]
            let alpha = Int(reference[p * 4 + 3])
            for c in 0..<4 {
                let refStraight = Int(reference[p * 4 + c]), gotStraight = Int(straight[p * 4 + c])
                let roundTrip = c == 3 || alpha == 255 ? 0 : (alpha == 0 ? 255 : (255 + 2 * alpha - 1) / (2 * alpha))
                let straightOK = abs(refStraight - gotStraight) <= tolerance + roundTrip
                let premultipliedOK = abs(Int(premultipliedReference[p * 4 + c]) - oursPremultiplied[c]) <= tolerance
                if !(straightOK && premultipliedOK) {
                    mismatches += 1
                    if first == nil {
                        first = "(\(x),\(y)) channel \(c): got \(gotStraight) (premultiplied \(oursPremultiplied[c])), reference \(refStraight)"
                    }
                }
            }
        }
        #expect(mismatches == 0, "\(name): \(mismatches) channel values differ; first at \(first ?? "")")
    }

    /// The 8-bit reference: `NAME.json`, or for 16-bit sources `NAME_to8.json`, or when the
    /// suite has none (the 16-bit alpha files) `NAME.json`'s 16-bit values scaled to 8 bits.
    static func reference(_ stem: String, sixteenBit: Bool) throws -> [UInt8] {
        let folder = Corpus.folder("png-suite/json")
        if sixteenBit, FileManager.default.fileExists(atPath: folder.appendingPathComponent("\(stem)_to8.json").path) {
            return try JSONDecoder().decode([UInt8].self, from: Corpus.data("png-suite/json", "\(stem)_to8.json"))
        }
        let values = try JSONDecoder().decode([Int].self, from: Corpus.data("png-suite/json", "\(stem).json"))
        return values.map { UInt8(sixteenBit ? ($0 * 255 + 32767) / 65535 : $0) }
    }

    @Test(arguments: corruptFiles)
    func corruptFilesFailWithATypedError(_ name: String) throws {
        let data = try Corpus.data("png-suite/png", name)
        #expect(throws: ImagePipelineError.self, "\(name) must not decode") {
            _ = try PNGDecoder().decode(data, options: DecodeOptions())
        }
    }

    @Test func headerInfoComesFromIHDRAlone() throws {
        let info = try PNGDecoder().readInfo(Corpus.data("png-suite/png", "basi6a16.png"))
        #expect(info.format == .png)
        #expect(info.size == PixelSize(width: 32, height: 32))
        #expect(info.isProgressive)
        #expect(info.hasAlpha)
        #expect(info.bitDepth == 16)
        #expect(info.componentCount == 4)
        let palette = try PNGDecoder().readInfo(Corpus.data("png-suite/png", "tbbn3p08.png"))
        #expect(palette.hasAlpha, "a palette with tRNS has alpha")
        #expect(!palette.isProgressive)
    }

    /// Interlaced files are decoded whole, then resampled: same pixels as the non-interlaced twin.
    @Test(arguments: ["basi0g08", "basi2c16", "basi3p04", "basi6a08"])
    func interlacedScaledDecodeMatchesTheNonInterlacedTwin(_ stem: String) throws {
        let target = PixelSize(width: 11, height: 11)
        let twin = "basn" + stem.dropFirst(4)
        let interlaced = try PNGDecoder().decode(Corpus.data("png-suite/png", stem + ".png"),
                                                 options: DecodeOptions(targetSize: target))
        let plain = try PNGDecoder().decode(Corpus.data("png-suite/png", twin + ".png"),
                                            options: DecodeOptions(targetSize: target))
        #expect(interlaced.bitmap.size == target)
        #expect(interlaced.bitmap == plain.bitmap)
    }
}
