import Foundation
import ImagePipelineKit
@testable import ImageServer
import PipelineCore
import PipelineTestSupport
import Testing

/// `g:sm` crops at ``ImageServer/Configuration/smartAnchor``: attention by default, a detecting
/// anchor (faces, in `imgpipe serve --smart-gravity faces`) when configured, with its own key.
@Suite("Smart gravity anchor", .timeLimit(.minutes(2)))
struct SmartAnchorTests {
    /// Finds the dull green square (the test's stand-in for a face, too flat and dull for
    /// attention): its bounding box.
    struct GreenDetector: CropRegionDetecting {
        var identifier: String { "green" }
        func regions(in bitmap: Bitmap) throws -> [PixelRect] {
            var box: (x0: Int, y0: Int, x1: Int, y1: Int)?
            for y in 0..<bitmap.height {
                for x in 0..<bitmap.width {
                    let p = bitmap.pixel(x: x, y: y)
                    guard abs(Int(p.r) - 110) < 6, abs(Int(p.g) - 140) < 6, abs(Int(p.b) - 110) < 6 else { continue }
                    box = box.map { (min($0.x0, x), min($0.y0, y), max($0.x1, x), max($0.y1, y)) } ?? (x, y, x, y)
                }
            }
            return box.map { [PixelRect(x: Double($0.x0), y: Double($0.y0), width: Double($0.x1 - $0.x0 + 1), height: Double($0.y1 - $0.y0 + 1))] }
                ?? []
        }
    }

    /// 400 × 200 grey: a dull green square at 20–60 (the "face") and a red and yellow checker at
    /// 300–360 (what attention keeps), filled into 100 × 100 (a 200 × 200 window).
    static func picture(in folder: URL) throws -> URL {
        let url = try RenderFixture.writePicture(PixelSize(width: 400, height: 200), name: "two.png") { x, y in
            if (20..<60).contains(x), (80..<120).contains(y) { return (110, 140, 110, 255) }
            if (300..<360).contains(x), (70..<130).contains(y) { return (x / 4 + y / 4) % 2 == 0 ? (250, 220, 30, 255) : (220, 20, 30, 255) }
            return (128, 128, 128, 255)
        }
        let moved = folder.appendingPathComponent("two.png")
        try FileManager.default.moveItem(at: url, to: moved)
        return moved
    }

    static func server(root: URL, smartAnchor: CropAnchor?) throws -> ImageServer {
        let pipeline = ImagePipeline(configuration: .init(decoders: RenderFixture.decoders,
                                                          loaders: LoaderRegistry([try RootedFileLoader(root: root)])))
        var configuration = ImageServer.Configuration(pipeline: pipeline, encoders: .standard)
        configuration.timeout = 300  // no deadline a starved test machine reaches
        if let smartAnchor { configuration.smartAnchor = smartAnchor }
        return ImageServer(configuration: configuration)
    }

    /// Whether the 100 × 100 PNG shows green (the left window) or red (the right one).
    static func shows(_ data: Data) throws -> (green: Bool, red: Bool) {
        let bitmap = try RenderFixture.decode(data).bitmap
        var green = false, red = false
        for y in 0..<bitmap.height {
            for x in 0..<bitmap.width {
                let p = bitmap.pixel(x: x, y: y)
                if Int(p.g) - Int(p.r) > 20 { green = true }
                if p.r > 180, p.g < 90 { red = true }
            }
        }
        return (green, red)
    }

    @Test func smCropsAtTheConfiguredAnchor() async throws {
        try await withTemporaryDirectory(prefix: "smart-anchor") { folder in
            _ = try Self.picture(in: folder)
            let path = "/insecure/rs:fill:100:100/g:sm/plain/local:///two.png@png"
            let attention = try await Self.server(root: folder, smartAnchor: nil).respond(to: ServerRequest(path: path))
            let detected = try await Self.server(root: folder, smartAnchor: .detected(by: GreenDetector()))
                .respond(to: ServerRequest(path: path))
            #expect(attention.status == 200 && detected.status == 200)
            let (attentionGreen, attentionRed) = try Self.shows(attention.body)
            #expect(!attentionGreen && attentionRed, "attention keeps the checker")
            let (detectedGreen, detectedRed) = try Self.shows(detected.body)
            #expect(detectedGreen && !detectedRed, "the detector's square is kept")
            #expect(attention.headers["ETag"] != detected.headers["ETag"], "another anchor, another result key")
        }
    }

    @Test func onlySmTakesTheConfiguredAnchor() throws {
        let green = CropAnchor.detected(by: GreenDetector())
        func options(_ text: String) throws -> RenderOptions {
            try ImgproxyURL.parse("/insecure/\(text)/plain/local:///a.png", signing: URLSigning(), presets: Presets()).options
                .withSmartAnchor(green)
        }
        #expect(try options("rs:fill:10:10/g:sm").gravity.anchor == green)
        #expect(try options("rs:fill:10:10/g:sm").canonical != (try options("rs:fill:10:10/g:ce").canonical))
        #expect(try options("rs:fill:10:10/g:sm").canonical.contains("detected"))
        #expect(try options("rs:fill:10:10/g:ea").gravity.anchor == .right)
        #expect(try options("rs:fill:10:10").gravity.anchor == .center)
    }
}
