import Foundation
import PipelineCore
import PipelineTestSupport
import Testing

/// Serves `anim:///<W>x<H>/<announced>/<delivered>` as "ANIM" data naming them.
private func animationLoader() -> HeldLoader {
    HeldLoader(schemes: ["anim"]) { .success(.data(Data(("ANIM" + $0.url.path).utf8), ResponseMetadata())) }
}

/// A decoder of "ANIM" data: a canvas whose header announces one frame count and whose frame
/// decoder delivers another (zeroed canvases), checking no animation limit itself, so the tests
/// see what the pipeline enforces for any codec. Its still picture is the canvas.
private struct FakeAnimatedDecoder: AnimatedImageDecoding {
    static let format = ImageFormat("anim", mimeType: nil, fileExtension: nil)
    var signatures: [ImageSignature] { [.magic(Array("ANIM".utf8), format: Self.format)] }

    private struct Header {
        var canvas: PixelSize
        var announced: Int
        var delivered: Int

        init(_ data: Data) throws {
            let parts = String(decoding: data.dropFirst(4), as: UTF8.self).split(separator: "/")
            let size = parts.first?.split(separator: "x").compactMap { Int($0) } ?? []
            guard parts.count == 3, size.count == 2, let announced = Int(parts[1]), let delivered = Int(parts[2]) else {
                throw ImagePipelineError.corruptData(format: FakeAnimatedDecoder.format, message: "bad animation data")
            }
            canvas = PixelSize(width: size[0], height: size[1])
            self.announced = announced
            self.delivered = delivered
        }
    }

    private struct Session: ImageDecodingSession {
        let header: Header
        var info: ImageInfo { ImageInfo(format: FakeAnimatedDecoder.format, size: header.canvas, frameCount: header.announced) }
        func decode(_ options: DecodeOptions) throws -> DecodedImage {
            DecodedImage(bitmap: Bitmap(zeroed: header.canvas), info: info)
        }
    }

    private final class Frames: AnimationFrameDecoding {
        let animationInfo: AnimationInfo
        private let delivered: Int
        private var index = 0

        init(_ header: Header) {
            animationInfo = AnimationInfo(canvasSize: header.canvas, frameCount: header.announced)
            delivered = header.delivered
        }

        func nextFrame(size: PixelSize?) throws -> AnimationFrame? {
            guard index < delivered else { return nil }
            defer { index += 1 }
            return AnimationFrame(index: index, bitmap: Bitmap(zeroed: animationInfo.canvasSize), delayMilliseconds: 100)
        }
    }

    func withSession<R>(for data: Data, _ body: (any ImageDecodingSession) throws -> R) throws -> R {
        try body(Session(header: try Header(data)))
    }

    func makeAnimationDecoder(for data: Data, options: DecodeOptions) throws -> any AnimationFrameDecoding {
        Frames(try Header(data))
    }
}

private func animationPipeline(budget: Int? = 1 << 30, frames: Int = DecodeOptions.defaultMaxAnimationFrameCount,
                               pixels: Int = DecodeOptions.defaultMaxAnimationPixelCount) -> ImagePipeline {
    var configuration = ImagePipeline.Configuration(
        decoders: DecoderRegistry([FakeAnimatedDecoder()]), loaders: LoaderRegistry([animationLoader()]),
        memoryCache: MemoryCache(costLimit: 1 << 20), maxConcurrentDecodes: 4, negativeCacheLifetime: 0)
    configuration.decodeMemoryBudget = budget
    configuration.maxAnimationFrameCount = frames
    configuration.maxAnimationPixelCount = pixels
    return ImagePipeline(configuration: configuration)
}

private func animationURL(_ width: Int, _ height: Int, announced: Int, delivered: Int? = nil) -> URL {
    URL(string: "anim:///\(width)x\(height)/\(announced)/\(delivered ?? announced)")!
}

/// The error `animation(for:)` or a frame step threw, unwrapped from its URL.
private func underlying(_ error: any Error) -> ImagePipelineError? {
    if case .decodingFailed(_, let inner) = error as? ImagePipelineError { return inner as? ImagePipelineError }
    return error as? ImagePipelineError
}

@Suite("Animation limits and decode memory")
struct AnimationLimitTests {
    @Test func theDefaultsAreTheDecodeOptionsDefaults() {
        let configuration = ImagePipeline.Configuration(decoders: DecoderRegistry(), loaders: LoaderRegistry())
        #expect(configuration.maxAnimationFrameCount == 10_000)
        #expect(configuration.maxAnimationPixelCount == 1_000_000_000)
        #expect(DecodeOptions().maxAnimationFrameCount == configuration.maxAnimationFrameCount)
        #expect(DecodeOptions().maxAnimationPixelCount == configuration.maxAnimationPixelCount)
    }

