import CodecGIF
import Foundation
import GIFFixtureWriter
import PipelineCore
import PipelineTestSupport
import Testing

/// One GIF of the disposal matrix: a frame under test (disposal, transparency, rectangle,
/// palette) at the start of the animation or after an opaque full-canvas frame, alone or
/// followed by a second "restore to previous" frame, then a 1×1 frame that shows what the
/// disposal left behind.
struct DisposalCase: CustomStringConvertible, Sendable {
    enum Position: String, CaseIterable, Sendable {
        /// The frame under test is the first frame.
        case first
        /// It follows an opaque full-canvas frame kept on the canvas.
        case middle
        /// It follows that frame and is followed by a second "restore to previous" frame.
        case consecutive
        /// It is the first frame, followed by a second "restore to previous" frame.
        case firstConsecutive
    }
    enum Placement: String, CaseIterable, Sendable {
        case full, partial, partlyOutside, outside

        /// x, y, width, height on the 4×4 logical screen.
        var rect: (x: Int, y: Int, width: Int, height: Int) {
            switch self {
            case .full: (0, 0, 4, 4)
            case .partial: (1, 1, 2, 2)
            case .partlyOutside: (2, 1, 4, 2)
            case .outside: (5, 0, 2, 2)
            }
        }
    }

    static let screen = 4
    static let global: [(UInt8, UInt8, UInt8)] = [(255, 0, 0), (0, 0, 255), (0, 255, 0), (255, 255, 255), (255, 255, 0)]
    static let local: [(UInt8, UInt8, UInt8)] = [(0, 255, 255), (255, 0, 255), (128, 128, 128), (255, 128, 0), (10, 20, 30)]
    /// The index the frames under test mark transparent (when they have transparency).
    static let transparentIndex: UInt8 = 2

    var position: Position
    var disposal: Int
    var transparent: Bool
    var placement: Placement
    var localPalette: Bool

    var description: String {
        "\(position.rawValue)-d\(disposal)-\(transparent ? "transparent" : "opaque")-\(placement.rawValue)-\(localPalette ? "local" : "global")"
    }

    /// The 8 values of the disposal field (0–3 as GIF89a defines them, 4–7 "to be defined") ×
    /// transparency × 4 placements × local/global palette at the start and in the middle, and
    /// the consecutive-"previous" cases at both places: 288 files.
    static var all: [DisposalCase] {
        var cases: [DisposalCase] = []
        for position in Position.allCases {
            for disposal in 0...7 where disposal == 3 || position == .first || position == .middle {
                for transparent in [false, true] {
                    for placement in Placement.allCases {
                        for localPalette in [false, true] {
                            cases.append(DisposalCase(position: position, disposal: disposal, transparent: transparent,
                                                      placement: placement, localPalette: localPalette))
                        }
                    }
                }
            }
        }
        return cases
    }

    /// A checkerboard of `color` and index 2 (transparent when the frame has transparency).
    private func testFrame(_ rect: (x: Int, y: Int, width: Int, height: Int), disposal: Int, color: UInt8) -> GIFWriter.Frame {
        let indices = (0..<(rect.width * rect.height)).map { i in (i % rect.width + i / rect.width) % 2 == 0 ? color : 2 }
        return GIFWriter.Frame(x: rect.x, y: rect.y, width: rect.width, height: rect.height, indices: indices,
                               delayCentiseconds: 10, disposal: disposal,
                               transparentIndex: transparent ? Self.transparentIndex : nil,
                               localPalette: localPalette ? Self.local : nil)
    }

    /// The same file with every frame's rows stored interlaced (the composite must not change).
    var interlacedData: Data {
        let interlaced = frames.map { frame -> GIFWriter.Frame in
            var copy = frame
            copy.interlaced = true
            return copy
        }
        return GIFWriter.gif(width: Self.screen, height: Self.screen, palette: Self.global, loopCount: 0, frames: interlaced)
    }

    var frames: [GIFWriter.Frame] {
        var frames: [GIFWriter.Frame] = []
        if position == .middle || position == .consecutive {
            frames.append(GIFWriter.Frame(width: 4, height: 4, indices: [UInt8](repeating: 0, count: 16), delayCentiseconds: 10, disposal: 1))
        }
        frames.append(testFrame(placement.rect, disposal: disposal, color: 1))
        if position == .consecutive || position == .firstConsecutive {
            frames.append(testFrame((0, 0, 2, 2), disposal: 3, color: 4))
        }
        frames.append(GIFWriter.Frame(x: 3, y: 3, width: 1, height: 1, indices: [3], delayCentiseconds: 10, disposal: 1))
        return frames
    }

