import Foundation
import PipelineTestSupport
import Testing

/// `../shared/corpus`.
let straightAlphaCorpus = Imgpipe.root.appendingPathComponent("../shared/corpus").standardizedFileURL

/// `imgpipe decode --out x.pam` writes the values the file stores: every PngSuite file and
/// libwebp test vector with alpha (the ones a premultiplied decode used to change: 28 PngSuite
/// files, colour under transparent pixels included, and 22 of the 96 vectors) against the
/// references themselves. The codec test targets check every file, with alpha or not, at the
/// library level.
@Suite("imgpipe decode writes straight alpha", .timeLimit(.minutes(5)),
       .enabled(if: FileManager.default.fileExists(atPath: straightAlphaCorpus.appendingPathComponent("png-suite").path)
                && FileManager.default.fileExists(atPath: straightAlphaCorpus.appendingPathComponent("webp").path),
                "../shared/corpus (png-suite, webp) is absent: skipped"))
struct ImgpipeStraightAlphaTests {
    static let corpus = straightAlphaCorpus

    /// Whether a PNG has alpha: colour type 4 or 6 in IHDR, or a `tRNS` chunk.
    static func pngHasAlpha(_ data: Data) -> Bool {
        let bytes = [UInt8](data)
        guard bytes.count > 33 else { return false }
        return bytes[25] == 4 || bytes[25] == 6 || data.range(of: Data("tRNS".utf8)) != nil
    }

    /// Whether a WebP has alpha: the `VP8X` alpha flag, or a `VP8L` header's alpha bit.
    static func webpHasAlpha(_ data: Data) -> Bool {
        let bytes = [UInt8](data)
        guard bytes.count >= 30 else { return false }
        switch String(decoding: bytes[12..<16], as: UTF8.self) {
        case "VP8X": return bytes[20] & 0x10 != 0
        case "VP8L": return bytes[24] & 0x10 != 0  // bit 28 of the 32 bits after the 0x2F signature
        default: return false
        }
    }

    /// PngSuite's 8-bit reference (the 16-bit sources' `_to8.json`, or their 16-bit values
    /// scaled) and the tolerance: 0, or ±1 for 16-bit sources (libpng rounds, the references truncate).
    static func pngReference(_ stem: String) throws -> (values: [Int], tolerance: Int) {
        let folder = corpus.appendingPathComponent("png-suite/json")
        let to8 = folder.appendingPathComponent("\(stem)_to8.json")
        if FileManager.default.fileExists(atPath: to8.path) {
            return (try JSONDecoder().decode([Int].self, from: Data(contentsOf: to8)), 1)
        }
        let values = try JSONDecoder().decode([Int].self, from: Data(contentsOf: folder.appendingPathComponent("\(stem).json")))
        guard values.contains(where: { $0 > 255 }) else { return (values, 0) }
        return (values.map { ($0 * 255 + 32767) / 65535 }, 1)
    }

    @Test func fullSizeDecodesOfPNGsWithAlphaAreTheReferencePixels() async throws {
        let folder = Self.corpus.appendingPathComponent("png-suite/png")
        let names = try FileManager.default.contentsOfDirectory(atPath: folder.path)
            .filter { $0.hasSuffix(".png") && !$0.hasPrefix("x") }.sorted()
            .filter { Self.pngHasAlpha((try? Data(contentsOf: folder.appendingPathComponent($0))) ?? Data()) }
        #expect(names.count >= 28, "PngSuite files with alpha or tRNS")
        try await withTemporaryDirectory(prefix: "imgpipe-tests") { (directory: URL) async throws in
            for name in names {
                let out = directory.appendingPathComponent(name + ".pam")
                let result = try await Imgpipe.run(["decode", folder.appendingPathComponent(name).path, "--out", out.path])
                try #require(result.status == 0, "\(name): \(result.stderr)")
                let ours = try pamPixels(out)
                let (reference, tolerance) = try Self.pngReference(String(name.dropLast(4)))
                try #require(ours.count == reference.count, "\(name): \(ours.count / 4) pixels written, reference has \(reference.count / 4)")
                let differing = zip(ours, reference).filter { abs(Int($0) - $1) > tolerance }.count
                #expect(differing == 0, "\(name): \(differing) channel values differ from the reference")
            }
        }
    }

    /// `.png` output holds the same straight pixels as `.pam` output (read back by netpbm's
    /// `pngtopam -alphapam`, an independent decoder).
    @Test(.enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/bin/pngtopam"), "pngtopam (netpbm) is not installed"),
          arguments: ["png-suite/png/basn6a08.png", "png-suite/png/basn4a16.png", "webp/lossy_alpha1.webp", "webp/lossless1.webp"])
    func pngOutputHoldsTheSameStraightPixels(_ file: String) async throws {
        try await withTemporaryDirectory(prefix: "imgpipe-tests") { (directory: URL) async throws in
            let source = Self.corpus.appendingPathComponent(file).path
            let pam = directory.appendingPathComponent("out.pam"), png = directory.appendingPathComponent("out.png")
            for out in [pam, png] {
                let result = try await Imgpipe.run(["decode", source, "--out", out.path])
                try #require(result.status == 0, "\(file): \(result.stderr)")
            }
            let readBack = directory.appendingPathComponent("back.pam")
            let pngtopam = try await ExternalTool.run("/usr/bin/pngtopam", ["-alphapam", png.path])
            try #require(pngtopam.status == 0, "pngtopam failed on our PNG of \(file)")
            try pngtopam.output.write(to: readBack)
            #expect(try pamPixels(readBack) == (try pamPixels(pam)), "\(file): the PNG's pixels differ from the PAM's")
        }
    }

    @Test func fullSizeDecodesOfWebPsWithAlphaHaveDwebpsMD5() async throws {
        let folder = Self.corpus.appendingPathComponent("webp")
        let list = try String(contentsOf: folder.appendingPathComponent("libwebp_tests.md5"), encoding: .utf8)
        var listed: [String: String] = [:]
        for line in list.split(separator: "\n") {
            let parts = line.split(separator: " ", omittingEmptySubsequences: true)
            if parts.count == 2, parts[1].hasSuffix(".webp.pam") { listed[String(parts[1].dropLast(4))] = String(parts[0]) }
        }
        let names = listed.keys.sorted().filter { Self.webpHasAlpha((try? Data(contentsOf: folder.appendingPathComponent($0))) ?? Data()) }
        #expect(names.count >= 22, "libwebp vectors with alpha")
        try await withTemporaryDirectory(prefix: "imgpipe-tests") { (directory: URL) async throws in
            var outputs: [String] = []
            for name in names {
                let out = directory.appendingPathComponent(name + ".pam")
                let result = try await Imgpipe.run(["decode", folder.appendingPathComponent(name).path, "--out", out.path])
                try #require(result.status == 0, "\(name): \(result.stderr)")
                outputs.append(out.path)
            }
            // One md5sum for all of them (coreutils).
            let text = try await ExternalTool.run("/usr/bin/md5sum", outputs).stdout
            let sums = text.split(separator: "\n").map { String($0.prefix(32)) }
            try #require(sums.count == names.count, "md5sum: \(text)")
            for (name, sum) in zip(names, sums) {
                #expect(sum == listed[name], "\(name): the PAM's md5 is not dwebp's")
            }
        }
    }
}
