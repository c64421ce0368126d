import Foundation
import PipelineTestSupport
import Testing

/// `imgpipe thumb`/`convert` of an animation into `.webp` and `.gif` keeps every frame: the
/// files are read back by Pillow (libwebp's `WebPAnimDecoder` and its own GIF reader, which
/// composite the frames independently of us) and compared with the frames the pipeline
/// decoded (`imgpipe frames`, the same frames the encoder was given).
@Suite("imgpipe writes animations", .serialized, .timeLimit(.minutes(5)), .tags(.cpuBound))
struct ImgpipeAnimatedOutputTests {
    static let orbit = Imgpipe.samples.appendingPathComponent("orbit.gif")  // 96 × 96, 16 frames of 60 ms, loops
    static let gifCorpus = straightAlphaCorpus.appendingPathComponent("gif")

    /// Pillow's reading of `file`: frame count, loop, durations, and the largest and mean
    /// difference of each composited frame from `frames/frame-NNNN.pam` (colour ignored where
    /// both are transparent; alpha compared as GIF stores it, opaque from 128, when `oneBitAlpha`).
    static func pillowComparison(_ file: URL, frames: URL, oneBitAlpha: Bool) async throws -> [String: Double] {
        let script = """
            import json, os, sys, numpy as np
            from PIL import Image, ImageSequence
            def pam(path):
                data = open(path, "rb").read()
                end = data.index(b"ENDHDR\\n") + 7
                fields = dict(line.split(" ", 1) for line in data[:end].decode().splitlines()[1:-1])
                return np.frombuffer(data[end:], dtype=np.uint8).reshape(int(fields["HEIGHT"]), int(fields["WIDTH"]), 4).astype(int)
            im = Image.open(sys.argv[1])
            worst, total, count, durations = 0, 0.0, 0, []
            for i, frame in enumerate(ImageSequence.Iterator(im)):
                ours = pam(os.path.join(sys.argv[2], "frame-%04d.pam" % i))
                theirs = np.array(frame.convert("RGBA")).astype(int)
                if sys.argv[3] == "1":
                    ours[..., 3] = np.where(ours[..., 3] >= 128, 255, 0)
                both_clear = (ours[..., 3] == 0) & (theirs[..., 3] == 0)
                d = np.abs(ours - theirs)
                d[both_clear] = 0
                worst, total, count = max(worst, int(d.max())), total + d.mean(), count + 1
                durations.append(frame.info.get("duration", 0))
            print(json.dumps({"frames": count, "max": worst, "mean": total / max(count, 1),
                              "loop": im.info.get("loop", -1), "duration": durations[0] if durations else -1}))
            """
        let result = try await ExternalTool.run(pillowPython, ["-c", script, file.path, frames.path, oneBitAlpha ? "1" : "0"])
        try #require(result.status == 0, "Pillow: \(result.stderr)")
        let object = try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any] ?? [:]
        return object.compactMapValues { ($0 as? NSNumber)?.doubleValue }
    }

    @Test(.enabled(if: hasPillow, "Debian's python3 with python3-pil and python3-numpy is absent: skipped"),
          arguments: [(["--size", "64"], "webp", ["--lossless"]), (["--size", "64"], "gif", []),
                      ([], "webp", ["--lossless"]), ([], "gif", [])])
    func everyFrameIsWrittenAndReadsBackAsDecoded(_ size: [String], _ format: String, _ options: [String]) async throws {
        try await withTemporaryDirectory(prefix: "imgpipe-animated") { (directory: URL) async throws in
            let out = directory.appendingPathComponent("out.\(format)"), frames = directory.appendingPathComponent("frames")
            let command = size.isEmpty ? ["convert", Self.orbit.path, out.path] : ["thumb", Self.orbit.path] + size + ["-o", out.path]
            let written = try await Imgpipe.run(command + options)
            try #require(written.status == 0, "\(written.stderr)")
            let decoded = try await Imgpipe.run(["frames", Self.orbit.path, "--out-dir", frames.path] + size)
            try #require(decoded.status == 0, "\(decoded.stderr)")
            let comparison = try await Self.pillowComparison(out, frames: frames, oneBitAlpha: format == "gif")
            #expect(comparison["frames"] == 16, "\(format) \(size): \(comparison)")
            #expect(comparison["loop"] == 0, "loops forever, as the source")
            #expect(comparison["duration"] == 60, "the source's 60 ms")
            if format == "webp" {
                #expect(comparison["max"] == 0, "lossless WebP: the decoded frames exactly (\(comparison))")
            } else {
                // 256 colours a frame: exact where a frame's colours fit (the source's own size),
                // median cut and Floyd–Steinberg after resampling made more.
                #expect((comparison["mean"] ?? 255) <= (size.isEmpty ? 0.5 : 3), "GIF: \(comparison)")
            }
        }
    }

    @Test func firstFrameWritesTheStillAndStillsStayStill() async throws {
        try await withTemporaryDirectory(prefix: "imgpipe-animated") { (directory: URL) async throws in
            let first = directory.appendingPathComponent("first.gif"), still = directory.appendingPathComponent("still.gif")
            let a = try await Imgpipe.run(["thumb", Self.orbit.path, "-s", "48", "--first-frame", "-o", first.path])
            let b = try await Imgpipe.run(["thumb", Imgpipe.samples.appendingPathComponent("rings.png").path, "-s", "48", "-o", still.path])
            try #require(a.status == 0 && b.status == 0, "\(a.stderr) \(b.stderr)")
            for file in [first, still] {
                let info = try await Imgpipe.run(["info", file.path])
                #expect(info.stdout.contains("1 frame"), "\(info.stdout)")
            }
            let refused = try await Imgpipe.run(["thumb", Self.orbit.path, "-s", "48", "--keep-icc", "-o", first.path])
            #expect(refused.status == 2, "a GIF stores no ICC profile: \(refused.stderr)")
        }
    }

    /// The 380-frame Muybridge GIF (472 × 298): as an animated WebP thumbnail it keeps every
    /// frame and its timing, in memory that does not grow with the frames (380 canvases would
    /// be 214 MB; ImageMagick's `convert … -coalesce -resize` peaks near 490 MB here).
    @Test(.enabled(if: FileManager.default.fileExists(atPath: gifCorpus.path), "../shared/corpus/gif is absent: skipped"))
    func aLongAnimationStreamsThroughTheEncoder() async throws {
        try await withTemporaryDirectory(prefix: "imgpipe-animated") { (directory: URL) async throws in
            let out = directory.appendingPathComponent("muybridge.webp")
            let run = try await Imgpipe.peakMemory(["thumb", Self.gifCorpus.appendingPathComponent("gifplayer-muybridge.gif").path,
                                                    "-s", "128", "-o", out.path])
            try #require(run.status == 0)
            let info = try await Imgpipe.run(["info", out.path])
            #expect(info.stdout.contains("380 frames") && info.stdout.contains("58.55 s"), "\(info.stdout)")
            #expect(run.peak < 150 << 20, "peak \(run.peak >> 20) MB")
        }
    }
}
