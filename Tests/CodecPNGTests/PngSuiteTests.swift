import CodecPNG
import Foundation
import PipelineCore
import PipelineTestSupport
import Testing

/// PngSuite conformance: every valid file decodes at its own size to the reference pixels,
/// every `x*.png` (corrupt on purpose) fails with a typed error.
@Suite(.enabled(if: Corpus.has("png-suite"), Corpus.missing("png-suite")), .tags(.cpuBound))
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

    /// Decoded at full size with straight alpha, every file gives the reference's values
    /// themselves, colour under transparent pixels included: 8-bit files exactly; 16-bit ones,
    /// scaled to 8 bits, within ±1 of `*_to8.json` (libpng's `png_set_scale_16` rounds, the
    /// references truncate).
    @Test(arguments: validFiles)
    func decodesToTheReferencePixels(_ name: String) throws {
        let data = try Corpus.data("png-suite/png", name)
        let decoded = try PNGDecoder().decode(data, options: DecodeOptions(pixelFormat: .rgba8Straight))
        let stem = String(name.dropLast(4))
        let is16 = decoded.info.bitDepth == 16
        let reference = try Self.reference(stem, sixteenBit: is16)
        let bitmap = decoded.bitmap
        #expect(bitmap.pixelFormat == .rgba8Straight)
        try #require(reference.count == bitmap.width * bitmap.height * 4, "\(name): reference has \(reference.count / 4) pixels, decoded \(bitmap.size)")
        let ours = bitmap.unpremultipliedBytes()
        #expect(ours == Array(bitmap.bytes.prefix(ours.count)), "\(name): a straight bitmap's bytes go to encoders unchanged")
        let tolerance = is16 ? 1 : 0
        var mismatches = 0
        var first: String?
        for i in 0..<reference.count where abs(Int(reference[i]) - Int(ours[i])) > tolerance {
            mismatches += 1
            if first == nil { first = "(\(i / 4 % bitmap.width),\(i / 4 / bitmap.width)) channel \(i % 4): got \(ours[i]), reference \(reference[i])" }
        }
        #expect(mismatches == 0, "\(name): \(mismatches) channel values differ; first at \(first ?? "")")
    }

    /// The default (premultiplied, for display) decode is the straight decode premultiplied
    /// (`round(c × a / 255)`), and converting it back gives the straight values within the
    /// round trip premultiplying allows (`⌈127.5 / a⌉`; none under alpha 0).
    @Test(arguments: ["basn6a08.png", "basn4a16.png", "tbbn3p08.png", "basi6a08.png", "pp0n6a08.png"])
    func thePremultipliedDecodeIsTheStraightOnePremultiplied(_ name: String) throws {
        let data = try Corpus.data("png-suite/png", name)
        let straight = try PNGDecoder().decode(data, options: DecodeOptions(pixelFormat: .rgba8Straight)).bitmap
        let premultiplied = try PNGDecoder().decode(data, options: DecodeOptions()).bitmap
        #expect(premultiplied.pixelFormat == .rgba8Premultiplied)
        #expect(premultiplied == straight.premultiplied(), "\(name)")
        let back = premultiplied.straightened()
        #expect(back.pixelFormat == .rgba8Straight)
        for i in stride(from: 0, to: back.bytes.count, by: 4) {
            let a = Int(straight.bytes[i + 3])
            let bound = a == 255 ? 0 : (a == 0 ? 255 : (255 + 2 * a - 1) / (2 * a))
            for c in 0..<3 where abs(Int(back.bytes[i + c]) - Int(straight.bytes[i + c])) > bound {
                Issue.record("\(name): pixel \(i / 4) channel \(c): \(back.bytes[i + c]) back, \(straight.bytes[i + c]) stored")
                return
            }
        }
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

    /// A smaller target is resampled premultiplied whatever is asked, and a straight request
    /// gets that result made straight once: shrinking while reading and the interlaced path alike.
    @Test(arguments: ["basn6a08.png", "basi6a08.png", "basn4a16.png", "tbbn3p08.png"])
    func aSmallerStraightDecodeIsThePremultipliedOneStraightened(_ name: String) throws {
        let data = try Corpus.data("png-suite/png", name)
        let target = PixelSize(width: 11, height: 7)
        let premultiplied = try PNGDecoder().decode(data, options: DecodeOptions(targetSize: target)).bitmap
        let straight = try PNGDecoder().decode(data, options: DecodeOptions(targetSize: target, pixelFormat: .rgba8Straight)).bitmap
        #expect(straight.size == target && straight.pixelFormat == .rgba8Straight)
        #expect(straight == premultiplied.straightened(), "\(name)")
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
