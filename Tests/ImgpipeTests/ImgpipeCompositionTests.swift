import Foundation
import PipelineTestSupport
import Testing

/// Debian's python with Pillow and numpy (`python3-pil`, `python3-numpy`), the overlay's reference.
let pillowPython = "/usr/bin/python3"
let hasPillow = ExternalTool.exists(pillowPython)
    && ((try? ExternalTool.runBlocking(pillowPython, ["-c", "import PIL, numpy"]).status) == 0)
/// `vips` (`libvips-tools`), the trim's reference.
let vipsTool = "/usr/bin/vips"
/// ImageMagick's `convert`, which makes the bordered pictures the trim tests start from.
let magickConvert = ["/usr/bin/convert", "/usr/local/bin/convert"].first(where: ExternalTool.exists)

/// `imgpipe thumb --overlay` against Pillow's `Image.alpha_composite` of the same two pictures
/// (Pillow 9.4), and `--trim` against libvips 8.14's `find_trim` on bordered photographs.
@Suite("imgpipe thumb overlay, pad and trim against Pillow and vips", .serialized, .timeLimit(.minutes(5)), .tags(.cpuBound))
struct ImgpipeCompositionTests {
    /// Pillow's composite of `overlay` over `base` at the documented placement, compared with
    /// `ours`: the largest channel difference and the mean, straight, or premultiplied by each
    /// pixel's alpha when `premultiplied` (the representation the pipeline composites a
    /// translucent base in: a colour under alpha a keeps a + 1 levels there).
    static func pillowDifference(base: URL, overlay: URL, ours: URL, gravity: (Double, Double), offset: (Int, Int),
                                 opacity: Double, premultiplied: Bool) async throws -> (max: Int, mean: Double) {
        let script = """
            import math, sys, numpy as np
            from PIL import Image
            base = Image.open(sys.argv[1]).convert("RGBA")
            top = Image.open(sys.argv[2]).convert("RGBA")
            fx, fy, ox, oy, opacity = float(sys.argv[4]), float(sys.argv[5]), int(sys.argv[6]), int(sys.argv[7]), float(sys.argv[8])
            t = np.array(top).astype(np.float64)
            t[..., 3] = np.round(t[..., 3] * opacity)
            top = Image.fromarray(t.astype(np.uint8), "RGBA")
            def place(f, b, s, inset):
                at = int(math.floor(f * (b - s) + 0.5))  # halves away from zero, as Swift's rounded()
                return at - inset if f > 0.5 else at + inset
            x, y = place(fx, base.width, top.width, ox), place(fy, base.height, top.height, oy)
            layer = Image.new("RGBA", base.size, (0, 0, 0, 0))
            layer.paste(top, (x, y))
            reference = np.array(Image.alpha_composite(base, layer)).astype(np.float64)
            ours = np.array(Image.open(sys.argv[3]).convert("RGBA")).astype(np.float64)
            if sys.argv[9] == "1":
                for a in (reference, ours):
                    a[..., :3] = np.round(a[..., :3] * a[..., 3:4] / 255)
            d = np.abs(reference - ours)
            print(int(d.max()), d.mean())
            """
        let result = try await ExternalTool.run(pillowPython, ["-c", script, base.path, overlay.path, ours.path,
                                                         "\(gravity.0)", "\(gravity.1)", "\(offset.0)", "\(offset.1)", "\(opacity)",
                                                         premultiplied ? "1" : "0"])
        try #require(result.status == 0, "Pillow: \(result.stderr)")
        let fields = result.stdout.split(separator: " ").map { String($0).trimmingCharacters(in: .whitespacesAndNewlines) }
        return (Int(fields[0]) ?? 255, Double(fields[1]) ?? 255)
    }

