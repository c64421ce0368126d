import Foundation
import PipelineTestSupport
import Testing

/// `--keep-icc` on the wide-gamut pictures of `../shared/corpus/icc`: the output carries the
/// source's own ICC profile, byte for byte as Pillow reads it back (the same bytes
/// `vipsthumbnail`, which keeps profiles, writes), and its pixels read colour-managed are the
/// converted thumbnail exactly (PNG; the decoder converts its shrunk output in both paths).
/// Without it, no profile is written.
@Suite("imgpipe --keep-icc", .serialized, .timeLimit(.minutes(3)),
       .enabled(if: FileManager.default.fileExists(atPath: straightAlphaCorpus.appendingPathComponent("icc").path),
                "../shared/corpus/icc is absent: skipped"), .tags(.cpuBound))
struct ImgpipeKeepICCTests {
    static let folder = straightAlphaCorpus.appendingPathComponent("icc")

    /// The ICC profiles Pillow reads from `files` (hex, "" for none), one per file.
    static func pillowProfiles(_ files: [URL]) async throws -> [String] {
        let script = """
            import sys
            from PIL import Image
            for path in sys.argv[1:]:
                print((Image.open(path).info.get("icc_profile") or b"").hex())
            """
        let result = try await ExternalTool.run(pillowPython, ["-c", script] + files.map(\.path))
        try #require(result.status == 0, "Pillow: \(result.stderr)")
        return result.stdout.split(separator: "\n", omittingEmptySubsequences: false).prefix(files.count).map(String.init)
    }

    @Test(arguments: ["AdobeRGB1998.jpg", "ProPhotoRGB.png", "ProPhotoRGB.webp", "AdobeRGB1998.heic"])
    func theProfileIsKeptAndDescribesThePixels(_ name: String) async throws {
        try await withTemporaryDirectory(prefix: "imgpipe-icc") { (directory: URL) async throws in
            let source = Self.folder.appendingPathComponent(name)
            var kept = [URL]()
            for format in ["png", "jpg", "webp", "avif"] {
                let out = directory.appendingPathComponent("kept.\(format)")
                let result = try await Imgpipe.run(["thumb", source.path, "-s", "160", "--keep-icc", "-o", out.path])
                try #require(result.status == 0, "\(format): \(result.stderr)")
                let info = try await Imgpipe.run(["info", out.path])
                #expect(info.stdout.contains("ICC \""), "\(name) → \(format): \(info.stdout)")
                kept.append(out)
            }
            // Read colour-managed, the kept PNG is the sRGB thumbnail.
            let converted = directory.appendingPathComponent("converted.pam"), reference = directory.appendingPathComponent("reference.pam")
            let read = try await Imgpipe.run(["thumb", kept[0].path, "-s", "160", "-o", converted.path])
            let made = try await Imgpipe.run(["thumb", source.path, "-s", "160", "-o", reference.path])
            try #require(read.status == 0 && made.status == 0, "\(read.stderr) \(made.stderr)")
            #expect(try pamSize(converted) == pamSize(reference))
            let a = try pamPixels(converted), b = try pamPixels(reference)
            let largest = zip(a, b).map { abs(Int($0) - Int($1)) }.max() ?? 255
            #expect(a.count == b.count && largest == 0, "\(name): largest difference \(largest)")
            let plain = directory.appendingPathComponent("plain.png")
            let stripped = try await Imgpipe.run(["thumb", source.path, "-s", "160", "-o", plain.path])
            try #require(stripped.status == 0, "\(stripped.stderr)")
            guard hasPillow else { return }
            let readable = name.hasSuffix(".heic") ? [] : [source]  // Pillow 9.4 reads no HEIF
            let profiles = try await Self.pillowProfiles(readable + kept.prefix(3) + [plain])
            let ours = profiles[readable.count..<(readable.count + 3)]
            #expect(Set(ours).count == 1 && ours.first?.isEmpty == false, "\(name): one profile in PNG, JPEG and WebP")
            if let original = readable.first.map({ _ in profiles[0] }) { #expect(ours.first == original, "\(name): the source's bytes") }
            #expect(profiles.last == "", "\(name): without --keep-icc no profile is written")
        }
    }

    @Test func pamCannotKeepAProfile() async throws {
        let result = try await Imgpipe.run(["thumb", Self.folder.appendingPathComponent("AdobeRGB1998.jpg").path, "-s", "50",
                                            "--keep-icc", "-o", "/tmp/never-written.pam"])
        #expect(result.status == 2, "\(result.stderr)")
    }
}