    @Test func theLimitsAreCheckedFromTheHeaderForACodecThatDoesNot() async throws {
        let pipeline = animationPipeline(frames: 10, pixels: 10_000)
        do {
            _ = try await pipeline.animation(for: ImageRequest(url: animationURL(8, 8, announced: 11)))
            Issue.record("an 11-frame animation opened under a 10-frame limit")
        } catch {
            #expect(underlying(error) == .overLimit(.animationFrames, limit: 10, actual: 11))
        }
        do {
            _ = try await pipeline.animation(for: ImageRequest(url: animationURL(100, 100, announced: 2)))
            Issue.record("20,000 frame pixels opened under a 10,000 limit")
        } catch {
            #expect(underlying(error) == .overLimit(.animationPixels, limit: 10_000, actual: 20_000))
        }
        // At the limits it opens; a still of the over-limit animation is its first frame.
        let animation = try await pipeline.animation(for: ImageRequest(url: animationURL(10, 100, announced: 10)))
        #expect(animation.info.frameCount == 10)
        let still = try await pipeline.image(for: ImageRequest(url: animationURL(100, 100, announced: 2)))
        #expect(still.bitmap.size == PixelSize(width: 100, height: 100))
    }

    @Test func aCodecDeliveringMoreFramesThanItAnnouncedIsStoppedAtTheLimit() async throws {
        let pipeline = animationPipeline(frames: 3)
        let animation = try await pipeline.animation(for: ImageRequest(url: animationURL(4, 4, announced: 2, delivered: 50)))
        var delivered = 0
        do {
            for try await _ in animation.frames() { delivered += 1 }
            Issue.record("the sequence ended without an error")
        } catch {
            #expect(underlying(error) == .overLimit(.animationFrames, limit: 3, actual: 4))
        }
        #expect(delivered == 3)
        #expect(pipeline.decodeMemory.bytesInUse == 0, "a failed sequence gives its reservation back")
    }

    @Test func aFrameSequenceReservesItsCanvasesUntilItEnds() async throws {
        let pipeline = animationPipeline()
        // Full size: the codec's three canvases (the default estimate), 100×100×4 bytes each.
        let full = try await pipeline.animation(for: ImageRequest(url: animationURL(100, 100, announced: 3)))
        #expect(pipeline.decodeMemory.bytesInUse == 0, "opening the header reserves nothing")
        var frames = full.frames().makeAsyncIterator()
        _ = try await frames.next()
        #expect(pipeline.decodeMemory.bytesInUse == 120_000)
        while try await frames.next() != nil {}
        #expect(pipeline.decodeMemory.bytesInUse == 0)
        #expect(pipeline.decodeMemory.peakBytesInUse == 120_000)
        // Scaled: the scaled frame too (50×50×4).
        let scaled = try await pipeline.animation(for: ImageRequest(url: animationURL(100, 100, announced: 3), width: 50, height: 50))
        var scaledFrames = scaled.frames().makeAsyncIterator()
        let frame = try await scaledFrames.next()
        #expect(frame?.bitmap.size == PixelSize(width: 50, height: 50))
        #expect(pipeline.decodeMemory.bytesInUse == 130_000)
        while try await scaledFrames.next() != nil {}
        #expect(pipeline.decodeMemory.bytesInUse == 0)
    }

    @Test func aDroppedSequenceGivesItsReservationBack() async throws {
        let pipeline = animationPipeline()
        let animation = try await pipeline.animation(for: ImageRequest(url: animationURL(100, 100, announced: 5)))
        do {
            var frames = animation.frames().makeAsyncIterator()
            _ = try await frames.next()
            #expect(pipeline.decodeMemory.bytesInUse == 120_000)
        }
        try #require(await eventually(timeout: 60) { pipeline.decodeMemory.bytesInUse == 0 })
    }

    @Test func animationsAndStillsWaitForEachOthersCanvases() async throws {
        // Room for one 100×100 animation (120,000 bytes) and not for a second, nor for a
        // 160×160 still (102,400 bytes) beside it.
        let pipeline = animationPipeline(budget: 200_000)
        let first = try await pipeline.animation(for: ImageRequest(url: animationURL(100, 100, announced: 3)))
        let second = try await pipeline.animation(for: ImageRequest(url: animationURL(100, 100, announced: 4)))
        var frames = first.frames().makeAsyncIterator()
        _ = try await frames.next()
        let waiting = Task { () throws -> Int in
            var count = 0
            for try await _ in second.frames() { count += 1 }
            return count
        }
        let still = Task { try await pipeline.image(for: ImageRequest(url: animationURL(160, 160, announced: 1))) }
        try #require(await eventually(timeout: 300) { pipeline.decodeMemory.waitingDecodes == 2 })
        #expect(pipeline.decodeMemory.bytesInUse == 120_000)
        while try await frames.next() != nil {}
        #expect(try await waiting.value == 4)
        #expect(try await still.value.bitmap.size == PixelSize(width: 160, height: 160))
        #expect(pipeline.decodeMemory.bytesInUse == 0)
        #expect(pipeline.decodeMemory.peakBytesInUse <= 200_000)
    }
}
