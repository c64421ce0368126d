import Foundation
import ImagePipelineKit
@testable import ImageServer
import PipelineCore
import PipelineTestSupport
import Testing

/// What the renderer's tests share: a pipeline on the file loader with the kit's decoders, the
/// kit's encoders, `Samples/`, pictures written for a test, and decoding what came out.
enum RenderFixture {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    static func sample(_ name: String) -> URL { root.appendingPathComponent("Samples/\(name)") }

    static let decoders = DecoderRegistry.standard(codecStandardError: .discardedWhileDecoding)

    /// A renderer over the file loader (a fresh pipeline: no memory answers from another test).
    static func renderer(watermark: Bitmap? = nil) -> Renderer {
        Renderer(pipeline: makePipeline(loader: FileDataLoader(), decoders: decoders), encoders: .standard, watermark: watermark)
    }

    /// Renders and returns the encoded response.
    static func render(_ options: RenderOptions, _ source: URL, format: ImageFormat? = .png, accepted: Set<ImageFormat> = [],
                       watermark: Bitmap? = nil) async throws(ServerError) -> RenderedImage {
        try await renderer(watermark: watermark).render(options, source: source, choice: OutputChoice(explicit: format, accepted: accepted))
    }

    /// The first frame of `data`, full size, straight alpha, and the decoder's header; with
    /// `convertsToSRGB` `false`, in its own colour space with its ICC profile.
    static func decode(_ data: Data, convertsToSRGB: Bool = true) throws -> DecodedImage {
        try decoders.requireDecoder(for: data).withSession(for: data) { session in
            try session.decodeChecked(DecodeOptions(convertsToSRGB: convertsToSRGB, pixelFormat: .rgba8Straight))
        }
    }

    /// A picture of `size` whose pixel at (x, y) is `colour(x, y)`, written as PNG in a fresh
    /// temporary folder.
    static func writePicture(_ size: PixelSize, name: String = "picture.png",
                             colour: (Int, Int) -> (UInt8, UInt8, UInt8, UInt8)) throws -> URL {
        var bytes = [UInt8](repeating: 0, count: size.width * size.height * 4)
        for y in 0..<size.height {
            for x in 0..<size.width {
                let (r, g, b, a) = colour(x, y)
                let i = (y * size.width + x) * 4
                (bytes[i], bytes[i + 1], bytes[i + 2], bytes[i + 3]) = (r, g, b, a)
            }
        }
        let bitmap = try #require(Bitmap(width: size.width, height: size.height, bytesPerRow: size.width * 4, pixelFormat: .rgba8Straight,
                                         bytes: bytes))
        return try write(EncoderRegistry.standard.encode(bitmap, as: .png), name: name)
    }

    /// `data` in a file `name` of a fresh temporary folder.
    static func write(_ data: Data, name: String) throws -> URL {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("renderer-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let url = folder.appendingPathComponent(name)
        try data.write(to: url)
        return url
    }

    /// The failure `body` throws, or `nil`.
    static func failure(_ body: () async throws(ServerError) -> RenderedImage) async -> ServerError? {
        do {
            _ = try await body()
            return nil
        } catch {
            return error
        }
    }

    /// Whether two colours are within `tolerance` on every channel.
    static func near(_ pixel: (r: UInt8, g: UInt8, b: UInt8, a: UInt8), _ expected: (UInt8, UInt8, UInt8, UInt8),
                     tolerance: Int = 8) -> Bool {
        let got = [pixel.r, pixel.g, pixel.b, pixel.a].map(Int.init), want = [expected.0, expected.1, expected.2, expected.3].map(Int.init)
        return zip(got, want).allSatisfy { abs($0 - $1) <= tolerance }
    }
}