    /// An opaque photograph under a translucent one (glass-alpha.png made 160 px wide, straight
    /// alpha from 0 to 255) at three placements and opacities: within one level of Pillow on
    /// every channel of every pixel (the two round differently: Pillow in 7-bit fixed point).
    @Test(.enabled(if: hasPillow, "Debian's python3 with python3-pil and python3-numpy is absent: skipped"),
          arguments: [("southeast", (1.0, 1.0), (12, 8), 1.0), ("centre", (0.5, 0.5), (0, 0), 0.6),
                      ("northwest", (0.0, 0.0), (30, 5), 0.35)])
    func overlayMatchesPillowAlphaComposite(_ gravity: String, _ point: (Double, Double), _ offset: (Int, Int), _ opacity: Double) async throws {
        try await withTemporaryDirectory(prefix: "imgpipe-overlay") { (directory: URL) async throws in
            let logo = directory.appendingPathComponent("logo.png"), ours = directory.appendingPathComponent("ours.png")
            let made = try await Imgpipe.run(["thumb", Imgpipe.samples.appendingPathComponent("glass-alpha.png").path, "-s", "160", "-o", logo.path])
            try #require(made.status == 0, "\(made.stderr)")
            let base = Imgpipe.samples.appendingPathComponent("aurora.png")
            let result = try await Imgpipe.run(["thumb", base.path, "-s", "480", "--overlay", logo.path, "--overlay-gravity", gravity,
                                                "--overlay-offset", "\(offset.0),\(offset.1)", "--overlay-opacity", "\(opacity)", "-o", ours.path])
            try #require(result.status == 0, "\(result.stderr)")
            let difference = try await Self.pillowDifference(base: base, overlay: logo, ours: ours, gravity: point, offset: offset,
                                                       opacity: opacity, premultiplied: false)
            #expect(difference.max <= 1, "\(gravity): largest difference \(difference.max), mean \(difference.mean)")
        }
    }

    /// A translucent base (glass-alpha.png under rings.png's thumbnail): the pipeline composites
    /// in premultiplied pixels, so it is compared premultiplied, where it is within a level.
    @Test(.enabled(if: hasPillow, "Debian's python3 with python3-pil and python3-numpy is absent: skipped"))
    func overlayOnATranslucentPictureMatchesPillowPremultiplied() async throws {
        try await withTemporaryDirectory(prefix: "imgpipe-overlay") { (directory: URL) async throws in
            let logo = directory.appendingPathComponent("logo.png"), ours = directory.appendingPathComponent("ours.png")
            let made = try await Imgpipe.run(["thumb", Imgpipe.samples.appendingPathComponent("rings.png").path, "-s", "200", "-o", logo.path])
            try #require(made.status == 0, "\(made.stderr)")
            let base = Imgpipe.samples.appendingPathComponent("glass-alpha.png")
            let result = try await Imgpipe.run(["thumb", base.path, "-s", "480", "--overlay", logo.path, "--overlay-gravity", "centre",
                                                "--overlay-opacity", "0.7", "-o", ours.path])
            try #require(result.status == 0, "\(result.stderr)")
            let difference = try await Self.pillowDifference(base: base, overlay: logo, ours: ours, gravity: (0.5, 0.5), offset: (0, 0),
                                                       opacity: 0.7, premultiplied: true)
            #expect(difference.max <= 1, "largest difference \(difference.max), mean \(difference.mean)")
        }
    }

