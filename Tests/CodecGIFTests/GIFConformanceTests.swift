import CodecGIF
import Foundation
import GIFFixtureWriter
import PipelineCore
import PipelineTestSupport
import Testing

/// `frames.json` of a corpus folder: per valid file its canvas, loop count and per frame the
/// md5 of the composited canvas (straight RGBA8, transparent pixels zeroed) and stored delay.
struct FrameReferences: Decodable {
    struct Frame: Decodable {
        var md5: String
        var delay_ms: Int?
    }
    struct File: Decodable {
        var width: Int
        var height: Int
        var loop: Int?
        var frames: [Frame]
    }
    var valid: [String: File]
    var invalid: [String]

    static func load(_ folder: String) throws -> FrameReferences {
        try JSONDecoder().decode(FrameReferences.self, from: Corpus.data(folder, "frames.json"))
    }
}


/// The md5 of a frame the way `frames.json` lists it.
func referenceMD5(_ bitmap: Bitmap) -> String { MD5.hex(referenceBytes(bitmap)) }

/// md5 sums of equal-sized frames through one `python3` (hashlib), fed frame by frame as they
/// are decoded: the Swift MD5 of a debug build takes a minute for the 639 frames of the two
/// big animations, and nothing accumulates here (a test holding hundreds of MB would upset
/// the memory measurements of tests running beside it).
final class FrameHasher {
    private let child: ExternalTool.Child

    init(frameLength: Int) throws {
        child = try ExternalTool.Child("/usr/bin/env", ["python3", "-c", """
            import hashlib, sys
            sums = []
            while True:
                frame = sys.stdin.buffer.read(\(frameLength))
                if not frame: break
                sums.append(hashlib.md5(frame).hexdigest())
            print("\\n".join(sums))
            """])
    }

    /// Sends one frame's bytes.
    func add(_ bytes: [UInt8]) throws { try child.standardInput.write(contentsOf: Data(bytes)) }

    /// The sums, in order.
    func finish() throws -> [String] {
        String(decoding: child.finish(), as: UTF8.self).split(separator: "\n").map(String.init)
    }
}

/// Every frame of every valid GIF against the corpus md5s; damaged files end in a typed error.
@Suite(.enabled(if: Corpus.has("gif"), Corpus.missing("gif")), .tags(.cpuBound))
struct GIFConformanceTests {
    @Test func everyFrameOfEveryValidFileMatches() throws {
        let references = try FrameReferences.load("gif")
        #expect(references.valid.count >= 15)
        for (name, reference) in references.valid.sorted(by: { $0.key < $1.key }) {
            let data = try Corpus.data("gif", name)
            let info = try GIFDecoder().readInfo(data)
            #expect(info.size == PixelSize(width: reference.width, height: reference.height), "\(name)")
            #expect(info.frameCount == reference.frames.count, "\(name)")
            let decoder = try GIFDecoder().makeAnimationDecoder(for: data, options: DecodeOptions())
            #expect(decoder.animationInfo.loopCount == reference.loop, "\(name) loop count")
            var index = 0
            let hasher = try FrameHasher(frameLength: reference.width * reference.height * 4)
            while let frame = try decoder.nextFrame(size: nil) {
                guard index < reference.frames.count else { Issue.record("\(name): more frames than listed"); break }
                try hasher.add(frame.bitmap.bytes)  // GIF pixels are opaque or zero: straight and premultiplied at once
                #expect(frame.delayMilliseconds == reference.frames[index].delay_ms, "\(name) frame \(index) delay")
                index += 1
            }
            #expect(index == reference.frames.count, "\(name): \(index) frames decoded")
            #expect(try hasher.finish() == reference.frames.prefix(index).map(\.md5), "\(name) frames")
            // The still picture is the first frame.
            let still = try GIFDecoder().decode(data, options: DecodeOptions())
            #expect(referenceMD5(still.bitmap) == reference.frames[0].md5, "\(name) still")
            // Asked for straight: the bytes themselves are the reference's (no conversion).
            let straight = try GIFDecoder().decode(data, options: DecodeOptions(pixelFormat: .rgba8Straight)).bitmap
            #expect(straight.pixelFormat == .rgba8Straight && MD5.hex(straight.bytes) == reference.frames[0].md5, "\(name) straight still")
        }
    }

    @Test func damagedFilesEndInATypedErrorOrAPictureWithinASecond() throws {
        let references = try FrameReferences.load("gif")
        #expect(!references.invalid.isEmpty)
        for name in references.invalid {
            let data = try Corpus.data("gif", name)
            let start = ContinuousClock.now
            do {
                _ = try GIFDecoder().decode(data, options: DecodeOptions())
            } catch let error as ImagePipelineError {
                #expect(!error.description.isEmpty, "\(name)")
            }
            do {
                let decoder = try GIFDecoder().makeAnimationDecoder(for: data, options: DecodeOptions())
                while try decoder.nextFrame(size: nil) != nil {}
            } catch let error as ImagePipelineError {
                #expect(!error.description.isEmpty, "\(name)")
            }
            // The issue's bound is a second (each takes milliseconds alone); the test allows a
            // starved 2-core machine 60 s, which still catches an endless loop of blocks.
            #expect(ContinuousClock.now - start < .seconds(60), "\(name) took \(ContinuousClock.now - start)")
        }
    }

