import Foundation
import PipelineTestSupport
import Testing

/// Issue 41: animation frames asked for straight (`imgpipe frames`, and an animation written
/// without processors) are composited straight, so the colour of pixels of low alpha survives.
/// Frames went through a premultiplied 8-bit canvas and were made straight afterwards: a lossy
/// JPEG XL animation with an alpha vignette was up to 127 levels from `djxl` where alpha < 16,
/// a lossy WebP one up to 243 from libwebp's own compositing.
///
/// Three soft-alpha 48×48 frames (a radial vignette over colour gradients) made by Pillow, as a
/// lossy JPEG XL (`cjxl -d 1` of an APNG), a lossy WebP (`img2webp -lossy`, later frames
/// blended over earlier ones) and a GIF (Pillow's, one-bit alpha), are compared frame by frame,
/// exactly, with the format's reference decoder: `djxl` (libjxl, as ours), Pillow's
/// WebP reader (libwebp's `WebPAnimDecoder` in `MODE_RGBA`, as `anim_dump`), Pillow's GIF reader
/// (lossless palette indices). Colour is compared wherever alpha is not 0. Each tool that is
/// absent skips its format with a message.
@Suite("imgpipe frames of soft-alpha animations", .serialized, .timeLimit(.minutes(3)), .tags(.cpuBound))
struct ImgpipeSoftAlphaFramesTests {
    static let makeFrames = """
        import math, sys
        from PIL import Image
        folder = sys.argv[1]
        frames = []
        for k in range(3):
            im = Image.new('RGBA', (48, 48))
            px = im.load()
            for y in range(48):
                for x in range(48):
                    r = math.hypot(x - 23.5, y - 23.5) / 24
                    a = max(0, min(255, int(255 * (1 - r) * 1.3)))
                    px[x, y] = ((x * 5 + k * 70) % 256, (y * 5 + k * 30) % 256, (x * y + k * 50) % 256, a)
            im.save(f'{folder}/f{k}.png')
            frames.append(im)
        frames[0].save(f'{folder}/soft.apng', format='PNG', save_all=True, append_images=frames[1:], duration=100, loop=0,
                       disposal=1, blend=0)
        frames[0].save(f'{folder}/soft.gif', save_all=True, append_images=frames[1:], duration=100, loop=0)
        """

    /// Pillow's frames of `file` as straight RGBA, colour zeroed where alpha is 0.
    static let dumpFrames = """
        import sys
        from PIL import Image, ImageSequence
        with Image.open(sys.argv[1]) as im:
            for frame in ImageSequence.Iterator(im):
                b = bytearray(frame.convert('RGBA').tobytes())
                for i in range(0, len(b), 4):
                    if b[i + 3] == 0: b[i:i + 3] = bytes(3)
                print(b.hex())
        """

    static func pillowFrames(_ file: URL) async throws -> [[UInt8]] {
        let run = try await ExternalTool.run(pillowPython, ["-c", dumpFrames, file.path])
        try #require(run.status == 0, "Pillow could not read \(file.lastPathComponent): \(run.stderr)")
        return run.stdout.split(separator: "\n").map { line in
            let hex = Array(line.utf8)
            func nibble(_ c: UInt8) -> UInt8 { c >= 97 ? c - 87 : c - 48 }
            return (0..<(hex.count / 2)).map { nibble(hex[2 * $0]) << 4 | nibble(hex[2 * $0 + 1]) }
        }
    }

    /// `imgpipe frames file`'s PAM frames, colour zeroed where alpha is 0.
    static func ourFrames(_ file: URL, in folder: URL) async throws -> [[UInt8]] {
        let out = folder.appendingPathComponent("frames-\(file.lastPathComponent)")
        let run = try await Imgpipe.run(["frames", file.path, "--out-dir", out.path])
        try #require(run.status == 0, "imgpipe frames \(file.lastPathComponent): \(run.stderr)")
        return try FileManager.default.contentsOfDirectory(atPath: out.path).sorted().map { name in
            var pixels = try pamPixels(out.appendingPathComponent(name))
            for i in stride(from: 0, to: pixels.count, by: 4) where pixels[i + 3] == 0 { pixels[i] = 0; pixels[i + 1] = 0; pixels[i + 2] = 0 }
            return pixels
        }
    }

