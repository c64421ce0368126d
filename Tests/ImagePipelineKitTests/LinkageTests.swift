import Foundation
import PipelineTestSupport
import Testing

/// "Link only what you import": an app of PipelineCore + CodecPNG + LoaderFile links libpng and
/// neither libjpeg nor libcurl nor librsvg (and its cairo) nor libjxl (and its highway and brotli), with the umbrella product in the same package.
@Suite("Linkage")
struct LinkageTests {
    @Test(.enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/bin/ldd"), "ldd is not installed: skipped"))
    func pngFromFilesLinksNeitherLibjpegNorLibcurl() throws {
        let directory = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
        let candidates = [directory, directory.deletingLastPathComponent()].map { $0.appendingPathComponent("PNGFromFiles") }
        let binary = try #require(candidates.first { FileManager.default.isExecutableFile(atPath: $0.path) },
                                  "PNGFromFiles is not beside the test bundle (\(directory.path))")
        let ldd = try ExternalTool.runBlocking("/usr/bin/ldd", [binary.path])
        let text = ldd.stdout
        #expect(ldd.status == 0)
        #expect(text.contains("libpng"), "\(text)")
        #expect(!text.contains("libjpeg") && !text.contains("libturbojpeg"), "\(text)")
        #expect(!text.contains("libcurl"), "\(text)")
        #expect(!text.contains("libwebp") && !text.contains("libheif") && !text.contains("libgif"), "\(text)")
        #expect(!text.contains("librsvg") && !text.contains("libcairo"), "CodecSVG's libraries: \(text)")
        #expect(!text.contains("libjxl") && !text.contains("libhwy") && !text.contains("libbrotli"), "CodecJXL's libraries: \(text)")
    }
}
