import CodecHEIF
import CodecJPEG
import CodecPNG
import CodecWebP
import ColorManagement
import Foundation
import PipelineCore
import PipelineTestSupport
import Testing

/// Helpers shared by the colour tests: the corpus's `icc/` files and their sRGB references.
enum ICC {
    static let folder = "icc"

    /// `references.json`: file → its sRGB rendering (lcms, relative colorimetric).
    static func references() throws -> [(file: String, reference: String)] {
        let data = try Corpus.data(folder, "references.json")
        let map = try JSONDecoder().decode([String: String].self, from: data)
        return map.sorted { $0.key < $1.key }.map { ($0.key, $0.value) }
    }

    static func decoder(for file: String) -> any ImageDecoding {
        if file.hasSuffix(".jpg") { return JPEGDecoder() }
        if file.hasSuffix(".png") { return PNGDecoder() }
        if file.hasSuffix(".webp") { return WebPDecoder() }
        return HEIFDecoder()
    }

    static func decode(_ file: String, options: DecodeOptions = DecodeOptions()) throws -> DecodedImage {
        try decoder(for: file).decode(try Corpus.data(folder, file), options: options)
    }

    /// The reference as straight RGBA (decoded as stored: it is sRGB).
    static func reference(_ name: String) throws -> [UInt8] {
        try PNGDecoder().decode(try Corpus.data(folder, name), options: DecodeOptions(convertsToSRGB: false))
            .bitmap.unpremultipliedBytes()
    }
}

/// Every file of `../shared/corpus/icc/` against its colour-managed reference.
@Suite(.enabled(if: Corpus.has(ICC.folder), Corpus.missing(ICC.folder)), .tags(.cpuBound))
struct ICCCorpusTests {
    @Test func everyFileIsWithin35dBOfItsSRGBReference() throws {
        for (file, reference) in try ICC.references() {
            let decoded = try ICC.decode(file)
            let expected = try ICC.reference(reference)
            let ours = decoded.bitmap.unpremultipliedBytes()
            #expect(ours.count == expected.count, "\(file): size \(decoded.bitmap.size)")
            guard ours.count == expected.count else { continue }
            let db = psnr(ours, expected)
            #expect(db >= 35, "\(file): \(db) dB against \(reference)")
            #expect(decoded.info.colorProfile != nil, "\(file): no profile reported")
            #expect(decoded.warnings.isEmpty, "\(file): \(decoded.warnings)")
        }
    }

    /// The test profile swaps red and green: stored "green" cups must come out red.
    @Test func swappedProfilePicturesShowRedWhereRedBelongs() throws {
        for format in ["jpg", "png", "webp", "heic"] {
            let file = "SwappedRedAndGreen.\(format)"
            let expected = try ICC.reference("\(file).srgb.png")
            let ours = try ICC.decode(file).bitmap.unpremultipliedBytes()
            let stored = try ICC.decode(file, options: DecodeOptions(convertsToSRGB: false)).bitmap.unpremultipliedBytes()
            var red = 0, redInOurs = 0, redInStored = 0
            for i in stride(from: 0, to: expected.count, by: 4)
            where Int(expected[i]) > Int(expected[i + 1]) + 80 && Int(expected[i]) > Int(expected[i + 2]) + 40 {
                red += 1
                if Int(ours[i]) > Int(ours[i + 1]) + 40 { redInOurs += 1 }
                if Int(stored[i]) > Int(stored[i + 1]) + 40 { redInStored += 1 }
            }
            #expect(red > 1000, "\(file): the reference has only \(red) clearly red pixels")
            #expect(Double(redInOurs) >= 0.98 * Double(red), "\(file): \(redInOurs) of \(red) red pixels are red")
            #expect(Double(redInStored) <= 0.05 * Double(red), "\(file): the stored values already look red (\(redInStored))")
        }
    }

    /// Turning conversion off returns the stored values and still reports the profile.
    @Test func conversionOffKeepsStoredValuesAndReportsTheProfile() throws {
        for format in ["jpg", "png", "webp", "heic"] {
            let file = "ProPhotoRGB.\(format)"
            let off = try ICC.decode(file, options: DecodeOptions(convertsToSRGB: false))
            let expected = try ICC.reference("\(file).srgb.png")
            #expect(psnr(off.bitmap.unpremultipliedBytes(), expected) < 30, "\(file): stored values match sRGB")
            let profile = try #require(off.info.colorProfile, "\(file): no profile")
            #expect(profile.colorSpace == "RGB")
            #expect(profile.problem == nil)
            #expect(profile.description?.isEmpty == false, "\(file): \(profile)")
            let info = try ICC.decoder(for: file).readInfo(try Corpus.data(ICC.folder, file))
            #expect(info.colorProfile == profile)
        }
    }
}
