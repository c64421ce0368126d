import CodecJPEG
import Foundation
import PipelineCore
import PipelineTestSupport
import Testing

private let vips = "/usr/bin/vips"

/// A requested rotation and flips (``ProcessingOptions/transform``) folded into the file's EXIF
/// orientation, against libvips doing the same steps one by one on the same file: `vips autorot`,
/// then `vips rot`, then `vips flip horizontal` (ImageMagick's `-flop`) and `vertical`
/// (`-flip`). Both decode with the system's libjpeg-turbo at full size and only move pixels, so
/// the pictures must be equal byte for byte.
@Suite(.enabled(if: Corpus.has("exif-orientation"), Corpus.missing("exif-orientation")),
       .enabled(if: ExternalTool.exists(vips), "vips is not installed (scripts/bootstrap installs libvips-tools)"),
       .tags(.cpuBound))
struct OrientationTransformTests {
    /// Every turn a request can ask for: 0–3 quarter turns clockwise, then flop and/or flip.
    static let turns: [(quarterTurns: Int, flop: Bool, flip: Bool)] =
        (0..<4).flatMap { turns in [(false, false), (true, false), (false, true), (true, true)].map { (turns, $0.0, $0.1) } }

    /// Every EXIF orientation × every rotation × every flip against vips.
    @Test(arguments: 1...8)
    func everyRotationAndFlipOfEveryEXIFOrientationMatchesVips(_ exif: Int) async throws {
        let data = try Corpus.data("exif-orientation", "Landscape_\(exif).jpg")
        #expect(try JPEGDecoder().readInfo(data).orientation.rawValue == exif)
        try await withTemporaryDirectory(prefix: "orientation") { directory in
            let source = Corpus.folder("exif-orientation").appendingPathComponent("Landscape_\(exif).jpg").path
            let upright = directory.appendingPathComponent("upright.v").path
            try await Self.vipsRun(["autorot", source, upright])
            for turn in Self.turns {
                let expected = try await Self.reference(upright, turn, in: directory)
                var options = DecodeOptions()
                options.transform = ImageOrientation(quarterTurnsClockwise: turn.quarterTurns, flop: turn.flop, flip: turn.flip)
                let ours = try JPEGDecoder().decode(data, options: options).bitmap
                #expect(ours.size == expected.size, "EXIF \(exif), \(turn): size")
                #expect(ours == expected, "EXIF \(exif), \(turn): mean difference \(Fixtures.meanDifference(ours, expected))")
            }
        }
    }

    /// `appliesOrientation: false` with a turn: the file's orientation counts as `up`, the turn
    /// applies to the stored pixels (`vips rot` on the file as stored).
    @Test(arguments: [6, 3, 5])
    func withoutTheFilesOrientationTheTurnAppliesToTheStoredPixels(_ exif: Int) async throws {
        let data = try Corpus.data("exif-orientation", "Landscape_\(exif).jpg")
        try await withTemporaryDirectory(prefix: "orientation") { directory in
            let stored = directory.appendingPathComponent("stored.v").path
            try await Self.vipsRun(["copy", Corpus.folder("exif-orientation").appendingPathComponent("Landscape_\(exif).jpg").path, stored])
            let expected = try await Self.reference(stored, (1, true, false), in: directory)
            var options = DecodeOptions(appliesOrientation: false)
            options.transform = ImageOrientation(quarterTurnsClockwise: 1, flop: true)
            let ours = try JPEGDecoder().decode(data, options: options).bitmap
            #expect(ours == expected, "mean difference \(Fixtures.meanDifference(ours, expected))")
        }
    }

    /// Through the pipeline at thumbnail size: the fill's target, crop and anchor are computed
    /// on the turned picture. The reference is vips's full-size turn, filled by the same plan
    /// (the pipeline's decode is DCT-scaled first, hence the tolerance: a mean difference under
    /// 3 of 255 where the other anchor's window differs by over 10).
    @Test func aFillCropsTheTurnedPictureAtItsAnchor() async throws {
        let data = try Corpus.data("exif-orientation", "Landscape_6.jpg")
        let pipeline = ImagePipeline(configuration: .init(
            decoders: DecoderRegistry().registering(JPEGDecoder()),
            loaders: LoaderRegistry().registering(MemoryLoader(files: ["photo": data]))))
        let url = try #require(URL(string: "memory://photo"))
        let box = PixelSize(width: 120, height: 40)
        var request = ImageRequest(url: url, targetSize: .pixels(box), contentMode: .fill, cropAnchor: .top)
        // EXIF 6 stores the 1800 × 1200 landscape as a portrait; upright and a further quarter
        // turn, it is a 1200 × 1800 portrait, which the 3:1 box crops top to bottom.
        request.processing.transform = ImageOrientation(quarterTurnsClockwise: 1)
        let response = try await pipeline.image(for: request)
        #expect(response.bitmap.size == box)
        try await withTemporaryDirectory(prefix: "orientation") { directory in
            let upright = directory.appendingPathComponent("upright.v").path
            try await Self.vipsRun(["autorot", Corpus.folder("exif-orientation").appendingPathComponent("Landscape_6.jpg").path, upright])
            let turned = try await Self.reference(upright, (1, false, false), in: directory)
            #expect(turned.size == PixelSize(width: 1200, height: 1800), "the turned picture is a portrait")
            func filled(_ anchor: CropAnchor) -> Bitmap {
                let plan = ResizePlan(source: turned.size, target: .pixels(box), contentMode: .fill, anchor: anchor)
                return Resampler.resample(turned, plan: plan)
            }
            let atTop = Fixtures.meanDifference(response.bitmap, filled(.top))
            let atBottom = Fixtures.meanDifference(response.bitmap, filled(.bottom))
            #expect(atTop < 3, "mean difference \(atTop) from vips's turn filled at the top")
            #expect(atBottom > 10, "the bottom window differs by \(atBottom): the anchor matters here")
        }
        // The turn is part of the key: the untransformed request is another picture.
        var plain = request
        plain.processing.transform = .up
        #expect(pipeline.key(for: plain) != pipeline.key(for: request))
        #expect(try await pipeline.image(for: plain).bitmap != response.bitmap)
    }

    /// `path` turned by vips: `rot`, then `flip horizontal`, then `flip vertical`, as PPM.
    static func reference(_ path: String, _ turn: (quarterTurns: Int, flop: Bool, flip: Bool), in directory: URL) async throws -> Bitmap {
        let name = "\(turn.quarterTurns)\(turn.flop ? "h" : "")\(turn.flip ? "v" : "")"
        var current = path
        if turn.quarterTurns != 0 {
            let rotated = directory.appendingPathComponent("r\(name).v").path
            try await vipsRun(["rot", current, rotated, "d\(turn.quarterTurns * 90)"])
            current = rotated
        }
        if turn.flop {
            let flopped = directory.appendingPathComponent("h\(name).v").path
            try await vipsRun(["flip", current, flopped, "horizontal"])
            current = flopped
        }
        if turn.flip {
            let flipped = directory.appendingPathComponent("v\(name).v").path
            try await vipsRun(["flip", current, flipped, "vertical"])
            current = flipped
        }
        let ppm = directory.appendingPathComponent("\(name).ppm")
        try await vipsRun(["copy", current, ppm.path])
        return try #require(Fixtures.ppm(try Data(contentsOf: ppm)))
    }

    static func vipsRun(_ arguments: [String]) async throws {
        let outcome = try await ExternalTool.run(vips, arguments)
        #expect(outcome.status == 0, "vips \(arguments.joined(separator: " ")): \(outcome.stderr)")
    }
}
