import CodecWebP
import Foundation
import PipelineCore
import PipelineTestSupport
import Testing

/// libwebp's test vectors: every file listed in `libwebp_tests.md5` decodes at full size to
/// the same pixels `dwebp -pam` writes.
///
/// Decoded with straight alpha (`MODE_RGBA`, as dwebp does), the PAM of every file, with alpha
/// or not, is byte-identical to dwebp's: its md5 must equal the listed one. The default
/// premultiplied decode (`MODE_rgbA`) must be those straight values premultiplied by libwebp's
/// own formula, `⌊x · a / 255⌋`, exactly.
@Suite(.enabled(if: Corpus.has("webp"), Corpus.missing("webp")), .tags(.cpuBound))
struct WebPConformanceTests {
    static let folder = "webp"

    /// `NAME.webp` → md5 of `dwebp -pam NAME.webp`.
    static let listedMD5: [String: String] = {
        guard let text = try? String(contentsOf: Corpus.folder(folder).appendingPathComponent("libwebp_tests.md5"), encoding: .utf8)
        else { return [:] }
        var result: [String: String] = [:]
        for line in text.split(separator: "\n") {
            let parts = line.split(separator: " ", omittingEmptySubsequences: true)
            guard parts.count == 2, parts[1].hasSuffix(".webp.pam") else { continue }
            result[String(parts[1].dropLast(4))] = String(parts[0])
        }
        return result
    }()

    static var listedFiles: [String] { listedMD5.keys.sorted() }
    static func hasAlpha(_ name: String) -> Bool {
        (try? WebPDecoder().readInfo(Corpus.data(folder, name)).hasAlpha) ?? true
    }
    static var opaqueFiles: [String] { listedFiles.filter { !hasAlpha($0) } }
    static var alphaFiles: [String] { listedFiles.filter { hasAlpha($0) } }

    /// The PAM bytes exactly as `dwebp -pam` writes them.
    static func pam(width: Int, height: Int, rgba: [UInt8]) -> [UInt8] {
        Array("P7\nWIDTH \(width)\nHEIGHT \(height)\nDEPTH 4\nMAXVAL 255\nTUPLTYPE RGB_ALPHA\nENDHDR\n".utf8) + rgba
    }

    @Test func theVectorsAreThere() {
        #expect(Self.listedFiles.count >= 90)
        #expect(Self.opaqueFiles.count >= 40, "lossy VP8 vectors")
        #expect(Self.alphaFiles.count >= 20, "lossless and alpha vectors")
    }

    /// All 96 vectors: straight RGBA at full size, written as PAM, has the listed md5.
    @Test(arguments: listedFiles)
    func aStraightDecodeMatchesTheListedMD5(_ name: String) throws {
        let decoded = try WebPDecoder().decode(Corpus.data(Self.folder, name), options: DecodeOptions(pixelFormat: .rgba8Straight))
        let bitmap = decoded.bitmap
        #expect(bitmap.size == decoded.info.size)
        #expect(bitmap.pixelFormat == .rgba8Straight)
        let pam = Self.pam(width: bitmap.width, height: bitmap.height, rgba: bitmap.unpremultipliedBytes())
        #expect(MD5.hex(pam) == Self.listedMD5[name], "\(name)")
    }

    /// With alpha, the premultiplied decode is the straight one (dwebp's values, by the test
    /// above) premultiplied as libwebp's `MODE_rgbA` does: `ApplyAlphaMultiply`,
    /// `(x · a · 32897) >> 23`, i.e. ⌊x · a / 255⌋ (it truncates).
    @Test(arguments: alphaFiles)
    func thePremultipliedDecodeIsLibwebpsPremultiplication(_ name: String) throws {
        let data = try Corpus.data(Self.folder, name)
        let straight = try WebPDecoder().decode(data, options: DecodeOptions(pixelFormat: .rgba8Straight)).bitmap
        let premultiplied = try WebPDecoder().decode(data, options: DecodeOptions()).bitmap
        #expect(premultiplied.pixelFormat == .rgba8Premultiplied)
        try #require(premultiplied.size == straight.size && premultiplied.bytesPerRow == straight.bytesPerRow)
        var mismatches = 0
        var first: String?
        for i in 0..<straight.bytes.count {
            let value = UInt32(straight.bytes[i]), alpha = UInt32(straight.bytes[i | 3])
            let expected = i % 4 == 3 ? value : (value * alpha * 32897) >> 23
            if UInt32(premultiplied.bytes[i]) != expected {
                mismatches += 1
                if first == nil { first = "byte \(i): \(premultiplied.bytes[i]), expected \(expected) from straight \(value), alpha \(alpha)" }
            }
        }
        #expect(mismatches == 0, "\(name): \(mismatches) values differ; first at \(first ?? "")")
    }

    /// A smaller target is scaled premultiplied whatever is asked; a straight request gets that
    /// result made straight once (lossy with alpha, lossless with alpha, opaque lossy).
    @Test(arguments: ["lossy_alpha1.webp", "lossless1.webp", "test.webp"])
    func aSmallerStraightDecodeIsThePremultipliedOneStraightened(_ name: String) throws {
        let data = try Corpus.data(Self.folder, name)
        let target = PixelSize(width: 40, height: 30)
        let premultiplied = try WebPDecoder().decode(data, options: DecodeOptions(targetSize: target)).bitmap
        let straight = try WebPDecoder().decode(data, options: DecodeOptions(targetSize: target, pixelFormat: .rgba8Straight)).bitmap
        #expect(straight.pixelFormat == .rgba8Straight && straight.size == premultiplied.size)
        #expect(straight == premultiplied.straightened(), "\(name)")
    }

    @Test func headerInfo() throws {
        let lossless = try WebPDecoder().readInfo(Corpus.data(Self.folder, "lossless1.webp"))
        #expect(lossless == ImageInfo(format: .webp, size: PixelSize(width: 1000, height: 307), hasAlpha: true,
                                      componentCount: 4, bitDepth: 8))
        let lossy = try WebPDecoder().readInfo(Corpus.data(Self.folder, "test.webp"))
        #expect(lossy.size == PixelSize(width: 128, height: 128))
        #expect(!lossy.hasAlpha && lossy.frameCount == 1)
        #expect(try WebPDecoder().readInfo(Corpus.data(Self.folder, "lossy_alpha1.webp")).hasAlpha)
        #expect(WebPDecoder().canDecode(try Corpus.data(Self.folder, "test.webp")))
    }
}
