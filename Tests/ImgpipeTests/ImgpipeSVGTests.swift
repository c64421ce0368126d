import Foundation
import ImagePipelineKit
import PipelineTestSupport
import Testing

/// `imgpipe thumb x.svg --size 512`: the 16-pixel icon drawn at 512 (the decoder's own drawing,
/// not an enlargement), and the hostile files fail or draw with nothing of librsvg's or GLib's
/// on stderr (imgpipe's own lines only).
@Suite("imgpipe thumb of SVG", .timeLimit(.minutes(2)), .enabled(if: Corpus.has("svg"), Corpus.missing("svg")), .tags(.cpuBound))
struct ImgpipeSVGTests {
    @Test func aSixteenPixelIconThumbnailsSharpAt512() async throws {
        try await withTemporaryDirectory(prefix: "imgpipe-svg") { (directory: URL) async throws in
            let source = Corpus.folder("svg").appendingPathComponent("adwaita-user-home-symbolic.svg")
            let out = directory.appendingPathComponent("icon.pam")
            let result = try await Imgpipe.run(["thumb", source.path, "--size", "512", "-o", out.path])
            #expect(result.status == 0, "\(result.stderr)")
            #expect(try pamSize(out) == [512, 512])
            let drawn = try SVGDecoder().decode(Data(contentsOf: source), options: DecodeOptions(
                targetSize: PixelSize(width: 512, height: 512), pixelFormat: .rgba8Straight)).bitmap
            #expect(try pamPixels(out) == drawn.unpremultipliedBytes())
        }
    }

    @Test func hostileFilesLeaveNothingOfTheLibrariesOnStderr() async throws {
        try await withTemporaryDirectory(prefix: "imgpipe-svg") { (directory: URL) async throws in
            let invalid = Corpus.folder("svg").appendingPathComponent("invalid")
            let names = try FileManager.default.contentsOfDirectory(atPath: invalid.path).filter { $0.hasSuffix(".svg") }.sorted()
            #expect(names.count == 9)
            let result = try await Imgpipe.run(["thumb"] + names.map { invalid.appendingPathComponent($0).path }
                                               + ["--size", "64", "--out-dir", directory.path, "--format", "png"])
            let lines = result.stderr.split(separator: "\n")
            #expect(!lines.isEmpty)  // the failures are reported
            // One line per failure and the summary ("4 of 9 thumbnails written …"), nothing else.
            #expect(lines.allSatisfy { $0.hasPrefix("imgpipe: cannot decode ") || $0.contains(" thumbnails written ") },
                    "\(result.stderr)")
            #expect(lines.filter { $0.hasPrefix("imgpipe: cannot decode ") }.count == 5, "\(result.stderr)")
            for word in ["GLib", "librsvg", "rsvg", "WARNING", "CRITICAL", "Gdk"] {
                #expect(!result.stderr.contains(word + "-") && !result.stderr.contains("(" + word), "\(result.stderr)")
            }
        }
    }
}

/// imgpipe parses and draws SVG in a worker process (itself, `__svg-worker`): a document that
/// aborts librsvg fails alone with a typed error, in `info` and `thumb`, and the next source of
/// the same run is still served (issue 41, finding 1); an embedded picture over the pixel limit
/// is refused (finding 4).
@Suite("imgpipe isolates SVG", .timeLimit(.minutes(2)), .tags(.cpuBound))
struct ImgpipeSVGWorkerTests {
    @Test func aDocumentThatAbortsLibrsvgFailsAloneInInfoAndThumb() async throws {
        try await withTemporaryDirectory(prefix: "imgpipe-svg-worker") { (directory: URL) async throws in
            let crash = directory.appendingPathComponent("conv-21.svg"), circle = directory.appendingPathComponent("circle.svg")
            try HostileSVG.convolution21.write(to: crash)
            try HostileSVG.circle.write(to: circle)
            let info = try await Imgpipe.run(["info", crash.path, circle.path])
            #expect(!info.terminatedBySignal && info.status == 1, "status \(info.status): \(info.stderr)")
            #expect(info.stderr.contains("the SVG worker crashed with signal 6 (SIGABRT)"), "\(info.stderr)")
            #expect(info.stderr.contains("conv-21.svg"), "the message names the file: \(info.stderr)")
            #expect(info.stdout.contains("8x8") || info.stdout.contains("8×8"), "\(info.stdout)")
            let thumb = try await Imgpipe.run(["thumb", crash.path, "--size", "64", "-o", directory.appendingPathComponent("t.png").path])
            #expect(!thumb.terminatedBySignal && thumb.status == 1, "status \(thumb.status): \(thumb.stderr)")
            #expect(thumb.stderr.contains("crashed with signal 6"), "\(thumb.stderr)")
        }
    }

    @Test func anEmbeddedPictureOverThePixelLimitIsRefused() async throws {
        try await withTemporaryDirectory(prefix: "imgpipe-svg-worker") { (directory: URL) async throws in
            let source = directory.appendingPathComponent("data-png.svg")
            try HostileSVG.embedding(HostileSVG.pngHeader(width: 20_000, height: 20_000)).write(to: source)
            let result = try await Imgpipe.run(["thumb", source.path, "--size", "64", "-o", directory.appendingPathComponent("t.png").path])
            #expect(result.status == 1 && result.stderr.contains("20000"), "status \(result.status): \(result.stderr)")
        }
    }
}
