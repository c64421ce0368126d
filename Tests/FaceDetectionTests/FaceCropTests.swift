import CodecJPEG
import CodecPNG
import FaceDetection
import Foundation
import LoaderFile
import PipelineCore
import PipelineTestSupport
import Testing

/// `.faces` on photographs of people from Debian's `opencv-doc`: the faces OpenCV finds in the
/// whole picture are inside the fill's window whenever they fit in it, for several aspect
/// ratios and for crops of the photographs that put the faces near an edge.
@Suite("Face crops")
struct FaceCropTests {
    static let examples = URL(fileURLWithPath: "/usr/share/doc/opencv-doc/examples/data")
    static let hasPictures = FileManager.default.fileExists(atPath: examples.appendingPathComponent("messi5.jpg").path)
        && FileManager.default.fileExists(atPath: FaceDetector.defaultCascade.path)
    static let missing: Comment = "opencv-doc's pictures or opencv-data's cascade are not installed (scripts/bootstrap): skipped"

    static func pipeline() -> ImagePipeline {
        ImagePipeline(configuration: .init(decoders: DecoderRegistry([JPEGDecoder(), PNGDecoder()]),
                                           loaders: LoaderRegistry([FileDataLoader()])))
    }

    /// The picture at `url` decoded whole and upright.
    static func decoded(_ url: URL) throws -> Bitmap {
        let data = try Data(contentsOf: url)
        let decoder: any ImageDecoding = url.pathExtension == "png" ? PNGDecoder() : JPEGDecoder()
        return try decoder.decode(data, options: DecodeOptions()).bitmap.premultiplied()
    }

    /// Where the pipeline's `size` fill of `url` with `anchor` took its window from, in source
    /// pixels: the fill found by its least absolute difference in the whole picture at the same
    /// (cover) scale, along the axis with slack. Exact to one output pixel (the crop is
    /// resampled at a fractional offset).
    static func window(_ url: URL, source: PixelSize, size: PixelSize, anchor: CropAnchor, pipeline: ImagePipeline)
        async throws -> PixelRect {
        let fill = try await pipeline.image(for: ImageRequest(url: url, targetSize: .pixels(size), contentMode: .fill, cropAnchor: anchor))
        let scale = max(Double(size.width) / Double(source.width), Double(size.height) / Double(source.height))
        let cover = PixelSize(width: Int((Double(source.width) * scale).rounded()), height: Int((Double(source.height) * scale).rounded()))
        let whole = try await pipeline.image(for: ImageRequest(url: url, targetSize: .pixels(cover), contentMode: .fit))
        let (a, b) = (fill.bitmap, whole.bitmap)
        var best = (x: 0, y: 0, difference: Int.max)
        for dy in 0...(b.height - a.height) {
            for dx in 0...(b.width - a.width) {
                var difference = 0
                for y in stride(from: 0, to: a.height, by: 4) {
                    for x in stride(from: 0, to: a.width, by: 4) {
                        let p = a.pixel(x: x, y: y), q = b.pixel(x: x + dx, y: y + dy)
                        difference += abs(Int(p.r) - Int(q.r)) + abs(Int(p.g) - Int(q.g)) + abs(Int(p.b) - Int(q.b))
                    }
                }
                if difference < best.difference { best = (dx, dy, difference) }
            }
        }
        let sx = Double(b.width) / Double(source.width), sy = Double(b.height) / Double(source.height)
        return PixelRect(x: Double(best.x) / sx, y: Double(best.y) / sy, width: Double(a.width) / sx, height: Double(a.height) / sy)
    }

    static func contains(_ window: PixelRect, _ face: PixelRect, slack: Double) -> Bool {
        face.x >= window.x - slack && face.y >= window.y - slack && face.x + face.width <= window.x + window.width + slack
            && face.y + face.height <= window.y + window.height + slack
    }

