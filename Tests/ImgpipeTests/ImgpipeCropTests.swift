import Foundation
import FaceDetection
import ImagePipelineKit
import PipelineTestSupport
import Testing

/// `imgpipe thumb`'s crop options end to end: a 400 × 200 PNG whose only subject (a red and
/// yellow checker, detailed and saturated) sits near its right edge on flat grey, filled into
/// 100 × 100. The cover picture is 200 × 100, so the window can move 100 pixels; the subject
/// is at 150–180 of the cover: outside the centre window (50–150), inside the right one.
@Suite("imgpipe thumb crop anchors", .timeLimit(.minutes(2)))
struct ImgpipeCropTests {
    static func subjectOnTheRight() throws -> Data {
        var bitmap = Bitmap(zeroed: PixelSize(width: 400, height: 200))
        bitmap.withUnsafeMutableBytes { bytes in
            for y in 0..<200 {
                for x in 0..<400 {
                    let o = (y * 400 + x) * 4
                    let inSubject = (300..<360).contains(x) && (70..<130).contains(y)
                    let yellow = inSubject && ((x / 4 + y / 4) % 2 == 0)
                    let (r, g, b): (UInt8, UInt8, UInt8) = inSubject ? (yellow ? (250, 220, 30) : (220, 20, 30)) : (128, 128, 128)
                    (bytes[o], bytes[o + 1], bytes[o + 2], bytes[o + 3]) = (r, g, b, 255)
                }
            }
        }
        return try PNGEncoder().encode(bitmap)
    }

    /// Whether the 100 × 100 output shows the subject: some strongly red pixel.
    static func showsTheSubject(_ pixels: [UInt8]) -> Bool {
        stride(from: 0, to: pixels.count, by: 4).contains { pixels[$0] > 180 && pixels[$0 + 1] < 90 }
    }

    @Test(arguments: [
        (["--fill", "100x100"], false),
        (["-s", "100x100", "--crop"], false),
        (["-s", "100x100", "--smartcrop", "centre"], false),
        (["-s", "100x100", "--smartcrop", "attention"], true),
        (["-s", "100", "--smartcrop", "entropy"], true),
        (["--fill", "100x100", "--gravity", "east"], true),
        (["--fill", "100x100", "--gravity", "west"], false),
        (["-s", "100x100", "--gravity", "top-right"], true),
        (["-s", "100x100", "--focal", "0.82,0.5"], true),
        (["-s", "100x100", "--focal", "0.1,0.5"], false),
    ])
    func theWindowFollowsTheOption(_ options: [String], showsSubject: Bool) async throws {
        try await withTemporaryDirectory(prefix: "imgpipe-crop") { (directory: URL) async throws in
            let source = directory.appendingPathComponent("subject.png")
            try Self.subjectOnTheRight().write(to: source)
            let out = directory.appendingPathComponent("out.pam")
            let result = try await Imgpipe.run(["thumb", source.path] + options + ["-o", out.path])
            try #require(result.status == 0, "\(options): \(result.stderr)")
            let pixels = try pamPixels(out)
            #expect(pixels.count == 100 * 100 * 4, "\(options): a 100 × 100 fill")
            #expect(Self.showsTheSubject(pixels) == showsSubject, "\(options)")
        }
    }

    /// opencv-doc's messi5.jpg cut to start just left of the face (at 226–265 of 548 × 342)
    /// and filled into 120 × 240: the window (171 source pixels wide) keeps the face at the left
    /// edge, as `--gravity west` does, where the centred window (80–251 of the cut) misses it.
    @Test(.enabled(if: FileManager.default.fileExists(atPath: "/usr/share/doc/opencv-doc/examples/data/messi5.jpg")
                   && FileManager.default.fileExists(atPath: FaceDetector.defaultCascade.path),
                   "opencv-doc's messi5.jpg or opencv-data's cascade is not installed (scripts/bootstrap): skipped"))
    func smartcropFacesKeepsTheFaceNearTheEdge() async throws {
        try await withTemporaryDirectory(prefix: "imgpipe-crop") { (directory: URL) async throws in
            let messi = try JPEGDecoder().decode(Data(contentsOf: URL(fileURLWithPath: "/usr/share/doc/opencv-doc/examples/data/messi5.jpg")),
                                                 options: DecodeOptions()).bitmap
            let source = directory.appendingPathComponent("messi-left.png")
            try PNGEncoder().encode(ImageProcessor.crop(PixelRect(x: 216, y: 0, width: 332, height: 342)).process(messi)).write(to: source)
            var outputs: [String: [UInt8]] = [:]
            for crop in [["--smartcrop", "faces"], ["--gravity", "west"], ["--smartcrop", "centre"]] {
                let out = directory.appendingPathComponent("out.pam")
                let result = try await Imgpipe.run(["thumb", source.path, "-s", "120x240"] + crop + ["-o", out.path])
                try #require(result.status == 0, "\(crop): \(result.stderr)")
                outputs[crop[1]] = try pamPixels(out)
            }
            #expect(outputs["faces"] == outputs["west"])
            #expect(outputs["faces"] != outputs["centre"])
        }
    }

