import CodecGIF
import Foundation
import GIFFixtureWriter
import PipelineCore
import PipelineTestSupport
import Testing

/// `imgpipe frames` writes what the GIF decoder composites: the same canvas (the logical screen
/// grown to the first frame), every disposal applied, straight RGBA in each PAM.
@Suite("imgpipe frames compositing", .timeLimit(.minutes(2)), .tags(.cpuBound))
struct ImgpipeFramesCompositingTests {
    /// A 4×4 screen whose first frame reaches x = 6 (kept), a "previous" frame with transparency,
    /// a "background" frame, and a 1×1 frame that shows what they left.
    static var gif: Data {
        let palette: [(UInt8, UInt8, UInt8)] = [(255, 0, 0), (0, 0, 255), (0, 255, 0), (255, 255, 255)]
        let first = GIFWriter.Frame(x: 0, y: 0, width: 6, height: 4, indices: [UInt8](repeating: 0, count: 24), disposal: 1)
        let previous = GIFWriter.Frame(x: 1, y: 1, width: 2, height: 2, indices: [1, 2, 2, 1], disposal: 3, transparentIndex: 2)
        let background = GIFWriter.Frame(x: 4, y: 0, width: 2, height: 2, indices: [3, 3, 3, 3], disposal: 2)
        let last = GIFWriter.Frame(x: 3, y: 3, width: 1, height: 1, indices: [3], disposal: 1)
        return GIFWriter.gif(width: 4, height: 4, palette: palette, frames: [first, previous, background, last])
    }

    @Test func framesMatchTheDecoderFrameByFrame() async throws {
        try await withTemporaryDirectory(prefix: "imgpipe-frames") { (directory: URL) async throws in
            let file = directory.appendingPathComponent("matrix.gif")
            try Self.gif.write(to: file)
            let out = directory.appendingPathComponent("frames")
            let result = try await Imgpipe.run(["frames", file.path, "--out-dir", out.path, "--no-disk-cache"])
            #expect(result.status == 0, "\(result.stderr)")
            let decoder = try GIFDecoder().makeAnimationDecoder(for: Self.gif, options: DecodeOptions())
            var index = 0
            while let frame = try decoder.nextFrame(size: nil) {
                let pam = out.appendingPathComponent(String(format: "frame-%04d.pam", index))
                #expect(try pamSize(pam) == [6, 4], "frame \(index)")
                #expect(try pamPixels(pam) == frame.bitmap.unpremultipliedBytes(), "frame \(index)")
                index += 1
            }
            #expect(index == 4)
            // Frame 3: the "previous" frame restored (red at 1,1), the "background" one cleared.
            let last = try pamPixels(out.appendingPathComponent("frame-0003.pam"))
            #expect(Array(last[(1 * 6 + 1) * 4..<(1 * 6 + 1) * 4 + 4]) == [255, 0, 0, 255])
            #expect(Array(last[4 * 4..<4 * 4 + 4]) == [0, 0, 0, 0])
            #expect(Array(last[(3 * 6 + 3) * 4..<(3 * 6 + 3) * 4 + 4]) == [255, 255, 255, 255])
        }
    }
}