    var data: Data { GIFWriter.gif(width: Self.screen, height: Self.screen, palette: Self.global, loopCount: 0, frames: frames) }

    /// Where ImageMagick 6.9 `-coalesce` does not do what Chromium does, so the test does not
    /// hold our frames to ImageMagick's (only to ``ChromiumGIFCompositor``):
    /// - an opaque first frame that leaves part of the screen uncovered: ImageMagick and Pillow
    ///   fill the rest with the logical screen's background colour (index 0, red here);
    ///   Chromium starts from a transparent canvas (Wuffs' `quirk_honor_background_color` is off);
    /// - "restore to previous" on the first frame: ImageMagick and Pillow restore that
    ///   background colour (when the frame is opaque), Chromium the transparent canvas;
    /// - a first frame reaching past the logical screen: Chromium (Wuffs, and Blink's
    ///   GIFImageReader before it) and Pillow enlarge the canvas to contain it; ImageMagick
    ///   crops to the logical screen;
    /// - a frame wholly outside the screen: ImageMagick refuses the file ("width or height
    ///   exceeds limit"); Chromium enlarges the canvas to a first frame, clips a later one.
    /// - disposal 4: ImageMagick keeps the frame; Chromium restores the previous canvas.
    var magickDisagrees: Bool {
        if disposal == 4 { return true }
        let first = position == .first || position == .firstConsecutive
        guard first else { return placement == .outside }
        return placement == .partlyOutside || placement == .outside || (!transparent && (placement != .full || disposal == 3))
    }

    /// Where Pillow 9.4 (`ImageSequence`, each frame `convert("RGBA")`) does not do what Chromium
    /// does. It grows the canvas to the first frame and clips later ones as Chromium does, but:
    /// - an opaque first frame starts from the background colour (red here), not transparent,
    ///   and "previous" and "background" disposal of it go back to that colour;
    /// - "background" disposal of a later frame fills its rectangle with the background colour
    ///   (or, for a frame with transparency, the transparent index's colour, opaque) instead of
    ///   clearing it to transparent as Chromium and ImageMagick do;
    /// - disposal 5–7: Pillow restores the previous canvas; Chromium keeps the frame.
    var pillowDisagrees: Bool {
        if disposal >= 5 { return true }
        switch position {
        case .first, .firstConsecutive: return !transparent && (placement != .full || disposal >= 2)
        case .middle: return disposal == 2 && placement != .outside
        case .consecutive: return false
        }
    }
}

/// The compositing rule Chromium follows (GIF89a section 23 with the browsers' readings),
/// written from the spec for these tests and independent of the decoder under test:
/// - the canvas is the logical screen enlarged to contain the first frame's rectangle
///   (Wuffs `decode_id_part0`; Blink/Skia `GIFImageReader`: "For the first frame, we can
///   simply enlarge the image size"); later frames are clipped to it;
/// - it starts transparent black; each frame draws its pixels but the transparent index;
/// - before the next frame, disposal 2 clears the frame's (clipped) rectangle to transparent,
///   disposal 3 restores the canvas as it was before the frame was drawn (so a run of
///   "previous" frames restores to the last frame that was not one; on the first frame, to the
///   transparent canvas), 0 and 1 keep it; of the undefined values, 4 is "previous" (Wuffs
///   `decode_gc`: "some encoders also use 4 for restore previous", after Blink's
///   GIFImageReader) and 5–7 keep the frame.
enum ChromiumGIFCompositor {
    /// Every frame's canvas as straight RGBA8 (transparent pixels zero), and the canvas size.
    static func frames(_ gif: [GIFWriter.Frame], screen: Int, global: [(UInt8, UInt8, UInt8)]) -> (width: Int, height: Int, frames: [[UInt8]]) {
        guard let first = gif.first else { return (screen, screen, []) }
        let width = max(screen, first.x + first.width), height = max(screen, first.y + first.height)
        var canvas = [UInt8](repeating: 0, count: width * height * 4)
        var saved = canvas
        var pending: (disposal: Int, x0: Int, y0: Int, x1: Int, y1: Int)?
        var out: [[UInt8]] = []
        for frame in gif {
            if let pending {
                if pending.disposal == 2 {
                    for y in pending.y0..<pending.y1 {
                        for x in pending.x0..<pending.x1 { for c in 0..<4 { canvas[(y * width + x) * 4 + c] = 0 } }
                    }
                } else if pending.disposal == 3 || pending.disposal == 4 {
                    canvas = saved
                }
            }
            let palette = frame.localPalette ?? global
            let x0 = min(frame.x, width), x1 = min(frame.x + frame.width, width)
            let y0 = min(frame.y, height), y1 = min(frame.y + frame.height, height)
            if frame.disposal == 3 || frame.disposal == 4 { saved = canvas }
            for y in y0..<y1 {
                for x in x0..<x1 {
                    let index = frame.indices[(y - frame.y) * frame.width + x - frame.x]
                    if let transparent = frame.transparentIndex, index == transparent { continue }
                    let color = Int(index) < palette.count ? palette[Int(index)] : (0, 0, 0)
                    let offset = (y * width + x) * 4
                    canvas[offset] = color.0; canvas[offset + 1] = color.1; canvas[offset + 2] = color.2; canvas[offset + 3] = 255
                }
            }
            pending = (frame.disposal, x0, y0, x1, y1)
            out.append(canvas)
        }
        return (width, height, out)
    }
}

