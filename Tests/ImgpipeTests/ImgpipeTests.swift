import Foundation
import PipelineCore
import PipelineTestSupport
import Testing

@Suite("imgpipe command line", .timeLimit(.minutes(2)))
struct ImgpipeTests {
    @Test(arguments: ["info", "thumb", "decode", "convert", "frames", "sheet", "fetch", "demo"])
    func everySubcommandHasHelp(command: String) async throws {
        let result = try await Imgpipe.run([command, "--help"])
        #expect(result.status == 0)
        #expect(result.stdout.hasPrefix("usage: imgpipe \(command)"))
        #expect(result.stdout.contains("--cache-dir DIR"))
        #expect(result.stdout.contains("\nsources, network and caches:\n"))
        #expect(result.stdout.contains("\ngeneral:\n  --verbose"))
    }

    @Test func thumbHelpGroupsEveryOptionOnceByPurpose() async throws {
        let result = try await Imgpipe.run(["thumb", "--help"])
        #expect(result.status == 0)
        let headings = result.stdout.split(separator: "\n").filter { $0.hasSuffix(":") && !$0.hasPrefix(" ") }
        #expect(headings == ["size and crop:", "processing:", "output:", "sources, network and caches:", "general:"])
        let options = result.stdout.split(separator: "\n").filter { $0.hasPrefix("  --") }
            .map { String($0.dropFirst(2).prefix { $0 != " " }) }
        #expect(options.count == Set(options).count, "each option once")
        for name in ["--size", "--smartcrop", "--blur", "--sharpen", "--sharpen-reductions", "--out", "--format", "--quality", "--cache-dir", "--verbose", "--help"] {
            #expect(options.contains(name), "\(name) listed")
        }
        let size = try #require(result.stdout.range(of: "size and crop:")), out = try #require(result.stdout.range(of: "\noutput:"))
        #expect(result.stdout[size.upperBound..<out.lowerBound].contains("--gravity SIDE"), "--gravity under size and crop")
    }