    /// The pictures: two photographs, and crops of each placing its largest face near each edge
    /// (a quarter of the face's width from it), as PNG files in `directory`.
    static func pictures(in directory: URL) throws -> [(name: String, url: URL)] {
        var list: [(String, URL)] = []
        for name in ["messi5.jpg", "basketball1.png"] {
            let url = examples.appendingPathComponent(name)
            list.append((name, url))
            let picture = try decoded(url)
            let faces = try FaceDetector.shared.faces(in: picture)
            let face = try #require(faces.max { $0.width * $0.height < $1.width * $1.height }, "OpenCV finds a face in \(name)")
            let margin = (face.width / 4).rounded(), (w, h) = (Double(picture.width), Double(picture.height))
            let crops: [(String, PixelRect)] = [
                ("left", PixelRect(x: face.x - margin, y: 0, width: w - face.x + margin, height: h)),
                ("right", PixelRect(x: 0, y: 0, width: face.x + face.width + margin, height: h)),
                ("top", PixelRect(x: 0, y: face.y - margin, width: w, height: h - face.y + margin)),
                ("bottom", PixelRect(x: 0, y: 0, width: w, height: face.y + face.height + margin)),
            ]
            for (edge, rect) in crops {
                let file = directory.appendingPathComponent("\(name)-\(edge).png")
                try PNGEncoder().encode(try ImageProcessor.crop(rect).process(picture).straightened()).write(to: file)
                list.append(("\(name) near the \(edge)", file))
            }
        }
        return list
    }

    /// The fill of `source` at aspect ratio `ratio` (width / height) whose scale is 0.7: faces of
    /// 40 pixels stay above the cascade's 20-pixel window in the decoder's shrunk picture.
    static func target(_ source: PixelSize, ratio: Double) -> PixelSize {
        let (w, h) = (Double(source.width), Double(source.height))
        let window = w / h > ratio ? (width: h * ratio, height: h) : (width: w, height: w / ratio)
        return PixelSize(width: max(1, Int((window.width * 0.7).rounded())), height: max(1, Int((window.height * 0.7).rounded())))
    }

    @Test(.enabled(if: hasPictures, missing))
    func everyFaceThatFitsIsInsideTheFillWindowAtEveryAspectRatioAndNearEveryEdge() async throws {
        let directory = try TemporaryDirectory(prefix: "FaceCropTests")
        defer { directory.remove() }
        let pipeline = Self.pipeline()
        var centredMisses = 0, cases = 0
        for (name, url) in try Self.pictures(in: directory.url) {
            let picture = try Self.decoded(url)
            let faces = try FaceDetector.shared.faces(in: picture)
            #expect(!faces.isEmpty, "\(name): OpenCV finds a face in the whole picture")
            for ratio in [1.0, 0.5, 16.0 / 9] {
                let size = Self.target(picture.size, ratio: ratio)
                let window = try await Self.window(url, source: picture.size, size: size, anchor: .faces, pipeline: pipeline)
                // One output pixel (1 / 0.7 source pixels) for the window's search, one for rounding.
                let slack = 2 / 0.7
                guard window.width < Double(picture.width) - slack || window.height < Double(picture.height) - slack else { continue }
                cases += 1
                let fitting = SmartCropCheck.fittingFaces(faces, window: window)
                for face in fitting {
                    #expect(Self.contains(window, face, slack: slack), "\(name) at \(size): face \(face) outside window \(window)")
                }
                let centred = ResizePlan(source: picture.size, target: .pixels(size), contentMode: .fill).crop
                if fitting.contains(where: { !Self.contains(centred, $0, slack: 0) }) { centredMisses += 1 }
            }
        }
        #expect(cases >= 20)
        #expect(centredMisses >= 8, "the crops put faces where a centred window misses them (\(centredMisses) of \(cases))")
    }
}

/// Where there is no face, the window is attention's; detector failures are typed errors that
/// fail the request; one detector serves concurrent searches.
@Suite("Face detector")
struct FaceDetectorTests {
    @Test(.enabled(if: FaceCropTests.hasPictures, FaceCropTests.missing))
    func withoutAFaceTheCropIsAttentions() async throws {
        let url = FaceCropTests.examples.appendingPathComponent("fruits.jpg")
        #expect(try FaceDetector.shared.faces(in: FaceCropTests.decoded(url)).isEmpty)
        let pipeline = FaceCropTests.pipeline()
        for size in [PixelSize(width: 100, height: 200), PixelSize(width: 240, height: 120)] {
            let faces = try await pipeline.image(for: ImageRequest(url: url, targetSize: .pixels(size), contentMode: .fill, cropAnchor: .faces))
            let attention = try await pipeline.image(for: ImageRequest(url: url, targetSize: .pixels(size), contentMode: .fill,
                                                                       cropAnchor: .attention))
            let centre = try await pipeline.image(for: ImageRequest(url: url, targetSize: .pixels(size), contentMode: .fill))
            #expect(faces.bitmap == attention.bitmap)
            #expect(faces.bitmap != centre.bitmap, "attention moved the window, so the comparison can fail")
        }
    }

