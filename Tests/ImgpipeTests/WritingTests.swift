import Foundation
import PipelineTestSupport
import Testing

/// A PAM file as `imgpipe` writes it: width, height and straight RGBA bytes.
struct PAM: Equatable {
    let width: Int, height: Int
    let pixels: [UInt8]

    init(_ url: URL) throws {
        let data = [UInt8](try Data(contentsOf: url))
        let end = Array("ENDHDR\n".utf8)
        let start = try #require(data.indices.first { data[$0...].starts(with: end) }) + end.count
        let header = String(decoding: data[..<start], as: UTF8.self)
        func field(_ name: String) -> Int {
            header.split(separator: "\n").first { $0.hasPrefix(name + " ") }.flatMap { Int($0.dropFirst(name.count + 1)) } ?? -1
        }
        width = field("WIDTH")
        height = field("HEIGHT")
        pixels = Array(data[start...])
    }
}

/// Output formats chosen by extension, `convert`, and batch thumbnails into `--out-dir`.
@Suite("imgpipe writing", .timeLimit(.minutes(2)))
struct ImgpipeWritingTests {
    static let pngSuite = Imgpipe.root.appendingPathComponent("../shared/corpus/png-suite").standardizedFileURL

    /// (extension, format name in the "no encoder" message, whether the first bytes are that format's).
    static let formats: [(String, String, @Sendable ([UInt8]) -> Bool)] = [
        ("jpg", "JPEG", { $0.starts(with: [0xFF, 0xD8, 0xFF]) }),
        ("jpeg", "JPEG", { $0.starts(with: [0xFF, 0xD8, 0xFF]) }),
        ("JPG", "JPEG", { $0.starts(with: [0xFF, 0xD8, 0xFF]) }),
        ("png", "PNG", { $0.starts(with: [0x89, 0x50, 0x4E, 0x47]) }),
        ("PNG", "PNG", { $0.starts(with: [0x89, 0x50, 0x4E, 0x47]) }),
        ("webp", "WEBP", { $0.starts(with: Array("RIFF".utf8)) && $0.dropFirst(8).starts(with: Array("WEBP".utf8)) }),
        ("avif", "AVIF", { $0.dropFirst(4).starts(with: Array("ftypavif".utf8)) }),
        ("heic", "HEIF", { b in b.dropFirst(4).starts(with: Array("ftyp".utf8))
                               && ["heic", "heix", "mif1"].contains { b.dropFirst(8).starts(with: Array($0.utf8)) } }),
        ("pam", "PAM", { $0.starts(with: Array("P7\nWIDTH ".utf8)) }),
    ]

