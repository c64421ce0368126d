import CodecGIF
import CodecPNG
import CodecWebP
import Foundation
import LoaderFile
import PipelineCore
import PipelineTestSupport
import Testing

/// Animated WebP through `WebPAnimDecoder` against the corpus md5s, and the pipeline's
/// `animation(for:)` over real files.
@Suite(.tags(.cpuBound))
struct AnimationTests {
    @Test(.enabled(if: Corpus.has("webp-animated"), Corpus.missing("webp-animated")))
    func everyFrameOfEveryAnimatedWebPMatches() throws {
        let references = try FrameReferences.load("webp-animated")
        #expect(references.valid.count >= 5)
        for (name, reference) in references.valid.sorted(by: { $0.key < $1.key }) {
            let data = try Corpus.data("webp-animated", name)
            let decoder = try WebPDecoder().makeAnimationDecoder(for: data, options: DecodeOptions())
            let info = decoder.animationInfo
            #expect(info.canvasSize == PixelSize(width: reference.width, height: reference.height), "\(name)")
            #expect(info.frameCount == reference.frames.count, "\(name)")
            #expect(info.loopCount == reference.loop, "\(name) loop count")
            #expect(info.totalDurationMilliseconds == reference.frames.compactMap(\.delay_ms).reduce(0, +), "\(name)")
            var delays: [Int?] = []
            let hasher = try FrameHasher(frameLength: reference.width * reference.height * 4)
            while let frame = try decoder.nextFrame(size: nil) {
                // gif2webp's frames are opaque or clear: premultiplied bytes are the straight ones
                // (a partly transparent pixel could only make the md5 differ, never match falsely).
                try hasher.add(frame.bitmap.bytes)
                delays.append(frame.delayMilliseconds)
            }
            #expect(delays == reference.frames.map(\.delay_ms), "\(name) delays")
            #expect(try hasher.finish() == reference.frames.map(\.md5), "\(name) frames")
        }
    }

    /// libwebp's animation decoder keeps two canvases, whatever the frame count.
    @Test(.enabled(if: Corpus.has("webp-animated"), Corpus.missing("webp-animated")))
    func animatedWebPMemoryStaysBounded() async throws {
        let data = try Corpus.data("webp-animated", "gifplayer-muybridge.webp")
        try await ResidentMemory.exclusively {
            var frames = 0
            let growth = try #require(try ResidentMemory.peakGrowth(attempts: 3) {
                let decoder = try WebPDecoder().makeAnimationDecoder(for: data, options: DecodeOptions())
                frames = 0
                while try decoder.nextFrame(size: nil) != nil { frames += 1 }
            }, "cannot measure the peak RSS on this system")
            let canvas = 472 * 298 * 4
            print("muybridge.webp: \(frames) frames, peak RSS growth \(growth) bytes")
            #expect(frames == 380)
            #expect(growth < 100 * canvas, "all frames grew the peak by \(growth) bytes")  // 380 bitmaps would be 380 canvases; a starved run beside other suites adds some
        }
    }

    func pipeline() -> ImagePipeline {
        ImagePipeline(configuration: ImagePipeline.Configuration(
            decoders: DecoderRegistry().registering(PNGDecoder()).registering(WebPDecoder()).registering(GIFDecoder()),
            loaders: LoaderRegistry([FileDataLoader()])))
    }

    @Test(.enabled(if: Corpus.has("gif"), Corpus.missing("gif")))
    func thePipelineGivesEveryFrameAtTheRequestedSize() async throws {
        let url = Corpus.folder("gif").appendingPathComponent("moon_impact.gif")
        let pipeline = pipeline()
        let animation = try await pipeline.animation(for: ImageRequest(url: url, width: 58, height: 50))
        #expect(animation.format == .gif)
        #expect(animation.info.canvasSize == PixelSize(width: 116, height: 100))
        #expect(animation.info.frameCount == 14)
        #expect(animation.info.loopCount == 10)
        var count = 0
        for try await frame in animation.frames() {
            #expect(frame.index == count)
            #expect(frame.bitmap.size == PixelSize(width: 58, height: 50))
            count += 1
        }
        #expect(count == 14)
        // The still picture is the first frame; full size, it matches the corpus md5.
        let still = try await pipeline.image(for: ImageRequest(url: url))
        let references = try FrameReferences.load("gif")
        #expect(referenceMD5(still.bitmap) == references.valid["moon_impact.gif"]?.frames.first?.md5)
        // A format without animation support is a typed error.
        let png = FileManager.default.temporaryDirectory.appendingPathComponent("animation-\(UUID().uuidString).png")
        try PNGEncoder().encode(Bitmap(zeroed: PixelSize(width: 2, height: 2))).write(to: png)
        defer { try? FileManager.default.removeItem(at: png) }
        await #expect(throws: ImagePipelineError.self) { try await pipeline.animation(for: ImageRequest(url: png)) }
    }

    /// A turn (``ProcessingOptions/transform``) turns every frame before it is scaled: at full
    /// size each frame is the plain frame turned, exactly; fitted in 50 × 58 the turned
    /// landscape (116 × 100 → 100 × 116) fills the portrait box (the plain one would be 50 × 43).
    @Test(.enabled(if: Corpus.has("gif"), Corpus.missing("gif")))
    func aTurnTurnsEveryFrameBeforeTheSize() async throws {
        let url = Corpus.folder("gif").appendingPathComponent("moon_impact.gif")
        let pipeline = pipeline()
        var turned = ImageRequest(url: url)
        turned.processing.transform = .rightMirrored
        var plainFrames: [Bitmap] = []
        for try await frame in try await pipeline.animation(for: ImageRequest(url: url)).frames() { plainFrames.append(frame.bitmap) }
        var index = 0
        for try await frame in try await pipeline.animation(for: turned).frames() {
            #expect(frame.bitmap == plainFrames[index].oriented(.rightMirrored), "frame \(index)")
            index += 1
        }
        #expect(index == 14)
        var small = ImageRequest(url: url, width: 50, height: 58)
        small.processing.transform = .left
        let animation = try await pipeline.animation(for: small)
        #expect(animation.plan.outputSize == PixelSize(width: 50, height: 58))
        for try await frame in animation.frames() { #expect(frame.bitmap.size == PixelSize(width: 50, height: 58)) }
    }

    @Test(.enabled(if: Corpus.has("webp-animated"), Corpus.missing("webp-animated")))
    func thePipelineGivesAnimatedWebPToo() async throws {
        let url = Corpus.folder("webp-animated").appendingPathComponent("beacon.webp")
        let animation = try await pipeline().animation(for: ImageRequest(url: url))
        #expect(animation.format == .webp)
        var frames: [AnimationFrame] = []
        for try await frame in animation.frames() { frames.append(frame) }
        #expect(frames.count == 2)
        #expect(frames.map(\.delayMilliseconds) == [100, 100])
    }
}
