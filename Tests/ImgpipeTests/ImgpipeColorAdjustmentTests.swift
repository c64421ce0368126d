import Foundation
import PipelineCore
import PipelineTestSupport
import Testing

/// `imgpipe thumb --brightness --contrast --saturation --hue --gamma`.
@Suite struct ImgpipeColorAdjustmentTests {
    /// The five flags make one ``ColorAdjustment`` on the thumbnail: the same pixels as the
    /// library's processor on the thumbnail without them (an opaque photo, so the straight PAM
    /// is the pipeline's premultiplied result as it is).
    @Test func theFlagsAreTheLibrarysAdjustmentOnTheThumbnail() async throws {
        try await withTemporaryDirectory(prefix: "imgpipe-tests") { (directory: URL) async throws in
            let photo = Imgpipe.samples.appendingPathComponent("sunflower-arithmetic.jpg").path
            let plain = directory.appendingPathComponent("plain.pam"), adjusted = directory.appendingPathComponent("adjusted.pam")
            let first = try await Imgpipe.run(["thumb", photo, "-s", "96", "-o", plain.path, "--no-disk-cache"])
            #expect(first.status == 0, "\(first.stderr)")
            let second = try await Imgpipe.run(["thumb", photo, "-s", "96", "-o", adjusted.path, "--no-disk-cache", "--brightness", "1.1",
                                                "--contrast", "1.4", "--saturation", "0.6", "--hue", "-30", "--gamma", "1.8"])
            #expect(second.status == 0, "\(second.stderr)")
            let size = try pamSize(plain)
            #expect(try pamSize(adjusted) == size)
            let before = try #require(Bitmap(width: size[0], height: size[1], bytesPerRow: size[0] * 4, pixelFormat: .rgba8Straight,
                                             bytes: try pamPixels(plain)))
            let expected = try ImageProcessor.colorAdjustment(ColorAdjustment(brightness: 1.1, contrast: 1.4, saturation: 0.6, hue: -30,
                                                                              gamma: 1.8)).process(before)
            #expect(try pamPixels(adjusted) == expected.withUnsafeBytes { Array($0) })
        }
    }

    @Test(arguments: [
        (["--contrast", "-1"], "--contrast needs a factor from 0 to 1000"), (["--saturation", "x"], "--saturation needs a factor"),
        (["--brightness", "1001"], "--brightness needs a factor"), (["--gamma", "0"], "--gamma needs an exponent from 0.001"),
        (["--hue", "nan"], "--hue needs an angle in degrees"),
    ])
    func outOfRangeValuesAreUsageErrors(flag: [String], message: String) async throws {
        let result = try await Imgpipe.run(["thumb", "a.jpg", "-s", "5", "-o", "x.png"] + flag)
        #expect(result.status == 2)
        #expect(result.stderr.contains(message), "\(result.stderr)")
    }
}