    @Test func padMakesTheExactBoxAndBackgroundColoursIt() async throws {
        try await withTemporaryDirectory(prefix: "imgpipe-pad") { (directory: URL) async throws in
            let out = directory.appendingPathComponent("pad.pam")
            let source = Imgpipe.samples.appendingPathComponent("mandelbrot.jpg").path  // 480 × 320
            let result = try await Imgpipe.run(["thumb", source, "-s", "200x200", "--pad", "--background", "#336699", "-o", out.path])
            try #require(result.status == 0, "\(result.stderr)")
            #expect(try pamSize(out) == [200, 200])
            let pixels = try pamPixels(out)
            #expect(Array(pixels[0..<4]) == [0x33, 0x66, 0x99, 255], "the band above the 200 × 133 picture")
            let middle = (100 * 200 + 100) * 4
            #expect(Array(pixels[middle..<(middle + 4)]) != [0x33, 0x66, 0x99, 255], "the picture in the middle")
            for wrong in [["--pad", "--fill", "200x200"], ["--pad", "-s", "200x"], ["--trim-threshold", "5"],
                          ["--overlay-size", "0.5"], ["--background", "red"]] {
                let refused = try await Imgpipe.run(["thumb", source, "-s", "200"] + wrong + ["-o", out.path])
                #expect(refused.status == 2, "\(wrong): \(refused.stderr)")
            }
            // A box too large to pad to says so (it said "--pad needs --size WxH" before).
            for box in ["1x100000000", "20000x20000", "16777216x1"] {
                let refused = try await Imgpipe.run(["thumb", source, "-s", box, "--pad", "-o", out.path])
                #expect(refused.status == 2 && refused.stderr.contains("--pad's box") && refused.stderr.contains("is too large"),
                        "\(box): \(refused.stderr)")
            }
        }
    }

    @Test func flattenLeavesNoTransparency() async throws {
        try await withTemporaryDirectory(prefix: "imgpipe-flatten") { (directory: URL) async throws in
            let out = directory.appendingPathComponent("flat.pam")
            let result = try await Imgpipe.run(["thumb", Imgpipe.samples.appendingPathComponent("glass-alpha.png").path, "-s", "120",
                                                "--flatten", "--background", "red", "-o", out.path])
            try #require(result.status == 0, "\(result.stderr)")
            let pixels = try pamPixels(out)
            #expect(stride(from: 3, to: pixels.count, by: 4).allSatisfy { pixels[$0] == 255 })
            #expect(Array(pixels[0..<4]) == [255, 0, 0, 255], "the transparent corner is the background")
        }
    }

    @Test func aMissingOverlayFailsNamingIt() async throws {
        try await withTemporaryDirectory(prefix: "imgpipe-overlay") { (directory: URL) async throws in
            let out = directory.appendingPathComponent("x.png")
            let result = try await Imgpipe.run(["thumb", Imgpipe.samples.appendingPathComponent("aurora.png").path, "-s", "100",
                                                "--overlay", directory.appendingPathComponent("nothere.png").path, "-o", out.path])
            #expect(result.status == 1)
            #expect(result.stderr.contains("--overlay") && result.stderr.contains("nothere.png"), "\(result.stderr)")
            #expect(!FileManager.default.fileExists(atPath: out.path))
        }
    }

    /// Bordered versions of the bundled photographs (ImageMagick's `-border` and `-splice`: even,
    /// uneven, one-sided, transparent, a lossy JPEG border), and a drawing with a one-pixel speck
    /// in its border that the median must ignore. `imgpipe thumb --trim` at full size must give
    /// exactly libvips's `find_trim` box (against the top-left pixel's colour, as ours takes it).
    @Test(.enabled(if: ExternalTool.exists(vipsTool) && magickConvert != nil, "vips (libvips-tools) or ImageMagick is absent: skipped"),
          arguments: [
            ("mandelbrot.jpg", ["-bordercolor", "white", "-border", "20x10"], "jpg"),
            ("aurora.png", ["-bordercolor", "#202020", "-border", "17x5"], "png"),
            ("moon-gray.jpg", ["-background", "black", "-gravity", "southeast", "-splice", "30x12"], "png"),
            ("dunes-progressive.jpg", ["-bordercolor", "#c03030", "-border", "3"], "jpg"),
            ("glass-alpha.png", ["-bordercolor", "none", "-border", "15"], "png"),
            ("rings.png", ["-background", "#ffffff", "-gravity", "northwest", "-splice", "9x40"], "png"),
            ("sunflower-arithmetic.jpg", ["-bordercolor", "#10ff10", "-border", "25x1"], "png"),
            ("", ["-size", "200x120", "xc:white", "-fill", "black", "-draw", "rectangle 50,30 90,80",
                  "-fill", "gray", "-draw", "point 150,100"], "png"),
            // The smallest subject the median keeps, and one that touches two edges.
            ("", ["-size", "200x120", "xc:white", "-fill", "black", "-draw", "rectangle 100,50 102,52"], "png"),
            ("", ["-size", "200x120", "xc:white", "-fill", "#306090", "-draw", "rectangle 150,70 199,119"], "png"),
          ])
    func trimFindsLibvipsBox(_ sample: String, _ border: [String], _ format: String) async throws {
        try await withTemporaryDirectory(prefix: "imgpipe-trim") { (directory: URL) async throws in
            let bordered = directory.appendingPathComponent("bordered.\(format)")
            let input = sample.isEmpty ? [] : [Imgpipe.samples.appendingPathComponent(sample).path]
            let made = try await ExternalTool.run(magickConvert ?? "", input + border + [bordered.path])
            try #require(made.status == 0, "\(made.stderr)")
            let full = directory.appendingPathComponent("full.pam"), trimmed = directory.appendingPathComponent("trimmed.pam")
            let decoded = try await Imgpipe.run(["decode", bordered.path, "--out", full.path])
            try #require(decoded.status == 0, "\(decoded.stderr)")
            let size = try pamSize(full), pixels = try pamPixels(full)
            let background = "\(pixels[0]) \(pixels[1]) \(pixels[2])"
            let vips = try await ExternalTool.run(vipsTool, ["find_trim", bordered.path, "--background", background])
            try #require(vips.status == 0, "\(vips.stderr)")
            let box = vips.stdout.split(whereSeparator: \.isNewline).compactMap { Int($0) }
            try #require(box.count == 4, "vips find_trim: \(vips.stdout)")
            let result = try await Imgpipe.run(["thumb", bordered.path, "--trim", "-s", "100000", "-o", trimmed.path])
            try #require(result.status == 0, "\(result.stderr)")
            #expect(try pamSize(trimmed) == [box[2], box[3]], "\(sample) \(border): vips keeps \(box)")
            // The same pixels as the full decode inside vips's box: the same place, not only the same size.
            let out = try pamPixels(trimmed)
            guard out.count == box[2] * box[3] * 4 else { return }
            var same = true
            for y in 0..<box[3] where same {
                let from = ((box[1] + y) * size[0] + box[0]) * 4
                same = Array(pixels[from..<(from + box[2] * 4)]) == Array(out[(y * box[2] * 4)..<((y + 1) * box[2] * 4)])
            }
            #expect(same, "\(sample): the trimmed pixels are the source's at \(box)")
        }
    }

    /// Pictures libvips finds no subject in (an empty box: a uniform one, one whose only
    /// subject is a pixel or a 2 × 2 speck the median removes) are kept whole.
    @Test(.enabled(if: ExternalTool.exists(vipsTool) && magickConvert != nil, "vips (libvips-tools) or ImageMagick is absent: skipped"),
          arguments: [[], ["-fill", "black", "-draw", "point 100,50"], ["-fill", "black", "-draw", "rectangle 100,50 101,51"]])
    func trimKeepsWhatLibvipsFindsNoSubjectIn(_ draw: [String]) async throws {
        try await withTemporaryDirectory(prefix: "imgpipe-trim") { (directory: URL) async throws in
            let picture = directory.appendingPathComponent("in.png"), out = directory.appendingPathComponent("out.pam")
            let made = try await ExternalTool.run(magickConvert ?? "", ["-size", "200x120", "xc:white"] + draw + [picture.path])
            try #require(made.status == 0, "\(made.stderr)")
            let vips = try await ExternalTool.run(vipsTool, ["find_trim", picture.path, "--background", "255 255 255"])
            let box = vips.stdout.split(whereSeparator: \.isNewline).compactMap { Int($0) }
            #expect(box.count == 4 && box[2] == 0 && box[3] == 0, "vips find_trim: \(vips.stdout)")
            let result = try await Imgpipe.run(["thumb", picture.path, "--trim", "-s", "100000", "-o", out.path])
            try #require(result.status == 0, "\(result.stderr)")
            #expect(try pamSize(out) == [200, 120])
        }
    }

    @Test func trimThenFitReachesTheRequestedSize() async throws {
        guard let magickConvert else { return }
        try await withTemporaryDirectory(prefix: "imgpipe-trim") { (directory: URL) async throws in
            let bordered = directory.appendingPathComponent("bordered.png"), out = directory.appendingPathComponent("out.pam")
            let made = try await ExternalTool.run(magickConvert, [Imgpipe.samples.appendingPathComponent("aurora.png").path,
                                                            "-bordercolor", "white", "-border", "200x100", bordered.path])
            try #require(made.status == 0, "\(made.stderr)")
            let result = try await Imgpipe.run(["thumb", bordered.path, "--trim", "-s", "240", "-o", out.path])
            try #require(result.status == 0, "\(result.stderr)")
            #expect(try pamSize(out) == [240, 160], "the 480 × 320 picture inside its border, fitted in 240")
        }
    }
}