/// The full disposal matrix (``DisposalCase/all``, 288 GIFs written at test time) decoded frame
/// by frame and compared, exactly (no tolerance: GIF is lossless, alpha 0 or 255), with
/// ImageMagick's `-coalesce` and Pillow's frames of the same file where each agrees with
/// Chromium, and with the Chromium rule (``ChromiumGIFCompositor``) everywhere. Without
/// ImageMagick or Pillow the comparison with it is skipped, with a message.
@Suite("GIF disposal matrix", .timeLimit(.minutes(5)), .tags(.cpuBound))
struct GIFDisposalMatrixTests {
    static let convert = ["/usr/bin/convert", "/usr/local/bin/convert"].first(where: ExternalTool.exists)
    /// Debian's python3 when it has Pillow (`python3-pil`).
    static func pillow() async -> String? {
        guard ExternalTool.exists("/usr/bin/python3"), let run = try? await ExternalTool.run("/usr/bin/python3", ["-c", "import PIL"]),
              run.status == 0 else { return nil }
        return "/usr/bin/python3"
    }

    /// Every GIF of `folder` through Pillow in one run: per file, its frames as straight RGBA8
    /// with transparent pixels zeroed, and the canvas size.
    func pillowFrames(_ folder: URL, python: String) async throws -> [String: (width: Int, height: Int, frames: [[UInt8]])] {
        let script = """
            import os, sys
            from PIL import Image, ImageSequence
            folder = sys.argv[1]
            for name in sorted(os.listdir(folder)):
                if not name.endswith('.gif'): continue
                with Image.open(os.path.join(folder, name)) as im:
                    for frame in ImageSequence.Iterator(im):
                        rgba = frame.convert('RGBA')
                        b = bytearray(rgba.tobytes())
                        for i in range(0, len(b), 4):
                            if b[i + 3] == 0: b[i:i + 3] = bytes(3)
                        print(name[:-4], rgba.size[0], rgba.size[1], b.hex())
            """
        let run = try await ExternalTool.run(python, ["-c", script, folder.path])
        try #require(run.status == 0, "Pillow: \(run.stderr)")
        var out: [String: (width: Int, height: Int, frames: [[UInt8]])] = [:]
        for line in run.stdout.split(separator: "\n") {
            let fields = line.split(separator: " ")
            guard fields.count == 4, let width = Int(fields[1]), let height = Int(fields[2]) else { continue }
            let hex = Array(fields[3].utf8)
            var bytes = [UInt8](repeating: 0, count: hex.count / 2)
            func nibble(_ c: UInt8) -> UInt8 { c >= 97 ? c - 87 : c - 48 }
            for i in bytes.indices { bytes[i] = nibble(hex[2 * i]) << 4 | nibble(hex[2 * i + 1]) }
            let name = String(fields[0])
            var entry = out[name] ?? (width, height, [])
            entry.frames.append(bytes)
            out[name] = entry
        }
        return out
    }

    func decodedFrames(_ data: Data) throws -> [Bitmap] {
        let decoder = try GIFDecoder().makeAnimationDecoder(for: data, options: DecodeOptions())
        var frames: [Bitmap] = []
        while let frame = try decoder.nextFrame(size: nil) { frames.append(frame.bitmap) }
        return frames
    }