    @Test func aMissingCascadeNamesItsPackageAndFailsTheRequest() async throws {
        let missing = URL(fileURLWithPath: "/nonexistent/haarcascade_frontalface_alt.xml")
        let detector = FaceDetector(cascade: missing)
        let error = try #require(throws: FaceDetectionError.self) { try detector.load() }
        #expect(error.kind == .missingCascade && error.description.contains("opencv-data"), "\(error)")
        #expect(throws: FaceDetectionError.self) { try detector.faces(in: Bitmap(zeroed: PixelSize(width: 64, height: 64))) }
        // Through the pipeline: the request fails (not a silent fallback to attention).
        try await withTemporaryDirectory { directory in
            let file = directory.appendingPathComponent("grey.png")
            try PNGEncoder().encode(Bitmap(zeroed: PixelSize(width: 80, height: 40), pixelFormat: .rgba8Straight)).write(to: file)
            let request = ImageRequest(url: file, targetSize: .pixels(PixelSize(width: 20, height: 20)), contentMode: .fill,
                                       cropAnchor: .detected(by: detector))
            await #expect(throws: (any Error).self) { try await FaceCropTests.pipeline().image(for: request) }
        }
    }

    @Test func aFileThatIsNotACascadeIsATypedError() throws {
        let directory = try TemporaryDirectory(prefix: "FaceDetectorTests")
        defer { directory.remove() }
        for (name, text) in [("garbage.xml", "not a cascade"), ("empty.xml", ""), ("other.xml", "<?xml version=\"1.0\"?><opencv_storage></opencv_storage>")] {
            let file = directory.url.appendingPathComponent(name)
            try Data(text.utf8).write(to: file)
            let error = try #require(throws: FaceDetectionError.self) { try FaceDetector(cascade: file).load() }
            #expect(error.kind == .unreadableCascade, "\(name): \(error)")
        }
    }

    @Test(.enabled(if: FileManager.default.fileExists(atPath: FaceDetector.defaultCascade.path), "opencv-data is not installed: skipped"))
    func tinyAndBlankPicturesHaveNoFaceAndParametersAreBounded() throws {
        for side in [1, 2, 19, 20, 64] {
            #expect(try FaceDetector.shared.faces(in: Bitmap(zeroed: PixelSize(width: side, height: side))).isEmpty, "\(side)")
        }
        #expect(try FaceDetector.shared.faces(in: Bitmap(zeroed: PixelSize(width: 1, height: 3000))).isEmpty)
        let wild = FaceDetector(scaleFactor: .nan, minNeighbors: -5)
        #expect(wild.scaleFactor == 1.1 && wild.minNeighbors == 0)
        #expect(FaceDetector(scaleFactor: 1, minNeighbors: 1000).scaleFactor == 1.01)
        #expect(FaceDetector(scaleFactor: 1, minNeighbors: 1000).minNeighbors == 50)
        #expect(CropAnchor.faces == .detected(by: FaceDetector()), "the same cascade and parameters: the same key")
        #expect(CropAnchor.faces != .detected(by: FaceDetector(minNeighbors: 5)))
    }

    @Test(.enabled(if: FaceCropTests.hasPictures, FaceCropTests.missing))
    func concurrentSearchesOfOneDetectorAgree() async throws {
        let picture = try FaceCropTests.decoded(FaceCropTests.examples.appendingPathComponent("messi5.jpg"))
        let detector = FaceDetector()
        let expected = try detector.faces(in: picture)
        #expect(!expected.isEmpty)
        let results = try await withThrowingTaskGroup(of: [PixelRect].self) { group in
            for _ in 0..<6 { group.addTask { try detector.faces(in: picture) } }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        #expect(results.count == 6 && results.allSatisfy { $0 == expected })
    }
}

/// Which detected faces a window could hold: all of them when their union fits in its size,
/// else the largest (when it fits alone), the rule ``PipelineCore/CropAnchor/detected(by:fallback:)`` follows.
enum SmartCropCheck {
    static func fittingFaces(_ faces: [PixelRect], window: PixelRect) -> [PixelRect] {
        let left = faces.map(\.x).min() ?? 0, top = faces.map(\.y).min() ?? 0
        let right = faces.map { $0.x + $0.width }.max() ?? 0, bottom = faces.map { $0.y + $0.height }.max() ?? 0
        if right - left <= window.width, bottom - top <= window.height { return faces }
        guard let largest = faces.max(by: { $0.width * $0.height < $1.width * $1.height }),
              largest.width <= window.width, largest.height <= window.height else { return [] }
        return [largest]
    }
}