    @Test(arguments: [
        (["bogus"], "unknown command 'bogus'"),
        (["thumb", "a.jpg", "--size"], "'--size' needs a value N"),
        (["thumb", "a.jpg", "--sise", "5", "--out", "x.png"], "unknown option '--sise' for 'thumb'"),
        (["thumb", "a.jpg", "--size", "0", "--out", "x.png"], "--size needs N, WxH, Wx or xH in pixels, got '0'"),
        (["thumb", "a.jpg", "--size", "5", "--out", "x.bmp"],
         "cannot tell the output format of 'x.bmp': unknown extension '.bmp' (known: .jpg, .jpeg, .png, .webp, .avif, .heic, .gif, .jxl, .pam)"),
        (["convert", "a.png", "--out", "x.tiff"], "unknown extension '.tiff' (known: .jpg, .jpeg, .png, .webp, .avif, .heic, .gif, .jxl, .pam)"),
        (["decode", "a.png", "--out", "dir.d/x"], "cannot tell the output format of 'dir.d/x': no extension"),
        (["convert", "a.png", "--out", "x.webp", "--quality", "120"], "--quality needs a whole number from 0 to 100, got '120'"),
        (["convert", "a.png", "--out", "x.jpg", "--quality", "high"], "--quality needs a whole number from 0 to 100, got 'high'"),
        (["convert", "a.png", "--out", "x.png", "--quality", "80"], "--quality applies to .jpg, .webp, .avif, .heic and .jxl, not .png"),
        (["convert", "a.png", "--out", "x.jpeg", "--lossless"], "--lossless: JPEG is always lossy"),
        (["convert", "a.png", "--out", "x.png", "--compression-level", "10"], "--compression-level needs a whole number from 0 to 9, got '10'"),
        (["convert", "a.png", "--out", "x.webp", "--compression-level", "3"], "--compression-level applies to .png only, not .webp"),
        (["thumb", "a.png", "--size", "5", "--out", "x.webp", "--progressive"], "--progressive applies to .jpg and .jpeg only, not .webp"),
        (["thumb", "a.png", "b.png", "--size", "5", "--out", "x.png"], "--out FILE takes one SOURCE; for several use --out-dir DIR"),
        (["thumb", "a.png", "--size", "5", "--out", "x.png", "--out-dir", "d"], "give --out FILE or --out-dir DIR, not both"),
        (["thumb", "a.png", "--size", "5", "--out-dir", "d", "--format", "bmp"],
         "--format must be one of jpg, jpeg, png, webp, avif, heic, gif, jxl, pam, got 'bmp'"),
        (["thumb", "a.png", "--size", "5", "--out", "x.png", "--format", "png"], "--format goes with --out-dir"),
        (["thumb", "a.png", "--size", "5"], "'imgpipe thumb' needs --out FILE or --out-dir DIR"),
        (["thumb", "a.jpg", "--fill", "5by5", "--out", "x.png"], "--fill needs WIDTHxHEIGHT"),
        (["thumb", "a.jpg", "--size", "5", "--blur", "-1", "--out", "x.png"], "--blur needs a positive number of pixels"),
        (["thumb", "a.jpg", "--size", "5", "--sharpen", "0", "--out", "x.png"], "--sharpen needs a sigma above 0, at most 100 pixels, got '0'"),
        (["thumb", "a.jpg", "--size", "5", "--sharpen-reductions", "0.5", "--out", "x.png"],
         "--sharpen-reductions needs a reduction factor from 1 to 1000, got '0.5'"),
        (["decode", "a.jpg"], "needs --out FILE"),
        (["info"], "'info' needs at least one SOURCE"),
        (["info", "a", "--json=yes"], "'--json' takes no value"),
        (["thumb", "a.jpg", "--szie", "5", "--out", "x.png"], "did you mean '--size'?"),
        (["tumb", "a.jpg"], "unknown command 'tumb' (did you mean 'thumb'?"),
        (["thumb", "a.jpg", "-q", "5"], "unknown option '-q' for 'thumb' (one-letter options: -h, -o, -s;"),
        (["info", "a.jpg", "-s", "5"], "unknown option '-s' for 'info' (one-letter options: -h;"),
        (["thumb", "a.jpg", "-s", "x", "-o", "x.png"], "--size needs N, WxH, Wx or xH in pixels, got 'x'"),
        (["thumb", "a.jpg", "--size", "10x0", "-o", "x.png"], "--size needs N, WxH, Wx or xH in pixels, got '10x0'"),
        (["convert", "a.png", "b.png", "--out", "c.png"], "give OUT or --out FILE, not both"),
        (["convert", "a.png", "b.png", "c.png"], "'convert' takes 1 to 2 argument(s)"),
        (["convert", "a.png", "b.png", "--background", "white"],
         "--background applies to .jpg and .jpeg (no alpha to flatten) or with thumb's --pad and --flatten; .png keeps the alpha"),
        (["convert", "a.png", "b.jpg", "--background", "#12345"],
         "--background needs a colour name (white, black, red, …), transparent, #RRGGBB, #RRGGBBAA, #RGB or R,G,B[,A] (0-255), got '#12345'"),
        (["convert", "a.png", "b.jpg", "--background", "1,2,300"], "--background needs a colour name"),
    ] as [([String], String)])
    func usageErrorsExitTwoWithOneLine(arguments: [String], message: String) async throws {
        let result = try await Imgpipe.run(arguments)
        #expect(result.status == 2)
        #expect(result.stderr.hasPrefix("imgpipe: "))
        #expect(result.stderr.contains(message), "\(result.stderr)")
        #expect(result.stderr.split(separator: "\n").count == 1)
    }

    @Test func infoReadsHeadersOfEverySample() async throws {
        let samples = try FileManager.default.contentsOfDirectory(atPath: Imgpipe.samples.path).sorted()
        let result = try await Imgpipe.run(["info"] + samples.map { Imgpipe.samples.appendingPathComponent($0).path })
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stdout.split(separator: "\n").count == samples.count)
        #expect(result.stdout.contains("balloon-exif6.jpg: JPEG 320×480 (stored 480×320, orientation 6)"))
        #expect(result.stdout.contains("glass-alpha.png: PNG 480×320, alpha"))
        #expect(result.stdout.contains("dunes-progressive.jpg: JPEG 480×320, no alpha, 1 frame, progressive"))
        #expect(result.stdout.contains("orbit.gif: GIF 96×96, alpha, 16 frames, loops forever, 0.96 s"))