    /// Frames equal, and the comparison meaningful: some pixels have alpha between 1 and 15.
    static func expectSame(_ ours: [[UInt8]], _ reference: [[UInt8]], _ label: String, softAlpha: Bool = true) {
        #expect(ours.count == 3 && ours.count == reference.count, "\(label): \(ours.count) frames, the reference \(reference.count)")
        for (index, (a, b)) in zip(ours, reference).enumerated() {
            let worst = zip(a, b).map { abs(Int($0) - Int($1)) }.max() ?? -1
            #expect(a == b, "\(label): frame \(index) differs from the reference by up to \(worst) levels")
            if softAlpha { #expect(stride(from: 3, to: b.count, by: 4).contains { b[$0] > 0 && b[$0] < 16 }, "\(label): no soft alpha") }
        }
    }

    @Test(.enabled(if: hasPillow, "Debian's python3 with python3-pil is absent: skipped"))
    func straightFramesAreTheReferenceDecodersFrames() async throws {
        try await withTemporaryDirectory(prefix: "imgpipe-soft-alpha") { (folder: URL) async throws in
            let made = try await ExternalTool.run(pillowPython, ["-c", Self.makeFrames, folder.path])
            try #require(made.status == 0, "Pillow: \(made.stderr)")
            let file = { (name: String) in folder.appendingPathComponent(name) }

            // GIF: one-bit alpha, so straight and premultiplied agree; the reference is exact.
            Self.expectSame(try await Self.ourFrames(file("soft.gif"), in: folder), try await Self.pillowFrames(file("soft.gif")), "GIF",
                            softAlpha: false)

            if ExternalTool.exists("/usr/bin/cjxl"), ExternalTool.exists("/usr/bin/djxl") {
                let encoded = try await ExternalTool.run("/usr/bin/cjxl", [file("soft.apng").path, file("soft.jxl").path, "-d", "1"])
                try #require(encoded.status == 0, "cjxl: \(encoded.stderr)")
                let decoded = try await ExternalTool.run("/usr/bin/djxl", [file("soft.jxl").path, file("djxl.apng").path])
                try #require(decoded.status == 0, "djxl: \(decoded.stderr)")
                let reference = try await Self.pillowFrames(file("djxl.apng"))
                Self.expectSame(try await Self.ourFrames(file("soft.jxl"), in: folder), reference, "JPEG XL")
                // Written as an animation without processors: straight frames into the encoder,
                // lossless, so every visible pixel is djxl's.
                let written = try await Imgpipe.run(["convert", file("soft.jxl").path, file("from-jxl.webp").path, "--lossless"])
                try #require(written.status == 0, "imgpipe convert: \(written.stderr)")
                Self.expectSame(try await Self.pillowFrames(file("from-jxl.webp")), reference, "JPEG XL written as lossless WebP")
            } else {
                print("imgpipe soft-alpha frames: cjxl/djxl (libjxl-tools) absent: JPEG XL skipped")
            }

            if ExternalTool.exists("/usr/bin/img2webp") {
                let inputs = ["f0.png", "f1.png", "f2.png"].map { file($0).path }
                let encoded = try await ExternalTool.run("/usr/bin/img2webp", ["-lossy", "-q", "75", "-d", "100"] + inputs
                                                         + ["-o", file("soft.webp").path])
                try #require(encoded.status == 0, "img2webp: \(encoded.stderr)")
                Self.expectSame(try await Self.ourFrames(file("soft.webp"), in: folder), try await Self.pillowFrames(file("soft.webp")), "WebP")
            } else {
                print("imgpipe soft-alpha frames: img2webp (webp) absent: WebP skipped")
            }
        }
    }
}
