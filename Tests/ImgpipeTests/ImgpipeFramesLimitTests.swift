import Foundation
import PipelineTestSupport
import Testing

/// `imgpipe frames` under the pipeline's animation limits (issue 21, finding 3: a 2.3 MB GIF of
/// 100,000 frames became 100,000 files): refused before writing a file; `info` and `thumb` of
/// the same file work as before.
@Suite("imgpipe frames limits", .timeLimit(.minutes(2)))
struct ImgpipeFramesLimitTests {
    /// A GIF89a of `count` 1×1 frames, each the classic smallest LZW image (code size 2: clear,
    /// index 1, end), with a two-colour global table.
    static func gif(frames count: Int) -> Data {
        var bytes = Array("GIF89a".utf8) + [1, 0, 1, 0, 0x80, 0, 0] + [0, 0, 0, 255, 255, 255]
        let frame: [UInt8] = [0x21, 0xF9, 4, 0, 2, 0, 0, 0] + [0x2C, 0, 0, 0, 0, 1, 0, 1, 0, 0] + [2, 2, 0x4C, 0x01, 0]
        for _ in 0..<count { bytes += frame }
        return Data(bytes + [0x3B])
    }

    @Test func framesRefusesTooManyFramesBeforeWritingAny() async throws {
        try await withTemporaryDirectory(prefix: "imgpipe-tests") { (directory: URL) async throws in
            let file = directory.appendingPathComponent("many.gif")
            try Self.gif(frames: 10_001).write(to: file)
            let out = directory.appendingPathComponent("frames")
            let refused = try await Imgpipe.run(["frames", file.path, "--out-dir", out.path, "--no-disk-cache"])
            #expect(refused.status == 1)
            #expect(refused.stderr.contains("frame count") && refused.stderr.contains("10000"), "\(refused.stderr)")
            #expect(try FileManager.default.contentsOfDirectory(atPath: out.path).isEmpty)
            // A short one is written whole.
            try Self.gif(frames: 3).write(to: file)
            let written = try await Imgpipe.run(["frames", file.path, "--out-dir", out.path, "--no-disk-cache"])
            #expect(written.status == 0, "\(written.stderr)")
            #expect(try FileManager.default.contentsOfDirectory(atPath: out.path).count == 3)
            // `info` reads the header of an over-limit file, `thumb` its first frame.
            try Self.gif(frames: 10_001).write(to: file)
            let info = try await Imgpipe.run(["info", file.path])
            #expect(info.status == 0 && info.stdout.contains("GIF 1×1, alpha, 10001 frames"), "\(info.stdout)\(info.stderr)")
            let thumb = directory.appendingPathComponent("thumb.pam")
            let still = try await Imgpipe.run(["thumb", file.path, "--size", "1", "--out", thumb.path, "--no-disk-cache"])
            #expect(still.status == 0, "\(still.stderr)")
            #expect(try pamSize(thumb) == [1, 1])
        }
    }

    /// Issue 41, finding 8: a 136-byte animated WebP declaring a 10000×10000 canvas used 1.21 GB
    /// through `frames`; its canvases are refused before they exist, quickly and with a message
    /// that names them. The still path (a thumbnail of its first frame) is unchanged.
    @Test func anAnimationWhoseCanvasesOutweighTheLargestStillIsRefused() async throws {
        let file = Imgpipe.root.appendingPathComponent("Tests/CodecWebPTests/Fixtures/w10k-2.webp")
        try await withTemporaryDirectory(prefix: "imgpipe-w10k") { (folder: URL) async throws in
            let started = ContinuousClock.now
            let refused = try await Imgpipe.run(["frames", file.path, "--out-dir", folder.appendingPathComponent("frames").path],
                                                timeout: 60)
            #expect(refused.status == 1 && !refused.terminatedBySignal, "\(refused.status): \(refused.stderr)")
            #expect(refused.stderr.contains("canvases") && refused.stderr.contains("400000000"), "\(refused.stderr)")
            #expect(ContinuousClock.now - started < .seconds(20))
            let thumbnail = try await Imgpipe.run(["thumb", file.path, "-s", "64", "-o", folder.appendingPathComponent("still.png").path])
            #expect(thumbnail.status == 0, "\(thumbnail.stderr)")
        }
    }
}