        let json = try await Imgpipe.run(["info", "--json", "-"], stdin: Imgpipe.samples.appendingPathComponent("balloon-exif6.jpg").path + "\n")
        let rows = try #require(try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [[String: Any]])
        #expect(rows.count == 1)
        #expect(rows[0]["width"] as? Int == 320 && rows[0]["height"] as? Int == 480 && rows[0]["orientation"] as? Int == 6)
    }

    /// `info` names each embedded ICC profile (text and JSON).
    @Test(.enabled(if: FileManager.default.fileExists(atPath: Imgpipe.root.appendingPathComponent("../shared/corpus/icc").path),
                   "../shared/corpus/icc is absent: skipped"))
    func infoPrintsTheColourProfile() async throws {
        let file = Imgpipe.root.appendingPathComponent("../shared/corpus/icc/AdobeRGB1998.jpg").standardizedFileURL.path
        let result = try await Imgpipe.run(["info", file])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stdout.contains("no alpha, 1 frame, ICC \"Compatible with Adobe RGB (1998)\" (RGB), "), "\(result.stdout)")
        let json = try await Imgpipe.run(["info", "--json", file])
        let rows = try #require(try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [[String: Any]])
        let profile = try #require(rows.first?["profile"] as? [String: Any])
        #expect(profile["colorSpace"] as? String == "RGB" && profile["bytes"] as? Int == 18604)
    }

    @Test func framesWritesEveryCompositedFrameAndThumbTheFirst() async throws {
        try await withTemporaryDirectory(prefix: "imgpipe-tests") { (directory: URL) async throws in
            let orbit = Imgpipe.samples.appendingPathComponent("orbit.gif").path
            let full = directory.appendingPathComponent("full")
            let result = try await Imgpipe.run(["frames", orbit, "--out-dir", full.path, "--no-disk-cache"])
            #expect(result.status == 0, "\(result.stderr)")
            let names = try FileManager.default.contentsOfDirectory(atPath: full.path).sorted()
            #expect(names == (0..<16).map { String(format: "frame-%04d.pam", $0) })
            #expect(try pamSize(full.appendingPathComponent("frame-0015.pam")) == [96, 96])
            let small = directory.appendingPathComponent("small")
            #expect(try await Imgpipe.run(["frames", orbit, "--out-dir", small.path, "--size", "48", "--format", "png",
                                           "--no-disk-cache"]).status == 0)
            #expect(try FileManager.default.contentsOfDirectory(atPath: small.path).filter { $0.hasSuffix(".png") }.count == 16)
            let thumb = directory.appendingPathComponent("thumb.pam")
            #expect(try await Imgpipe.run(["thumb", orbit, "--size", "32", "--out", thumb.path, "--no-disk-cache"]).status == 0)
            #expect(try pamSize(thumb) == [32, 32])
            let still = try await Imgpipe.run(["frames", Imgpipe.samples.appendingPathComponent("rings.png").path,
                                               "--out-dir", directory.appendingPathComponent("png").path, "--no-disk-cache"])
            #expect(still.status == 1 && still.stderr.contains("still pictures only"), "\(still.stderr)")
        }
    }

    @Test func thumbFitsOrFillsAndDecodeIsUpright() async throws {
        try await withTemporaryDirectory(prefix: "imgpipe-tests") { (directory: URL) async throws in
            let mandelbrot = Imgpipe.samples.appendingPathComponent("mandelbrot.jpg").path
            let fit = directory.appendingPathComponent("fit.pam")
            #expect(try await Imgpipe.run(["thumb", mandelbrot, "--size", "64", "--out", fit.path]).status == 0)
            #expect(try pamSize(fit) == [64, 43])
            let fill = directory.appendingPathComponent("fill.pam")
            #expect(try await Imgpipe.run(["thumb", "file://" + mandelbrot, "--fill", "50x70", "--out", fill.path]).status == 0)
            #expect(try pamSize(fill) == [50, 70])
            let full = directory.appendingPathComponent("balloon.pam")
            let balloon = Imgpipe.samples.appendingPathComponent("balloon-exif6.jpg").path
            #expect(try await Imgpipe.run(["decode", balloon, "--out", full.path, "--no-disk-cache"]).status == 0)
            #expect(try pamSize(full) == [320, 480])
            let png = directory.appendingPathComponent("thumb.png")
            #expect(try await Imgpipe.run(["thumb", balloon, "--size", "32", "--out", png.path]).status == 0)
            #expect(try Data(contentsOf: png).starts(with: [0x89, 0x50, 0x4E, 0x47]))
        }
    }

    /// vipsthumbnail's and ImageMagick's forms: `-s N`, `-sN`, `-s WxH` (fit inside the box),
    /// `-s Wx` and `-s xH` (one side bounded), `-o FILE`, `convert IN OUT`, `--version`.
    @Test func theFormsVipsthumbnailAndImageMagickUsersType() async throws {
        try await withTemporaryDirectory(prefix: "imgpipe-tests") { (directory: URL) async throws in
            let mandelbrot = Imgpipe.samples.appendingPathComponent("mandelbrot.jpg").path  // 480×320
            for (size, expected) in [("64", [64, 43]), ("100x20", [30, 20]), ("x30", [45, 30]), ("50x", [50, 33])] {
                let out = directory.appendingPathComponent("s\(size).pam")
                let result = try await Imgpipe.run(["thumb", mandelbrot, "-s", size, "-o", out.path, "--no-disk-cache"])
                #expect(result.status == 0, "\(result.stderr)")
                #expect(try pamSize(out) == expected, "-s \(size)")
            }
            let attached = directory.appendingPathComponent("attached.pam")
            #expect(try await Imgpipe.run(["thumb", mandelbrot, "-s48", "-o", attached.path, "--no-disk-cache"]).status == 0)
            #expect(try pamSize(attached) == [48, 32])
            let converted = directory.appendingPathComponent("glass.png")
            let glass = Imgpipe.samples.appendingPathComponent("glass-alpha.png").path
            #expect(try await Imgpipe.run(["convert", glass, converted.path, "--no-disk-cache"]).status == 0)
            #expect(try Data(contentsOf: converted).starts(with: [0x89, 0x50, 0x4E, 0x47]))
            // Transparent pixels (the corner's alpha is 0) flattened onto the chosen colour: black
            // by default, as vips's jpegsave; within 2 levels of it (JPEG's loss on a flat area).
            for (background, expected) in [(nil, 0), ("white", 255), ("#fff", 255), ("255,255,255", 255)] as [(String?, Int)] {
                let jpeg = directory.appendingPathComponent("flat-\(background ?? "default").jpg")
                let result = try await Imgpipe.run(["convert", glass, jpeg.path, "--no-disk-cache"] + (background.map { ["--background", $0] } ?? []))
                #expect(result.status == 0, "\(result.stderr)")
                let pam = directory.appendingPathComponent("flat.pam")
                #expect(try await Imgpipe.run(["decode", jpeg.path, "-o", pam.path, "--no-disk-cache"]).status == 0)
                let corner = try pamPixels(pam).prefix(3).map(Int.init)
                #expect(corner.allSatisfy { abs($0 - expected) <= 2 }, "--background \(background ?? "(none)"): corner \(corner)")
            }
            let version = try await Imgpipe.run(["--version"])
            #expect(version.status == 0 && version.stdout.hasPrefix("imgpipe "), "\(version.stdout)")
        }
    }

    /// Links, FIFOs and other entries that are not regular files are never opened (a FIFO would
    /// block the batch) but named in a note; a subfolder is not a source and not named.
    @Test func aFolderNamesTheEntriesItDoesNotOpen() async throws {
        try await withTemporaryDirectory(prefix: "imgpipe-tests") { (directory: URL) async throws in
            let input = directory.appendingPathComponent("in")
            try FileManager.default.createDirectory(at: input.appendingPathComponent("sub"), withIntermediateDirectories: true)
            let picture = input.appendingPathComponent("mandelbrot.jpg")
            try FileManager.default.copyItem(at: Imgpipe.samples.appendingPathComponent("mandelbrot.jpg"), to: picture)
            try FileManager.default.createSymbolicLink(atPath: input.appendingPathComponent("link.jpg").path, withDestinationPath: picture.path)
            try #require(mkfifo(input.appendingPathComponent("pipe.jpg").path, 0o600) == 0)
            let out = directory.appendingPathComponent("out")
            let run = try await Imgpipe.run(["thumb", input.path, "-s", "32", "--out-dir", out.path, "--no-disk-cache"])
            #expect(run.status == 0, "\(run.stderr)")
            #expect(run.stderr.contains("skipped 2 entries that are not regular files: links, FIFOs, sockets or devices (link.jpg, pipe.jpg)"),
                    "\(run.stderr)")
            #expect(!run.stderr.contains("sub"), "\(run.stderr)")
            #expect(try FileManager.default.contentsOfDirectory(atPath: out.path).sorted() == ["mandelbrot.png"])
        }
    }

    /// A folder as SOURCE is its picture files (by their first bytes), the others skipped with
    /// one note naming the folder and them; `-o tn_%s.jpg` writes each thumbnail beside its
    /// source, `-o out/%s.png` into that folder, as vipsthumbnail does.
    @Test func aFolderOfSourcesAndAnOutputPattern() async throws {
        try await withTemporaryDirectory(prefix: "imgpipe-tests") { (directory: URL) async throws in
            let input = directory.appendingPathComponent("in")
            try FileManager.default.createDirectory(at: input, withIntermediateDirectories: true)
            for name in ["mandelbrot.jpg", "glass-alpha.png"] {
                try FileManager.default.copyItem(at: Imgpipe.samples.appendingPathComponent(name), to: input.appendingPathComponent(name))
            }
            try Data("not a picture".utf8).write(to: input.appendingPathComponent("notes.txt"))
            try Data([0xFF, 0xD8, 0xFF]).write(to: input.appendingPathComponent(".hidden.jpg"))

            let beside = try await Imgpipe.run(["thumb", input.path, "-s", "32", "-o", "tn_%s.jpg", "--no-disk-cache"], in: directory)
            #expect(beside.status == 0, "\(beside.stderr)")
            #expect(beside.stderr.contains("imgpipe: note: \(input.path): skipped 1 file(s) that are not pictures (notes.txt)"), "\(beside.stderr)")
            for stem in ["mandelbrot", "glass-alpha"] {
                let thumb = input.appendingPathComponent("tn_\(stem).jpg")
                #expect(try Data(contentsOf: thumb).starts(with: [0xFF, 0xD8, 0xFF]), "\(thumb.path)")
            }

            let into = try await Imgpipe.run(["thumb", input.path, "-s", "24", "-o", "out/%s.pam", "--no-disk-cache"], in: directory)
            #expect(into.status == 0, "\(into.stderr)")
            #expect(try pamSize(directory.appendingPathComponent("out/mandelbrot.pam")) == [24, 16])
            // The first run's thumbnails are pictures too, now in the folder.
            #expect(try pamSize(directory.appendingPathComponent("out/tn_mandelbrot.pam")) == [24, 16])
            let refused = try await Imgpipe.run(["thumb", input.path, "-s", "24", "-o", "x/%s.png", "--format", "jpg"], in: directory)
            #expect(refused.status == 2 && refused.stderr.contains("a --out pattern's extension picks the format"), "\(refused.stderr)")
        }
    }

    @Test func thumbRoundsBlursAndRoundsCorners() async throws {
        try await withTemporaryDirectory(prefix: "imgpipe-tests") { (directory: URL) async throws in
            let mandelbrot = Imgpipe.samples.appendingPathComponent("mandelbrot.jpg").path
            let round = directory.appendingPathComponent("round.pam")
            let result = try await Imgpipe.run(["thumb", mandelbrot, "--fill", "40x40", "--blur", "1.5", "--corner-radius", "4",
                                                "--round", "--out", round.path, "--no-disk-cache"])
            #expect(result.status == 0, "\(result.stderr)")
            #expect(try pamSize(round) == [40, 40])
            let data = [UInt8](try Data(contentsOf: round))
            let start = try #require(data.indices.first { data[$0...].starts(with: Array("ENDHDR\n".utf8)) }) + 7
            #expect(data[start + 3] == 0)                          // corner: outside the circle
            #expect(data[start + (20 * 40 + 20) * 4 + 3] == 255)   // centre
        }
    }

    /// `--sharpen 1` is the unsharpened thumbnail with `.sharpen(sigma: 1)` applied (the
    /// processor that matches `vips sharpen`, SharpenTests); `--sharpen-reductions 3` sharpens
    /// a 480-pixel photo made 120 wide (4×) the same way and leaves one made 240 wide (2×) alone.
    @Test func thumbSharpensAlwaysOrAfterLargeReductions() async throws {
        try await withTemporaryDirectory(prefix: "imgpipe-tests") { (directory: URL) async throws in
            let dunes = Imgpipe.samples.appendingPathComponent("dunes-progressive.jpg").path
            func thumb(_ size: Int, _ extra: [String]) async throws -> [UInt8] {
                let out = directory.appendingPathComponent("t\(size)\(extra.joined()).pam")
                let result = try await Imgpipe.run(["thumb", dunes, "--size", "\(size)", "--out", out.path, "--no-disk-cache"] + extra)
                #expect(result.status == 0, "\(result.stderr)")
                return try pamPixels(out)
            }
            let plain = try await thumb(120, [])
            let expected = try ImageProcessor.sharpen(sigma: 1)
                .process(try #require(Bitmap(width: 120, height: 80, bytesPerRow: 480, pixelFormat: .rgba8Straight, bytes: plain)))
            #expect(expected.unpremultipliedBytes() != plain)
            #expect(try await thumb(120, ["--sharpen", "1"]) == expected.unpremultipliedBytes())
            #expect(try await thumb(120, ["--sharpen", "1", "--sharpen-reductions", "3"]) == expected.unpremultipliedBytes())
            #expect(try await thumb(240, ["--sharpen", "1", "--sharpen-reductions", "3"]) == (try await thumb(240, [])))
        }
    }

    @Test func badInputExitsOneWithATypedMessageAndNeverASignal() async throws {
        try await withTemporaryDirectory(prefix: "imgpipe-tests") { (directory: URL) async throws in
            let original = try Data(contentsOf: Imgpipe.samples.appendingPathComponent("dunes-progressive.jpg"))
            var cases: [(String, Data, String)] = [
                ("gif.gif", Data("GIF89a".utf8) + Data(count: 40), "corrupt GIF data: the header gives a size of 0×0"),
                ("noise.jpg", Data((0..<500).map { UInt8(truncatingIfNeeded: $0 &* 37) }), "not in any image format"),
                ("empty.png", Data(), "not in any image format"),
            ]
            for cut in [3, 40, 300, original.count / 2] {
                cases.append(("cut\(cut).jpg", original.prefix(cut), "JPEG"))
            }
            for (name, data, message) in cases {
                let path = directory.appendingPathComponent(name)
                try data.write(to: path)
                let result = try await Imgpipe.run(["thumb", path.path, "--size", "50", "--out", directory.appendingPathComponent("o.png").path])
                #expect(!result.terminatedBySignal, "\(name)")
                // A truncated JPEG may still decode partially (with a warning); anything else fails.
                #expect(result.status == 1 || (name.hasPrefix("cut") && result.status == 0), "\(name): \(result.stderr)")
                if result.status == 1 {
                    #expect(result.stderr.hasPrefix("imgpipe: ") && result.stderr.contains(message), "\(name): \(result.stderr)")
                } else {
                    // Every warning names its file.
                    for line in result.stderr.split(separator: "\n") where line.hasPrefix("imgpipe: warning: ") {
                        #expect(line.hasPrefix("imgpipe: warning: \(path.path): "), "\(line)")
                    }
                }
            }
            let missing = try await Imgpipe.run(["info", "/no/such/file.png"])
            #expect(missing.status == 1 && missing.stderr == "imgpipe: /no/such/file.png was not found\n", "\(missing.stderr)")
        }
    }

    @Test func sheetRendersTheBundledSamplesByDefault() async throws {
        try await withTemporaryDirectory(prefix: "imgpipe-tests") { (directory: URL) async throws in
            let out = directory.appendingPathComponent("sheet.png")
            let result = try await Imgpipe.run(["sheet", "--size", "64", "--columns", "3", "--out", out.path, "--no-disk-cache"])
            #expect(result.status == 0, "\(result.stderr)")
            #expect(result.stdout.hasPrefix("wrote \(out.path) ("))
            #expect(result.stdout.contains("10 pictures"))
            #expect(result.stderr.contains("10 pictures in"))  // the plain summary (stderr is not a terminal)
            let info = try await Imgpipe.run(["info", out.path])
            #expect(info.stdout.contains("PNG"))
        }
    }

    @Test func fetchGoesToTheNetworkOnceThenTheDiskCache() async throws {
        try await withTemporaryDirectory(prefix: "imgpipe-tests") { (directory: URL) async throws in
            let server = try StaticServer(directory: Imgpipe.samples)
            defer { server.stop() }
            let cache = directory.appendingPathComponent("cache").path
            let urls = [server.url("mandelbrot.jpg"), server.url("glass-alpha.png")]
            let first = try await Imgpipe.run(["fetch"] + urls + ["--cache-dir", cache])
            #expect(first.status == 0, "\(first.stderr)")
            #expect(first.stdout.split(separator: "\n").allSatisfy { $0.contains("  network  ") })
            #expect(first.stderr.contains("2 loaded"))
            // The server sends only Last-Modified (the file's mtime): the copy is fresh for a
            // tenth of the file's age, or stale, served from disk at once and revalidated (a 304
            // from If-Modified-Since) before imgpipe exits (ImgpipeFreshnessTests tells them apart).
            let second = try await Imgpipe.run(["fetch"] + urls + ["--cache-dir", cache])
            #expect(second.status == 0, "\(second.stderr)")
            #expect(second.stdout.split(separator: "\n").allSatisfy { $0.contains("  disk  ") }, "\(second.stdout)")
            let missing = try await Imgpipe.run(["fetch", server.url("nope.jpg"), "--cache-dir", cache])
            #expect(missing.status == 1 && missing.stderr.hasSuffix("nope.jpg was not found (HTTP 404)\n"), "\(missing.stderr)")
        }
    }

    /// Regression: `--concurrency` is an upper bound, but the loader looped that many times to
    /// start tasks, so a huge value (valid as a positive whole number) hung sheet and fetch.
    @Test(arguments: ["sheet", "fetch"])
    func hugeConcurrencyDoesNotHang(command: String) async throws {
        try await withTemporaryDirectory(prefix: "imgpipe-tests") { (directory: URL) async throws in
            let source = Imgpipe.samples.appendingPathComponent("rings.png").path
            let out = command == "sheet" ? ["--out", directory.appendingPathComponent("s.png").path] : []
            let result = try await Imgpipe.run([command, source, "--concurrency", "9223372036854775807", "--no-disk-cache"] + out,
                                         timeout: 20)
            #expect(!result.terminatedBySignal)
            #expect(result.status == 0, "\(result.stderr)")
        }
    }

    /// Regression: the sheet's own bitmap had no size limit: hundreds of sources at a large
    /// `--size` asked for tens of gigabytes and the process died. It is held to `--max-pixels`
    /// before anything loads, as a usage error.
    @Test func sheetLargerThanMaxPixelsIsRefusedBeforeLoading() async throws {
        try await withTemporaryDirectory(prefix: "imgpipe-tests") { (directory: URL) async throws in
            let source = Imgpipe.samples.appendingPathComponent("rings.png").path
            let out = directory.appendingPathComponent("s.png")
            let result = try await Imgpipe.run(["sheet", source, source, source, "--size", "200", "--max-pixels", "100000",
                                          "--no-disk-cache", "--out", out.path], timeout: 60)
            #expect(result.status == 2, "\(result.stderr)")
            #expect(result.stderr.hasPrefix("imgpipe: ") && result.stderr.contains("--max-pixels"), "\(result.stderr)")
            #expect(!FileManager.default.fileExists(atPath: out.path))
            // Within the limit it is drawn as before.
            let fits = try await Imgpipe.run(["sheet", source, source, source, "--size", "64", "--max-pixels", "100000",
                                        "--no-disk-cache", "--out", out.path], timeout: 60)
            #expect(fits.status == 0, "\(fits.stderr)")
        }
    }

    /// Regression: the budget in bytes was `N << 20`, which wraps for N ≥ 2^43: a huge (valid)
    /// `--memory-cache-mb` gave a zero or negative budget, i.e. no memory cache at all.
    @Test(arguments: ["256", "8796093022208", "9223372036854775807"])
    func hugeMemoryCacheBudgetStillCaches(megabytes: String) async throws {
        let source = Imgpipe.samples.appendingPathComponent("rings.png").path
        let result = try await Imgpipe.run(["fetch", source, source, "--concurrency", "1", "--memory-cache-mb", megabytes], timeout: 60)
        #expect(result.status == 0, "\(result.stderr)")
        let lines = result.stdout.split(separator: "\n")
        #expect(lines.count == 2 && lines[1].contains("  memory  "), "\(result.stdout)")
    }
}

