import Foundation
import PipelineTestSupport
import Testing

/// "Link only what you import": an app of PipelineCore + CodecPNG + LoaderFile links libpng and
/// neither libjpeg nor libcurl nor librsvg (and its cairo) nor libjxl (and its highway and brotli), with the umbrella product in the same package.
/// Nor OpenCV: no app links it (the kit's users neither), not even imgpipe, which imports
/// FaceDetection: OpenCV is in its FaceDetectionOpenCV plugin, opened at the first face search.
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
        #expect(!text.contains("libopencv") && !text.contains("libtbb"), "FaceDetection's libraries: \(text)")
    }

    /// The README's app (`scripts/readme-app` builds it in `.build/readme-app`): ImagePipelineKit
    /// and nothing else of ours, so no OpenCV; nor imgpipe, which imports FaceDetection, whose
    /// plugin (beside it, built with it) links OpenCV: the control that the check can see it.
    @Test(.enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/bin/ldd")
                   && FileManager.default.isExecutableFile(atPath: readmeApp.path),
                   "ldd, or the README's app (run scripts/readme-app first), is missing: skipped"))
    func anImagePipelineKitAppLinksNoOpenCV() throws {
        let app = try ExternalTool.runBlocking("/usr/bin/ldd", [Self.readmeApp.path])
        #expect(app.status == 0)
        #expect(app.stdout.contains("libjpeg"), "the kit's codecs are there: \(app.stdout)")
        #expect(!app.stdout.contains("libopencv"), "\(app.stdout)")
        let directory = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
        let imgpipe = [directory, directory.deletingLastPathComponent()].map { $0.appendingPathComponent("imgpipe") }
            .first { FileManager.default.isExecutableFile(atPath: $0.path) }
        if let imgpipe {
            let linked = try ExternalTool.runBlocking("/usr/bin/ldd", [imgpipe.path]).stdout
            #expect(linked.contains("libjpeg") && !linked.contains("libopencv"), "imgpipe loads OpenCV on first use: \(linked)")
            let plugin = imgpipe.deletingLastPathComponent().appendingPathComponent("libFaceDetectionOpenCV.so")
            #expect(try ExternalTool.runBlocking("/usr/bin/ldd", [plugin.path]).stdout.contains("libopencv_objdetect"),
                    "the plugin beside imgpipe links OpenCV")
        }
    }

    /// `.build/readme-app/MyApp/.build/debug/MyApp` of this checkout.
    static let readmeApp = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent(".build/readme-app/MyApp/.build/debug/MyApp")
}