    /// Every known extension writes its format, or, while its encoder is not registered in
    /// this build, fails with exit 1 naming the format, before anything is loaded or written.
    /// PNG and PAM are always there.
    @Test func theExtensionPicksTheFormat() async throws {
        try await withTemporaryDirectory(prefix: "imgpipe-tests") { (directory: URL) async throws in
            let source = Imgpipe.samples.appendingPathComponent("glass-alpha.png").path
            for (ext, name, isFormat) in Self.formats {
                let out = directory.appendingPathComponent("out.\(ext)")
                let result = try await Imgpipe.run(["convert", source, "--out", out.path])
                if result.status == 0 {
                    #expect(isFormat([UInt8](try Data(contentsOf: out).prefix(16))), ".\(ext) did not write \(name)")
                    try FileManager.default.removeItem(at: out)
                } else {
                    #expect(!["png", "PNG", "pam"].contains(ext), ".\(ext): \(result.stderr)")
                    // The list of what it writes grows as encoders are registered.
                    #expect(result.status == 1 && result.stderr.hasPrefix("imgpipe: cannot write \(out.path): no \(name) encoder is "
                            + "registered in this imgpipe (it writes ") && result.stderr.hasSuffix(", .pam)\n")
                            && result.stderr.contains(" .png, ")
                            && result.stderr.filter { $0 == "\n" }.count == 1, ".\(ext): \(result.stderr)")
                    #expect(!FileManager.default.fileExists(atPath: out.path))
                }
            }
            // --format names the batch's extension; jpeg is written as .jpg.
            let batch = directory.appendingPathComponent("batch")
            for (format, file) in [("pam", "glass-alpha.pam"), ("PNG", "glass-alpha.png"), ("jpeg", "glass-alpha.jpg")] {
                let result = try await Imgpipe.run(["thumb", source, "--size", "16", "--out-dir", batch.path, "--format", format])
                if result.status == 0 {
                    #expect(FileManager.default.fileExists(atPath: batch.appendingPathComponent(file).path), "\(format)")
                } else {
                    #expect(format == "jpeg" && result.status == 1 && result.stderr.contains("no JPEG encoder"), "\(result.stderr)")
                }
            }
        }
    }

    /// `--compression-level` reaches the PNG encoder: level 0 stores, level 9 compresses, and
    /// both hold the same pixels.
    @Test func compressionLevelReachesThePNGEncoder() async throws {
        try await withTemporaryDirectory(prefix: "imgpipe-tests") { (directory: URL) async throws in
            let source = Imgpipe.samples.appendingPathComponent("rings.png").path
            var sizes: [Int] = [], pixels: [[UInt8]] = []
            for level in ["0", "9"] {
                let png = directory.appendingPathComponent("l\(level).png"), pam = directory.appendingPathComponent("l\(level).pam")
                #expect(try await Imgpipe.run(["convert", source, "--out", png.path, "--compression-level", level]).status == 0)
                #expect(try await Imgpipe.run(["decode", png.path, "--out", pam.path]).status == 0)
                sizes.append(try Data(contentsOf: png).count)
                pixels.append(try PAM(pam).pixels)
            }
            #expect(sizes[0] > 360 * 240 * 3 && sizes[1] < sizes[0] * 95 / 100, "\(sizes)")  // level 0 stores the rows
            #expect(pixels[0] == pixels[1] && pixels[0].count == 360 * 240 * 4)
        }
    }

    /// An output that cannot be written is exit 1 with one line naming it, checked before the
    /// source is loaded when the folder is missing; no partial file is left behind.
    @Test func unwritableOutputsAreTypedErrors() async throws {
        try await withTemporaryDirectory(prefix: "imgpipe-tests") { (directory: URL) async throws in
            let source = Imgpipe.samples.appendingPathComponent("rings.png").path
            let missing = try await Imgpipe.run(["convert", "/no/such/source.png", "--out", "/no/such/folder/x.png"])
            #expect(missing.status == 1 && missing.stderr == "imgpipe: cannot write /no/such/folder/x.png: the folder "
                    + "/no/such/folder does not exist\n", "\(missing.stderr)")
            let folder = directory.appendingPathComponent("taken.png")
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: false)
            let isFolder = try await Imgpipe.run(["decode", source, "--out", folder.path])
            #expect(isFolder.status == 1 && isFolder.stderr == "imgpipe: cannot write \(folder.path): it is a folder\n",
                    "\(isFolder.stderr)")
            let file = directory.appendingPathComponent("file")
            try Data("x".utf8).write(to: file)
            let notAFolder = try await Imgpipe.run(["thumb", source, "--size", "8", "--out-dir", file.appendingPathComponent("d").path])
            #expect(notAFolder.status == 1 && notAFolder.stderr.hasPrefix("imgpipe: cannot write \(file.path)/d: cannot create the folder"),
                    "\(notAFolder.stderr)")
            if getuid() != 0 {  // root writes anywhere
                let readOnly = directory.appendingPathComponent("ro")
                try FileManager.default.createDirectory(at: readOnly, withIntermediateDirectories: false)
                chmod(readOnly.path, 0o555)
                defer { chmod(readOnly.path, 0o755) }
                let denied = try await Imgpipe.run(["convert", source, "--out", readOnly.appendingPathComponent("x.png").path])
                #expect(denied.status == 1 && denied.stderr.contains("Permission denied"), "\(denied.stderr)")
            }
            #expect(try FileManager.default.contentsOfDirectory(atPath: directory.path).sorted() == ["file", "ro", "taken.png"]
                    .filter { $0 != "ro" || getuid() != 0 })
        }
    }

    /// `convert` keeps the full size and the pixels: a PNG written back as PNG decodes to the
    /// source's own decode, byte for byte, and for PngSuite files that is the reference pixels
    /// themselves, alpha and the colour under it included (exact: PNG is lossless, nothing is
    /// resampled and the decode is straight).
    @Test(.enabled(if: FileManager.default.fileExists(atPath: pngSuite.path), "../shared/corpus/png-suite is absent: skipped"))
    func convertPNGToPNGKeepsThePixels() async throws {
        try await withTemporaryDirectory(prefix: "imgpipe-tests") { (directory: URL) async throws in
            let opaque = ["basn2c08", "basn0g04", "basn3p08", "basi2c08", "basn2c16"]
            let alpha = ["basn6a08", "basn4a08", "tbbn3p08"]
            var sources = (opaque + alpha).map { Self.pngSuite.appendingPathComponent("png/\($0).png") }
            sources.append(Imgpipe.samples.appendingPathComponent("glass-alpha.png"))  // 480×320, alpha
            for source in sources {
                let stem = source.deletingPathExtension().lastPathComponent
                let converted = directory.appendingPathComponent("\(stem).png")
                let result = try await Imgpipe.run(["convert", source.path, "--out", converted.path])
                #expect(result.status == 0, "\(stem): \(result.stderr)")
                let before = directory.appendingPathComponent("\(stem)-source.pam"), after = directory.appendingPathComponent("\(stem)-out.pam")
                #expect(try await Imgpipe.run(["decode", source.path, "--out", before.path]).status == 0)
                #expect(try await Imgpipe.run(["decode", converted.path, "--out", after.path]).status == 0)
                let (a, b) = (try PAM(before), try PAM(after))
                #expect(a.width == b.width && a.height == b.height && a.pixels.count == a.width * a.height * 4, "\(stem)")
                let differing = zip(a.pixels, b.pixels).filter { $0 != $1 }.count
                #expect(a.pixels.count == b.pixels.count && differing == 0, "\(stem): \(differing) bytes differ")
                let referenceFile = Self.pngSuite.appendingPathComponent("json/\(stem)\(stem.hasSuffix("16") ? "_to8" : "").json")
                guard FileManager.default.fileExists(atPath: referenceFile.path) else { continue }
                let reference = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: referenceFile)) as? [Int])
                #expect(reference.count == b.pixels.count, "\(stem)")
                // 16-bit sources: within ±1 (libpng rounds to 8 bits where the references truncate).
                let tolerance = stem.hasSuffix("16") ? 1 : 0
                let checked = Array(reference.indices)
                let off = checked.filter { $0 < b.pixels.count && abs(reference[$0] - Int(b.pixels[$0])) > tolerance }.count
                #expect(off == 0, "\(stem): \(off) bytes differ from the reference by more than \(tolerance)")
            }
        }
    }

    /// PNG → lossless WebP → decode gives the source's own decode back, byte for byte, partial
    /// alpha included: decodes for writing are straight and the encoder keeps every value
    /// (`exact`), colour under transparent pixels too.
    @Test func convertToLosslessWebPKeepsThePixels() async throws {
        try await withTemporaryDirectory(prefix: "imgpipe-tests") { (directory: URL) async throws in
            for name in ["aurora.png", "rings.png", "glass-alpha.png"] {
                let source = Imgpipe.samples.appendingPathComponent(name).path
                let webp = directory.appendingPathComponent("\(name).webp")
                let result = try await Imgpipe.run(["convert", source, "--out", webp.path, "--lossless"])
                #expect(result.status == 0, "\(name): \(result.stderr)")
                let before = directory.appendingPathComponent("\(name).pam"), after = directory.appendingPathComponent("\(name).webp.pam")
                #expect(try await Imgpipe.run(["decode", source, "--out", before.path]).status == 0)
                #expect(try await Imgpipe.run(["decode", webp.path, "--out", after.path]).status == 0)
                let (a, b) = (try PAM(before), try PAM(after))
                #expect(a.width == b.width && a.height == b.height && a.pixels == b.pixels, "\(name): the pixels changed")
            }
        }
    }

    /// A batch writes every source it can: a damaged file and a missing one are reported by
    /// name, the others are written at the right size, and the exit status is 1. `-` adds the
    /// sources on stdin.
    @Test func batchWritesTheOthersWhenOneSourceFails() async throws {
        try await withTemporaryDirectory(prefix: "imgpipe-tests") { (directory: URL) async throws in
            let broken = directory.appendingPathComponent("broken.png")
            try Data([0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A] + [UInt8](repeating: 7, count: 100)).write(to: broken)
            let missing = directory.appendingPathComponent("missing.jpg").path
            let sample = { Imgpipe.samples.appendingPathComponent($0).path }
            let out = directory.appendingPathComponent("thumbs")
            let result = try await Imgpipe.run(["thumb", sample("mandelbrot.jpg"), broken.path, "-", missing, "--size", "64",
                                                "--out-dir", out.path, "--format", "pam"],
                                               stdin: "# a comment\n\(sample("balloon-exif6.jpg"))\n\n\(sample("glass-alpha.webp"))\n")
            #expect(result.status == 1, "\(result.stderr)")
            let lines = result.stderr.split(separator: "\n")
            #expect(lines.contains { $0.hasPrefix("imgpipe: cannot decode \(broken.path): ") }, "\(result.stderr)")
            #expect(lines.contains("imgpipe: \(missing) was not found"), "\(result.stderr)")
            #expect(lines.last?.hasPrefix("3 of 5 thumbnails written to \(out.path) in ") == true, "\(result.stderr)")
            #expect(lines.last?.hasSuffix(", 2 failed") == true, "\(result.stderr)")
            #expect(lines.count == 3, "\(result.stderr)")
            #expect(try FileManager.default.contentsOfDirectory(atPath: out.path).sorted()
                    == ["balloon-exif6.pam", "glass-alpha.pam", "mandelbrot.pam"])
            #expect(try pamSize(out.appendingPathComponent("mandelbrot.pam")) == [64, 43])
            #expect(try pamSize(out.appendingPathComponent("balloon-exif6.pam")) == [43, 64])  // upright
            #expect(try pamSize(out.appendingPathComponent("glass-alpha.pam")) == [64, 43])
            // All good: exit 0.
            let good = try await Imgpipe.run(["thumb", sample("mandelbrot.jpg"), sample("rings.png"), "--fill", "20x30",
                                              "--out-dir", out.path, "--format", "pam"])
            #expect(good.status == 0 && good.stderr.hasPrefix("2 of 2 thumbnails written to "), "\(good.stderr)")
            #expect(try pamSize(out.appendingPathComponent("rings.pam")) == [20, 30])
        }
    }

    /// Sources with the same file stem (ignoring case) never write one file: the first keeps
    /// `<stem>.<ext>`, the next get `-2`, `-3`, … in source order, each with a warning naming
    /// both sources; the run still succeeds.
    @Test func sameStemsGetNumberedNames() async throws {
        try await withTemporaryDirectory(prefix: "imgpipe-tests") { (directory: URL) async throws in
            var sources: [String] = []
            for (folder, name, sample) in [("a", "pic.png", "rings.png"), ("b", "pic.jpg", "mandelbrot.jpg"),
                                           ("c", "PIC.jpg", "balloon-exif6.jpg"), ("d", "pic-2.png", "rings.png")] {
                let url = directory.appendingPathComponent(folder).appendingPathComponent(name)
                try FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
                try FileManager.default.copyItem(at: Imgpipe.samples.appendingPathComponent(sample), to: url)
                sources.append(url.path)
            }
            let out = directory.appendingPathComponent("out")
            let result = try await Imgpipe.run(["thumb"] + sources + ["--size", "32", "--out-dir", out.path, "--format", "pam"])
            #expect(result.status == 0, "\(result.stderr)")
            #expect(result.stderr.contains("imgpipe: warning: \(sources[1]): pic.pam is taken by \(sources[0]); writing pic-2.pam"),
                    "\(result.stderr)")
            #expect(result.stderr.contains("imgpipe: warning: \(sources[2]): PIC.pam is taken by \(sources[0]); writing PIC-3.pam"),
                    "\(result.stderr)")
            #expect(result.stderr.contains("imgpipe: warning: \(sources[3]): pic-2.pam is taken by \(sources[1]); writing pic-2-2.pam"),
                    "\(result.stderr)")
            #expect(try FileManager.default.contentsOfDirectory(atPath: out.path).sorted()
                    == ["PIC-3.pam", "pic-2-2.pam", "pic-2.pam", "pic.pam"])
            #expect(try pamSize(out.appendingPathComponent("pic-2.pam")) == [32, 21])   // mandelbrot, 480×320
            #expect(try pamSize(out.appendingPathComponent("PIC-3.pam")) == [21, 32])   // balloon, upright
            #expect(try PAM(out.appendingPathComponent("pic.pam")).pixels == PAM(out.appendingPathComponent("pic-2-2.pam")).pixels,
                    "the same source gave different thumbnails")
        }
    }
}