/// The stderr contract on damaged files of every format: exactly one line, `imgpipe: FILE: …`,
/// and nothing a C library printed (dav1d's "Unknown OBU type", libde265's "SPS error", a
/// blank line after libheif's messages that end in "\n").
@Suite("imgpipe stderr contract", .timeLimit(.minutes(2)))
struct ImgpipeStandardErrorTests {
    static let corpus = Imgpipe.root.appendingPathComponent("../shared/corpus").standardizedFileURL

    static func corpusData(_ folder: String, _ file: String) throws -> Data {
        try Data(contentsOf: corpus.appendingPathComponent(folder).appendingPathComponent(file))
    }

    /// (file name, damaged bytes, text the message must contain).
    static func damagedFiles() throws -> [(String, Data, String)] {
        var avif = try corpusData("heif", "example.avif")
        let mdat = try #require(avif.firstRange(of: Data("mdat".utf8)))
        avif.replaceSubrange(mdat.upperBound..<mdat.upperBound + 16, with: Data(count: 16))  // an OBU of type 0
        var sps = try corpusData("heif", "rainbow-451x461.heic")
        sps[313] ^= 0x10  // libde265: "SPS error: CB alignment"
        let heic = try corpusData("heif", "rainbow-451x461.heic")
        var jpeg = try corpusData("jpeg", "testorig.jpg")
        let sof = try #require(jpeg.firstRange(of: Data([0xFF, 0xC0])))
        jpeg[sof.lowerBound + 4] = 13  // sample precision 13
        let webp = try corpusData("webp", "lossy_alpha1.webp")
        return [
            ("zero-obu.avif", avif, "dav1d: Unknown OBU type 0"),
            ("bad-sps.heic", sps, "libheif failed decoding"),
            ("cut-iloc.heic", heic.prefix(heic.count / 2), "libheif failed reading the file"),
            ("precision.jpg", jpeg, "JPEG"),
            ("crc.png", try corpusData("png-suite/png", "xcsn0g01.png"), "PNG"),
            ("cut.webp", webp.prefix(webp.count / 2), "libwebp"),
        ]
    }

