import CodecWebP
import Foundation
import PipelineCore
import PipelineTestSupport
import Testing

/// libwebp's test vectors: every file listed in `libwebp_tests.md5` decodes at full size to
/// the same pixels `dwebp -pam` writes.
///
/// Opaque files: the straight RGBA built from our premultiplied bitmap is byte-identical to
/// dwebp's PAM, so its md5 must equal the listed one. Files with alpha: premultiplied bytes
/// cannot carry all 8 bits of colour where alpha < 255, so the md5 cannot match; instead the
/// test runs `dwebp -pam` (only if it is installed), checks that *its* output has the listed
/// md5, and compares pixel by pixel: our premultiplied bytes must equal dwebp's straight ones
/// premultiplied by libwebp's own `MODE_rgbA` formula, `⌊x · a / 255⌋` (it truncates), exactly;
/// so the straight colour we give back is within the truncating round trip, `⌊255 / a⌋ + 1`.
@Suite(.enabled(if: Corpus.has("webp"), Corpus.missing("webp")))
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

    static let dwebp: URL? = ["/usr/bin/dwebp", "/usr/local/bin/dwebp"].map(URL.init(fileURLWithPath:))
        .first { FileManager.default.isExecutableFile(atPath: $0.path) }

    /// The PAM bytes exactly as `dwebp -pam` writes them.
    static func pam(width: Int, height: Int, rgba: [UInt8]) -> [UInt8] {
        Array("P7\nWIDTH \(width)\nHEIGHT \(height)\nDEPTH 4\nMAXVAL 255\nTUPLTYPE RGB_ALPHA\nENDHDR\n".utf8) + rgba
    }

    @Test func theVectorsAreThere() {
        #expect(Self.listedFiles.count >= 90)
        #expect(Self.opaqueFiles.count >= 40, "lossy VP8 vectors")
        #expect(Self.alphaFiles.count >= 20, "lossless and alpha vectors")
    }

    @Test(arguments: opaqueFiles)
    func opaqueFilesMatchTheListedMD5(_ name: String) throws {
        let decoded = try WebPDecoder().decode(Corpus.data(Self.folder, name), options: DecodeOptions())
        let bitmap = decoded.bitmap
        #expect(bitmap.size == decoded.info.size)
        let pam = Self.pam(width: bitmap.width, height: bitmap.height, rgba: bitmap.unpremultipliedBytes())
        #expect(MD5.hex(pam) == Self.listedMD5[name], "\(name)")
    }

    @Test(.enabled(if: dwebp != nil, "dwebp (Debian's webp package) is not installed"), arguments: alphaFiles)
    func alphaFilesMatchDwebpWithinTheRoundTrip(_ name: String) throws {
        let reference = try Self.runDwebp(name)
        #expect(MD5.hex(reference) == Self.listedMD5[name], "\(name): dwebp's own output is not the listed one")
        let decoded = try WebPDecoder().decode(Corpus.data(Self.folder, name), options: DecodeOptions())
        let bitmap = decoded.bitmap
        let header = Self.pam(width: bitmap.width, height: bitmap.height, rgba: []).count
        try #require(reference.count == header + bitmap.width * bitmap.height * 4, "\(name): size differs from dwebp's")
        let straightReference = Array(reference[header...])
        let ours = bitmap.unpremultipliedBytes()
        var mismatches = 0
        var first: String?
        for p in 0..<(bitmap.width * bitmap.height) {
            let x = p % bitmap.width, y = p / bitmap.width
            let px = bitmap.pixel(x: x, y: y)
            let premultiplied = [px.r, px.g, px.b, px.a]
            let alpha = UInt32(straightReference[p * 4 + 3])
            for c in 0..<4 {
                let straight = UInt32(straightReference[p * 4 + c])
                // libwebp's ApplyAlphaMultiply: (x · a · 32897) >> 23, i.e. ⌊x · a / 255⌋.
                let expected = c == 3 ? straight : (straight * alpha * 32897) >> 23
                let bound = c == 3 || alpha == 255 ? 0 : (alpha == 0 ? 255 : Int(255 / alpha) + 1)
                let straightOK = abs(Int(straight) - Int(ours[p * 4 + c])) <= bound
                if !(UInt32(premultiplied[c]) == expected && straightOK) {
                    mismatches += 1
                    if first == nil {
                        first = "(\(x),\(y)) channel \(c): ours \(ours[p * 4 + c]) (premultiplied \(premultiplied[c]), expected \(expected)), dwebp \(straight)"
                    }
                }
            }
        }
        #expect(mismatches == 0, "\(name): \(mismatches) channel values outside the round trip; first at \(first ?? "")")
    }

    /// `dwebp -pam NAME -o TMP`, read back.
    static func runDwebp(_ name: String) throws -> [UInt8] {
        let out = FileManager.default.temporaryDirectory.appendingPathComponent("webp-ref-\(UUID().uuidString).pam")
        defer { try? FileManager.default.removeItem(at: out) }
        let process = Process()
        guard let dwebp else { throw ImagePipelineError.unsupported(format: .webp, message: "dwebp is not installed") }
        process.executableURL = dwebp
        process.arguments = ["-quiet", "-pam", Corpus.folder(folder).appendingPathComponent(name).path, "-o", out.path]
        try process.run()
        process.waitUntilExit()
        try #require(process.terminationStatus == 0, "dwebp failed on \(name)")
        return [UInt8](try Data(contentsOf: out))
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
