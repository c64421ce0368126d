import CodecGIF
import Foundation
import GIFFixtureWriter
import LoaderFile
import PipelineCore
import PipelineTestSupport
import Testing

/// `pipeline.animation(for:)` delivers frames in the request's `processing.pixelFormat`: straight
/// when asked (what `imgpipe frames` asks for), premultiplied by default.
@Suite(.tags(.cpuBound))
struct AnimationPixelFormatTests {
    /// Two 4×4 frames: an opaque red one kept, then a half-transparent blue checkerboard.
    static var gif: Data {
        let palette: [(UInt8, UInt8, UInt8)] = [(255, 0, 0), (0, 0, 255), (0, 255, 0)]
        let checkerboard: [UInt8] = (0..<16).map { (i: Int) -> UInt8 in (i % 4 + i / 4) % 2 == 0 ? 1 : 2 }
        let red = GIFWriter.Frame(width: 4, height: 4, indices: [UInt8](repeating: 0, count: 16), disposal: 2)
        let blue = GIFWriter.Frame(width: 4, height: 4, indices: checkerboard, transparentIndex: 2)
        return GIFWriter.gif(width: 4, height: 4, palette: palette, frames: [red, blue])
    }

    func frames(_ url: URL, size: Int?, pixelFormat: PixelFormat?) async throws -> [Bitmap] {
        let pipeline = ImagePipeline(configuration: ImagePipeline.Configuration(
            decoders: DecoderRegistry().registering(GIFDecoder()), loaders: LoaderRegistry([FileDataLoader()])))
        var request = size.map { ImageRequest(url: url, width: $0, height: $0) } ?? ImageRequest(url: url)
        if let pixelFormat { request.processing.pixelFormat = pixelFormat }
        let animation = try await pipeline.animation(for: request)
        #expect(animation.pixelFormat == pixelFormat ?? .rgba8Premultiplied)
        var frames: [Bitmap] = []
        for try await frame in animation.frames() { frames.append(frame.bitmap) }
        return frames
    }

    @Test(arguments: [nil, 3])
    func framesComeStraightWhenAskedAndPremultipliedByDefault(size: Int?) async throws {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("animation-format-\(UUID().uuidString).gif")
        try Self.gif.write(to: url)
        defer { try? FileManager.default.removeItem(at: url) }
        let straight = try await frames(url, size: size, pixelFormat: .rgba8Straight)
        let premultiplied = try await frames(url, size: size, pixelFormat: nil)
        try #require(straight.count == 2 && premultiplied.count == 2)
        #expect(straight.allSatisfy { $0.pixelFormat == .rgba8Straight })
        #expect(premultiplied.allSatisfy { $0.pixelFormat == .rgba8Premultiplied })
        for (s, p) in zip(straight, premultiplied) {
            #expect(s.size == p.size)
            // The straight frame is the premultiplied one made straight once (exact at full size:
            // GIF alpha is 0 or 255; scaled, both come from the same premultiplied resampling).
            #expect(s.bytes == p.unpremultipliedBytes())
        }
        if size == nil {
            // Full size: the file's values themselves, transparent pixels zero.
            #expect(straight[1].bytes.prefix(8) == [0, 0, 255, 255, 0, 0, 0, 0])
        } else {
            // Scaled: partly transparent edge pixels, whose straight colour is the pure blue.
            let alphas = stride(from: 3, to: straight[1].bytes.count, by: 4).map { straight[1].bytes[$0] }
            #expect(alphas.contains { $0 > 0 && $0 < 255 })
        }
    }
}