    @Test(.enabled(if: FileManager.default.fileExists(atPath: corpus.appendingPathComponent("heif").path),
                   "../shared/corpus is absent: skipped"))
    func damagedFilesGiveExactlyOneLineNamingTheFile() async throws {
        try await withTemporaryDirectory(prefix: "imgpipe-tests") { (directory: URL) async throws in
            for (name, data, message) in try Self.damagedFiles() {
                let path = directory.appendingPathComponent(name)
                try data.write(to: path)
                let result = try await Imgpipe.run(["decode", path.path, "--out", directory.appendingPathComponent("o.pam").path])
                #expect(result.status == 1, "\(name): \(result.stderr)")
                #expect(result.stderr.hasPrefix("imgpipe: cannot decode \(path.path): ") && result.stderr.contains(message),
                        "\(name): \(result.stderr)")
                #expect(result.stderr.hasSuffix("\n") && result.stderr.filter { $0 == "\n" }.count == 1,
                        "\(name): not exactly one line: \(result.stderr.debugDescription)")
                #expect(result.stdout.isEmpty, "\(name): \(result.stdout)")
            }
        }
    }
}

/// Writing a full-size decode costs about one bitmap, not several copies of it.
@Suite("imgpipe output memory", .timeLimit(.minutes(2)))
struct ImgpipeOutputMemoryTests {
    /// An animated WebP made by hand: a 2×2 lossless frame on a transparent `canvas`, which a
    /// full decode turns into a canvas-sized bitmap (and a `.pam` of the same size).
    static func animation(canvas: Int) -> Data {
        func le(_ value: Int, _ count: Int) -> [UInt8] { (0..<count).map { UInt8(truncatingIfNeeded: value >> (8 * $0)) } }
        func chunk(_ fourCC: String, _ payload: [UInt8]) -> [UInt8] {
            Array(fourCC.utf8) + le(payload.count, 4) + payload + (payload.count % 2 == 1 ? [0] : [])
        }
        // A 2×2 VP8L bitstream (`cwebp -lossless` of a 2×2 opaque red PNG).
        let vp8l: [UInt8] = [0x2F, 0x01, 0x40, 0x00, 0x00, 0x07, 0x10, 0xFD, 0x8F, 0xFE, 0x07, 0x22, 0xA2, 0xFF, 0x01]
        let frame = le(0, 3) + le(0, 3) + le(1, 3) + le(1, 3) + le(100, 3) + [0] + chunk("VP8L", vp8l)
        let body = Array("WEBP".utf8) + chunk("VP8X", [0x02 | 0x10, 0, 0, 0] + le(canvas - 1, 3) + le(canvas - 1, 3))
            + chunk("ANIM", [0, 0, 0, 0, 0, 0]) + chunk("ANMF", frame)
        return Data(Array("RIFF".utf8) + le(body.count, 4) + body)
    }