    /// ImageMagick's coalesced frames as straight RGBA8 with transparent pixels zeroed, or `nil`
    /// when it refuses the file.
    func magickFrames(_ file: URL, convert: String, in folder: URL) async throws -> [[UInt8]]? {
        let stem = file.deletingPathExtension().lastPathComponent
        let pattern = folder.appendingPathComponent("\(stem)-%d.rgba").path
        let run = try await ExternalTool.run(convert, [file.path, "-coalesce", "-depth", "8", pattern])
        guard run.status == 0 else { return nil }
        var frames: [[UInt8]] = []
        while let bytes = try? Data(contentsOf: folder.appendingPathComponent("\(stem)-\(frames.count).rgba")) {
            var pixels = [UInt8](bytes)
            var i = 0
            while i + 3 < pixels.count {
                if pixels[i + 3] == 0 { pixels[i] = 0; pixels[i + 1] = 0; pixels[i + 2] = 0 }
                i += 4
            }
            frames.append(pixels)
        }
        return frames
    }

    @Test func everyCaseMatchesChromiumAndImageMagickAndPillowWhereTheyAgree() async throws {
        var passed = 0, comparedWithMagick = 0, comparedWithPillow = 0
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("gif-disposal-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let cases = DisposalCase.all
        for item in cases { try item.data.write(to: folder.appendingPathComponent("\(item).gif")) }
        let python = await Self.pillow()
        var pillow: [String: (width: Int, height: Int, frames: [[UInt8]])]?
        if let python { pillow = try await pillowFrames(folder, python: python) }
        for item in cases {
            let data = item.data
            let reference = ChromiumGIFCompositor.frames(item.frames, screen: DisposalCase.screen, global: DisposalCase.global)
            var ok = true
            let ours = try decodedFrames(data)
            let oursBytes = ours.map(referenceBytes)
            if let first = ours.first, first.width == reference.width, first.height == reference.height {
                if oursBytes != reference.frames {
                    let bad = zip(oursBytes, reference.frames).enumerated().filter { $0.element.0 != $0.element.1 }.map(\.offset)
                    Issue.record("\(item): frames \(bad) differ from the Chromium rule (of \(reference.frames.count); we gave \(ours.count))")
                    ok = false
                }
            } else {
                Issue.record("\(item): canvas \(ours.first.map { "\($0.width)×\($0.height)" } ?? "none"), Chromium's is \(reference.width)×\(reference.height)")
                ok = false
            }
            if let pillow, !item.pillowDisagrees {
                comparedWithPillow += 1
                let theirs = pillow[item.description]
                if theirs?.frames != oursBytes || theirs?.width != reference.width || theirs?.height != reference.height {
                    Issue.record("\(item): Pillow's frames differ (\(theirs?.frames.count ?? -1) frames against our \(ours.count))")
                    ok = false
                }
                #expect(theirs?.frames == reference.frames, "\(item): Pillow and the Chromium rule disagree")
            }
            if let convert = Self.convert, !item.magickDisagrees {
                let file = folder.appendingPathComponent("\(item).gif")
                comparedWithMagick += 1
                let magick = try await magickFrames(file, convert: convert, in: folder)
                if magick != oursBytes {
                    Issue.record("\(item): ImageMagick's -coalesce differs (\(magick?.count ?? -1) frames against our \(ours.count))")
                    ok = false
                }
                // The matrix's claim: where the tools are not listed as disagreeing, ImageMagick is Chromium.
                #expect(magick == reference.frames, "\(item): ImageMagick and the Chromium rule disagree")
            }
            if try decodedFrames(item.interlacedData).map(referenceBytes) != oursBytes {
                Issue.record("\(item): the interlaced copy composites differently")
                ok = false
            }
            // The still picture is the first frame; a thumbnail of it is that frame resampled
            // (the streamed path draws on the same grown canvas).
            let still = try GIFDecoder().decode(data, options: DecodeOptions())
            let half = PixelSize(width: reference.width / 2, height: reference.height / 2)
            let thumb = try GIFDecoder().decode(data, options: DecodeOptions(targetSize: half))
            if let first = ours.first {
                if still.bitmap.unpremultipliedBytes() != first.unpremultipliedBytes() {
                    Issue.record("\(item): the still picture is not the first frame")
                    ok = false
                }
                if thumb.bitmap != Resampler.resample(first, to: half) {
                    Issue.record("\(item): the still thumbnail is not the first frame resampled")
                    ok = false
                }
            }
            if ok { passed += 1 }
        }
        if Self.convert == nil { print("GIF disposal matrix: ImageMagick's convert is absent: not compared with -coalesce") }
        if python == nil { print("GIF disposal matrix: /usr/bin/python3 has no Pillow (python3-pil): not compared with Pillow") }
        print("GIF disposal matrix: \(passed) of \(cases.count) cases pass (\(comparedWithMagick) also against ImageMagick -coalesce, "
              + "\(comparedWithPillow) against Pillow)")
        #expect(cases.count == 288)
    }
}
