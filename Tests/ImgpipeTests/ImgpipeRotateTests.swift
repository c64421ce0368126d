import Foundation
import PipelineTestSupport
import Testing

/// `imgpipe thumb --rotate`, `--flip` and `--flop`: one turn after the EXIF orientation, before
/// the resize (the core's pixels are checked against vips in CodecJPEGTests' orientation tests).
@Suite(.tags(.cpuBound))
struct ImgpipeRotateTests {
    /// `--rotate 90 --flop` of the EXIF-6 balloon is the plain thumbnail transposed, within one
    /// level (the resampler's two passes run in the other order on the transposed picture), and
    /// `--size` bounds the turned picture; `--rotate 180 --flip --flop` is the plain one.
    @Test func rotateAndFlopTurnThePictureBeforeTheSize() async throws {
        try await withTemporaryDirectory(prefix: "imgpipe-rotate") { directory in
            let source = Imgpipe.samples.appendingPathComponent("balloon-exif6.jpg").path
            func thumb(_ name: String, _ extra: [String], box: String = "80x60") async throws -> (size: [Int], pixels: [UInt8]) {
                let out = directory.appendingPathComponent(name)
                let result = try await Imgpipe.run(["thumb", source, "--size", box, "-o", out.path] + extra)
                #expect(result.status == 0, "\(extra): \(result.stderr)")
                return (try pamSize(out), try pamPixels(out))
            }
            let plain = try await thumb("plain.pam", [])
            let turned = try await thumb("turned.pam", ["--rotate", "90", "--flop"])
            #expect(plain.size[1] == 60 && plain.size[0] < 80, "upright portrait: \(plain.size)")
            #expect(turned.size[0] == 80 && turned.size[1] < 60, "turned landscape, bounded by the box: \(turned.size)")
            let both = try await thumb("both.pam", ["--rotate", "180", "--flip", "--flop"])
            #expect(both.size == plain.size && both.pixels == plain.pixels, "a half turn and both mirrors is no turn")
            // The transposed box holds the transposed picture.
            let transposed = try await thumb("transposed.pam", ["--rotate", "90", "--flop"], box: "60x80")
            let (w, h) = (plain.size[0], plain.size[1])
            #expect(transposed.size == [h, w])
            var largest = 0
            for y in 0..<h {
                for x in 0..<w {
                    for c in 0..<4 {
                        let a = Int(plain.pixels[(y * w + x) * 4 + c]), b = Int(transposed.pixels[(x * h + y) * 4 + c])
                        largest = max(largest, abs(a - b))
                    }
                }
            }
            #expect(largest <= 1, "the transposed thumbnail differs by up to \(largest) levels")
        }
    }

    @Test func onlyQuarterTurnsAreTaken() async throws {
        let source = Imgpipe.samples.appendingPathComponent("balloon-exif6.jpg").path
        let refused = try await Imgpipe.run(["thumb", source, "--size", "64", "-o", "/dev/null", "--rotate", "45"])
        #expect(refused.status == 2)
        #expect(refused.stderr.contains("--rotate must be one of 90, 180, 270, got '45'"), "\(refused.stderr)")
        let help = try await Imgpipe.run(["thumb", "--help"])
        #expect(help.stdout.contains("--rotate") && help.stdout.contains("--flip") && help.stdout.contains("--flop"))
    }
}