    /// A 4000×4000 decode (a 64 MB bitmap) written as PAM raised the peak by about four
    /// bitmaps (straight copy, `Data`, header + body); streamed, it is about one.
    @Test func aFullDecodeWrittenAsPAMCostsAboutOneBitmap() async throws {
        try await withTemporaryDirectory(prefix: "imgpipe-tests") { (directory: URL) async throws in
            let small = directory.appendingPathComponent("small.webp"), large = directory.appendingPathComponent("large.webp")
            try Self.animation(canvas: 16).write(to: small)
            try Self.animation(canvas: 4000).write(to: large)
            let out = directory.appendingPathComponent("out.pam")
            let base = try await Imgpipe.peakMemory(["decode", small.path, "--out", out.path])
            #expect(base.status == 0)
            let full = try await Imgpipe.peakMemory(["decode", large.path, "--out", out.path])
            #expect(full.status == 0)
            let bitmap = 4000 * 4000 * 4
            #expect(try FileManager.default.attributesOfItem(atPath: out.path)[.size] as? Int
                    == "P7\nWIDTH 4000\nHEIGHT 4000\nDEPTH 4\nMAXVAL 255\nTUPLTYPE RGB_ALPHA\nENDHDR\n".utf8.count + bitmap)
            #expect(full.peak - base.peak < bitmap * 3 / 2,
                    "writing a \(bitmap)-byte bitmap as PAM raised the peak by \(full.peak - base.peak) bytes")
            let header = String(decoding: try Data(contentsOf: out).prefix(80), as: UTF8.self)
            #expect(header.hasPrefix("P7\nWIDTH 4000\nHEIGHT 4000\n"))
        }
    }
}