    @Test func truncatedAtEveryLengthNeverCrashes() throws {
        let data = try Corpus.data("gif", "anim-gr.gif")
        for length in 0..<data.count {
            let cut = data.prefix(length)
            do {
                let decoder = try GIFDecoder().makeAnimationDecoder(for: cut, options: DecodeOptions())
                while try decoder.nextFrame(size: nil) != nil {}
            } catch is ImagePipelineError {}
            do { _ = try GIFDecoder().decode(cut, options: DecodeOptions()) } catch is ImagePipelineError {}
        }
    }

    @Test func aGigapixelCanvasIsRefusedBeforeAllocating() throws {
        var bytes = Array("GIF89a".utf8) + [0xFF, 0xFF, 0xFF, 0xFF, 0, 0, 0]
        bytes += [0x2C, 0, 0, 0, 0, 1, 0, 1, 0, 0, 2, 2, 0x4C, 0x01, 0, 0x3B]
        let data = Data(bytes)
        #expect(throws: ImagePipelineError.self) { try GIFDecoder().decode(data, options: DecodeOptions()) }
        #expect(throws: ImagePipelineError.self) { try GIFDecoder().makeAnimationDecoder(for: data, options: DecodeOptions()) }
    }

    /// A thumbnail streams the first frame's rows through the resampler: exactly the full first
    /// frame resampled, for interlaced frames and sub-rectangles too.
    @Test(arguments: ["test.gif", "interlaced.gif", "moon_impact.gif", "gifplayer-muybridge.gif", "alpha_gif_a.gif"])
    func stillThumbnailIsTheFirstFrameResampled(name: String) throws {
        let data = try Corpus.data("gif", name)
        let full = try GIFDecoder().decode(data, options: DecodeOptions())
        let target = PixelSize(width: max(1, full.bitmap.width / 5), height: max(1, full.bitmap.height / 5))
        let thumb = try GIFDecoder().decode(data, options: DecodeOptions(targetSize: target))
        #expect(thumb.bitmap.size == target)
        #expect(thumb.bitmap == Resampler.resample(full.bitmap, to: target), "\(name)")
    }

    @Test func aSmallFrameOnALargeCanvasThumbnailsWithoutTheCanvas() async throws {
        let data = GIFWriter.gif(width: 3000, height: 3000, palette: [(255, 0, 0)], frames: [
            .init(x: 1000, y: 1000, width: 10, height: 10, indices: [UInt8](repeating: 0, count: 100)),
        ])
        try await ResidentMemory.exclusively {
            // Least of 7 runs (other suites allocate in this process); the canvas alone is 36 MB.
            let growth = try #require(try ResidentMemory.peakGrowth {
                // The area average: the 10×10 frame is exactly output pixel (100, 100).
                let thumb = try GIFDecoder().decode(data, options: DecodeOptions(targetSize: PixelSize(width: 300, height: 300),
                                                                                  resamplingFilter: .areaAverage))
                #expect(thumb.bitmap.pixel(x: 100, y: 100).a == 255 && thumb.bitmap.pixel(x: 0, y: 0).a == 0)
            }, "cannot measure the peak RSS on this system")
            #expect(growth < 24_000_000, "a 300×300 thumbnail of a 36 MB canvas grew the peak by \(growth) bytes")
        }
    }

    /// All 380 frames of the Muybridge GIF: the peak grows by a few canvases, not 380.
    @Test func muybridgeMemoryStaysBounded() async throws {
        let data = try Corpus.data("gif", "gifplayer-muybridge.gif")
        try await ResidentMemory.exclusively {
            var frames = 0
            let growth = try #require(try ResidentMemory.peakGrowth(attempts: 3) {
                let decoder = try GIFDecoder().makeAnimationDecoder(for: data, options: DecodeOptions())
                frames = 0
                while try decoder.nextFrame(size: nil) != nil { frames += 1 }
            }, "cannot measure the peak RSS on this system")
            let canvas = 472 * 298 * 4
            print("muybridge: \(frames) frames, peak RSS growth \(growth) bytes (\(growth / canvas) canvases of \(canvas))")
            #expect(frames == 380)
            #expect(growth < 100 * canvas, "all frames grew the peak by \(growth) bytes")  // 380 bitmaps would be 380 canvases; a starved run beside other suites adds some
        }
    }
}
