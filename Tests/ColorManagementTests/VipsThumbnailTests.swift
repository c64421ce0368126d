import Foundation
import PipelineCore
import PipelineTestSupport
import Testing

/// Thumbnails of the wide-gamut files against `vipsthumbnail --export-profile srgb` (libvips
/// 8.14 keeps the embedded profile unless asked to export one): the same colour, so the mean
/// signed difference per channel is under 2 levels (the resampling filters differ, so single
/// pixels do).
/// `/usr/bin/vipsthumbnail`, if installed.
let vipsThumbnailTool: URL? = FileManager.default.isExecutableFile(atPath: "/usr/bin/vipsthumbnail")
    ? URL(fileURLWithPath: "/usr/bin/vipsthumbnail") : nil

@Suite(.enabled(if: Corpus.has(ICC.folder) && vipsThumbnailTool != nil,
                "needs ../shared/corpus/icc and /usr/bin/vipsthumbnail (Debian libvips-tools, see scripts/bootstrap)"), .tags(.cpuBound))
struct VipsThumbnailTests {
    static let size = PixelSize(width: 160, height: 100)

    /// `vipsthumbnail FILE -s 160x100 --export-profile srgb`, read back as stored (sRGB).
    static func vipsThumbnail(_ file: String) throws -> Bitmap {
        let out = FileManager.default.temporaryDirectory.appendingPathComponent("vips-icc-\(UUID().uuidString).png")
        defer { try? FileManager.default.removeItem(at: out) }
        let result = try ExternalTool.runBlocking("/usr/bin/vipsthumbnail", [
            Corpus.folder(ICC.folder).appendingPathComponent(file).path, "-s", "\(size.width)x\(size.height)", "--export-profile", "srgb",
            "-o", out.path,
        ])
        try #require(result.status == 0, "vipsthumbnail failed on \(file)")
        return try ICC.decoder(for: ".png").decode(try Data(contentsOf: out), options: DecodeOptions(convertsToSRGB: false)).bitmap
    }

    @Test(arguments: ["AdobeRGB1998", "ProPhotoRGB"])
    func thumbnailsMatchVipsthumbnailColour(_ name: String) throws {
        for format in ["jpg", "png", "webp", "heic"] {
            let file = "\(name).\(format)"
            let theirs = try Self.vipsThumbnail(file)
            var ours = try ICC.decode(file, options: DecodeOptions(targetSize: Self.size)).bitmap
            if ours.size != Self.size { ours = Resampler.resample(ours, to: Self.size) }
            try #require(theirs.size == Self.size, "\(file): vips made \(theirs.size)")
            var sums = [0, 0, 0]
            for y in 0..<Self.size.height {
                for x in 0..<Self.size.width {
                    let p = ours.pixel(x: x, y: y), q = theirs.pixel(x: x, y: y)
                    sums[0] += Int(p.r) - Int(q.r)
                    sums[1] += Int(p.g) - Int(q.g)
                    sums[2] += Int(p.b) - Int(q.b)
                }
            }
            let means = sums.map { Double($0) / Double(Self.size.pixelCount) }
            #expect(means.allSatisfy { abs($0) < 2 }, "\(file): mean difference per channel \(means)")
        }
    }
}