    /// OpenCV reaches imgpipe only when it looks for faces: the files the dynamic loader maps
    /// (glibc's `LD_DEBUG=files` on stderr: every object loaded at start-up and by `dlopen`)
    /// hold no libopencv for `--help` and `--smartcrop attention`, and for `--smartcrop faces`
    /// the FaceDetectionOpenCV plugin, loaded by `dlopen`, with OpenCV after it. A missing
    /// plugin fails here (it is built with the tests), not skips.
    @Test(.enabled(if: FileManager.default.fileExists(atPath: "/usr/share/doc/opencv-doc/examples/data/messi5.jpg")
                   && FileManager.default.fileExists(atPath: FaceDetector.defaultCascade.path),
                   "opencv-doc's messi5.jpg or opencv-data's cascade is not installed (scripts/bootstrap): skipped"))
    func openCVIsLoadedOnlyForAFaceSearch() async throws {
        try await withTemporaryDirectory(prefix: "imgpipe-lazy") { (directory: URL) async throws in
            let messi = "/usr/share/doc/opencv-doc/examples/data/messi5.jpg"
            let out = directory.appendingPathComponent("out.png").path
            var loaded: [String: String] = [:]
            for (name, arguments) in [("help", ["--help"]), ("attention", ["thumb", messi, "-s", "120x240", "--smartcrop", "attention", "-o", out]),
                                      ("faces", ["thumb", messi, "-s", "120x240", "--smartcrop", "faces", "-o", out])] {
                let result = try await Imgpipe.run(arguments, environment: ["LD_DEBUG": "files"])
                try #require(result.status == 0, "\(name): \(result.stderr)")
                loaded[name] = result.stderr.split(separator: "\n").filter { $0.contains("file=") }.joined(separator: "\n")
            }
            for name in ["help", "attention"] {
                let files = try #require(loaded[name])
                #expect(files.contains("libjpeg"), "LD_DEBUG shows the loader's files: \(files)")
                #expect(!files.contains("libopencv") && !files.contains("libFaceDetectionOpenCV"), "\(name): \(files)")
            }
            let faces = try #require(loaded["faces"])
            #expect(faces.contains("libFaceDetectionOpenCV.so [0];  dynamically loaded by"), "\(faces)")
            #expect(faces.contains("file=libopencv_objdetect"), "\(faces)")
        }
    }

    /// A plugin that does not load (here `IMGPIPE_FACE_PLUGIN` names a file that is not a
    /// library) fails the face search with a message that names the file and how to build it.
    @Test(.enabled(if: FileManager.default.fileExists(atPath: FaceDetector.defaultCascade.path),
                   "opencv-data's cascade is not installed (scripts/bootstrap), and is checked first: skipped"))
    func aPluginThatDoesNotLoadNamesItselfAndHowToBuildIt() async throws {
        try await withTemporaryDirectory(prefix: "imgpipe-lazy") { (directory: URL) async throws in
            let source = directory.appendingPathComponent("in.png")
            try Self.subjectOnTheRight().write(to: source)
            let fake = directory.appendingPathComponent("libFaceDetectionOpenCV.so")
            try Data("not a library".utf8).write(to: fake)
            let result = try await Imgpipe.run(["thumb", source.path, "-s", "100x100", "--smartcrop", "faces",
                                                "-o", directory.appendingPathComponent("out.png").path],
                                               environment: [FaceDetector.pluginEnvironmentKey: fake.path])
            #expect(result.status == 1)
            #expect(result.stderr.contains("\(fake.path) did not load") && result.stderr.contains("swift build --product FaceDetectionOpenCV"),
                    "\(result.stderr)")
        }
    }

    @Test func serveSmartGravityIsAttentionOrFaces() async throws {
        let result = try await Imgpipe.run(["serve", "--smart-gravity", "eyes"])
        #expect(result.status == 2)
        #expect(result.stderr.contains("--smart-gravity needs attention or faces, got 'eyes'"), "\(result.stderr)")
    }

    @Test func smartcropNoneFitsInsideTheBox() async throws {
        try await withTemporaryDirectory(prefix: "imgpipe-crop") { (directory: URL) async throws in
            let source = directory.appendingPathComponent("subject.png")
            try Self.subjectOnTheRight().write(to: source)
            let out = directory.appendingPathComponent("out.pam")
            let result = try await Imgpipe.run(["thumb", source.path, "-s", "100x100", "--smartcrop", "none", "-o", out.path])
            try #require(result.status == 0, "\(result.stderr)")
            #expect(try pamPixels(out).count == 100 * 50 * 4, "fitted: 100 × 50")
        }
    }

    @Test(arguments: [
        (["-s", "100x100", "--smartcrop", "eyes"], "--smartcrop needs none, centre, attention, entropy or faces, got 'eyes'"),
        (["-s", "100x", "--smartcrop", "attention"], "--smartcrop crops to a box: give --size WxH or N, not one side only"),
        (["-s", "100x100", "--gravity", "up"], "--gravity needs centre, north, south, east, west"),
        (["-s", "100x100", "--focal", "1.5,0.5"], "--focal needs X,Y with each 0-1 of the picture"),
        (["-s", "100x100", "--crop", "--gravity", "east"], "give one of --smartcrop, --crop, --gravity and --focal, not --gravity and --crop"),
        (["--fill", "100x100", "--smartcrop", "none"], "--smartcrop none fits; it cannot go with --fill"),
    ])
    func badCropOptionsAreUsageErrors(_ options: [String], message: String) async throws {
        let result = try await Imgpipe.run(["thumb", "a.png"] + options + ["-o", "x.png"])
        #expect(result.status == 2)
        #expect(result.stderr.contains(message), "\(result.stderr)")
    }
}
