import Foundation
import ImagePipelineKit
@testable import ImageServer
import PipelineCore
import PipelineTestSupport
import Testing

/// The renderer's output: format negotiation, animations, limits, failures and their
/// statuses, the colour profile.
@Suite("Renderer output", .timeLimit(.minutes(2)))
struct RendererOutputTests {
    static let orbit = RenderFixture.sample("orbit.gif")  // 96 × 96, 16 frames
    static let jxl = ImageFormat("jxl", mimeType: "image/jxl", fileExtension: "jxl")

    static func small() -> RenderOptions {
        var options = RenderOptions()
        options.width = 48
        options.height = 48
        return options
    }

    /// The rule, as a table: explicit, then AVIF, WebP, JPEG XL from `Accept`, then the source's
    /// format, then PNG with alpha or JPEG.
    @Test func negotiationTable() throws {
        let all: Set<ImageFormat> = [.jpeg, .png, .webp, .avif, .gif, Self.jxl, .heif]
        let negotiation = OutputNegotiation(encodable: all, animatable: [.webp, .gif])
        let noAVIF = OutputNegotiation(encodable: all.subtracting([.avif]), animatable: [.webp, .gif])
        typealias Row = (OutputNegotiation, OutputChoice, ImageFormat, Bool, Bool, ImageFormat)
        let rows: [Row] = [
            (negotiation, OutputChoice(explicit: .png, accepted: [.avif, .webp]), .jpeg, false, false, .png),
            (negotiation, OutputChoice(explicit: nil, accepted: [.avif, .webp]), .jpeg, false, false, .avif),
            (noAVIF, OutputChoice(explicit: nil, accepted: [.avif, .webp]), .jpeg, false, false, .webp),
            (negotiation, OutputChoice(explicit: nil, accepted: [.webp, Self.jxl]), .png, true, false, .webp),
            (negotiation, OutputChoice(explicit: nil, accepted: [Self.jxl]), .jpeg, false, false, Self.jxl),
            (negotiation, OutputChoice(explicit: nil, accepted: [.avif, .webp]), .gif, true, true, .webp),
            (negotiation, OutputChoice(explicit: nil, accepted: [.avif]), .gif, true, true, .avif),
            (negotiation, OutputChoice(explicit: nil, accepted: []), .gif, true, true, .gif),
            (negotiation, OutputChoice(explicit: nil, accepted: []), .gif, true, false, .png),
            (negotiation, OutputChoice(explicit: nil, accepted: []), .jpeg, false, false, .jpeg),
            (negotiation, OutputChoice(explicit: nil, accepted: []), .png, true, false, .png),
            (negotiation, OutputChoice(explicit: nil, accepted: []), .webp, true, false, .webp),
            (negotiation, OutputChoice(explicit: nil, accepted: []), .heif, false, false, .jpeg),
            (negotiation, OutputChoice(explicit: nil, accepted: []), .heif, true, false, .png),
            (negotiation, OutputChoice(explicit: nil, accepted: []), "svg", true, false, .png),
            (negotiation, OutputChoice(explicit: nil, accepted: []), "svg", false, false, .jpeg),
            (negotiation, OutputChoice(explicit: nil, accepted: []), .bmp, false, false, .jpeg),
        ]
        for (index, row) in rows.enumerated() {
            let got = try row.0.format(for: row.1, source: row.2, hasAlpha: row.3, animates: row.4)
            #expect(got == row.5, "row \(index): \(row.2) → \(got), expected \(row.5)")
        }
        #expect(throws: ServerError.self) { try noAVIF.format(for: OutputChoice(explicit: .avif, accepted: []), source: .jpeg, hasAlpha: false, animates: false) }
    }

    /// Through the renderer: a WebP-accepting client gets WebP, one accepting nothing the
    /// source's PNG, AVIF only where this machine's libheif encodes it (its probe).
    @Test func negotiatedThroughTheRenderer() async throws {
        let source = RenderFixture.sample("rings.png")
        let webp = try await RenderFixture.render(Self.small(), source, format: nil, accepted: [.webp])
        #expect(webp.format == .webp && ImageFormat.sniff(webp.data) == .webp)
        let png = try await RenderFixture.render(Self.small(), source, format: nil, accepted: [])
        #expect(png.format == .png && ImageFormat.sniff(png.data) == .png)
        let renderer = RenderFixture.renderer()
        let avif = try await renderer.render(Self.small(), source: source, choice: OutputChoice(explicit: nil, accepted: [.avif, .webp]))
        #expect(avif.format == (HEIFEncoder.avif.isAvailable ? .avif : .webp))
        #expect(renderer.negotiation.encodable.contains(.avif) == HEIFEncoder.avif.isAvailable)
    }

    /// orbit.gif (16 frames) as WebP keeps every frame; `maf:1` makes a still; `maf:2` refuses
    /// (422); a PNG gets the first frame.
    @Test func animatedGIFStaysAnimated() async throws {
        let webp = try await RenderFixture.render(Self.small(), Self.orbit, format: .webp)
        #expect(try Self.frameCount(webp.data) == 16)
        #expect(try RenderFixture.decode(webp.data).bitmap.size == PixelSize(width: 48, height: 48))
        let gif = try await RenderFixture.render(Self.small(), Self.orbit, format: nil, accepted: [])
        #expect(gif.format == .gif)
        #expect(try Self.frameCount(gif.data) == 16)
        var still = Self.small()
        still.maxAnimationFrames = 1
        #expect(try Self.frameCount(try await RenderFixture.render(still, Self.orbit, format: .webp).data) == 1)
        var limited = Self.small()
        limited.maxAnimationFrames = 2
        let refused = await RenderFixture.failure { () async throws(ServerError) in try await RenderFixture.render(limited, Self.orbit, format: .webp) }
        #expect(refused?.kind == .unprocessable)
        #expect(refused?.message.contains("max_animation_frames") == true)
        let png = try await RenderFixture.render(Self.small(), Self.orbit, format: .png)
        #expect(try RenderFixture.decode(png.data).bitmap.size == PixelSize(width: 48, height: 48))
    }

    static func frameCount(_ data: Data) throws -> Int {
        let decoder = try RenderFixture.decoders.requireDecoder(for: data)
        guard let animated = decoder as? any AnimatedImageDecoding else { return 1 }
        return try animated.makeAnimationDecoder(for: data, options: DecodeOptions()).animationInfo.frameCount
    }

    /// aurora is 480 × 320 (0.15 megapixels): `msr:0.1` refuses it before its pixels are
    /// decoded (the header's size), `msr:0.2` passes.
    @Test func maxSourceResolutionRefusesBeforeDecoding() async throws {
        var options = Self.small()
        options.maxSourceResolution = 0.1
        let events = EventRecorder()
        let pipeline = makePipeline(loader: FileDataLoader(), decoders: RenderFixture.decoders, events: events)
        let renderer = Renderer(pipeline: pipeline, encoders: .standard)
        let source = RenderFixture.sample("aurora.png")
        let refused = await RenderFixture.failure { () async throws(ServerError) in
            try await renderer.render(options, source: source, choice: OutputChoice(explicit: .png, accepted: []))
        }
        #expect(refused?.kind == .unprocessable)
        #expect(refused?.message.contains("max_src_resolution") == true)
        #expect(events.count { if case .decoded = $0 { true } else { false } } == 0)
        options.maxSourceResolution = 0.2
        _ = try await renderer.render(options, source: source, choice: OutputChoice(explicit: .png, accepted: []))
        #expect(events.count { if case .decoded = $0 { true } else { false } } == 1)
    }

    /// A text file named `.jpg`: 422, and the message holds none of its bytes.
    @Test func notAPictureIs422WithoutItsBytes() async throws {
        let secret = "SECRET-root:x:0:0-shadow-line"
        let source = try RenderFixture.write(Data((secret + "\n").utf8), name: "photo.jpg")
        let failure = await RenderFixture.failure { () async throws(ServerError) in try await RenderFixture.render(Self.small(), source) }
        let error = try #require(failure)
        #expect(error.kind == .unprocessable)
        #expect(!error.message.contains("SECRET") && !error.message.contains("root") && !error.message.contains("shadow"))
        #expect(error.message.contains("photo.jpg"))
        #expect(!error.message.contains("\n"))
    }

    @Test func missingFileIs404() async throws {
        let source = FileManager.default.temporaryDirectory.appendingPathComponent("renderer-missing-\(UUID().uuidString).png")
        let failure = await RenderFixture.failure { () async throws(ServerError) in try await RenderFixture.render(Self.small(), source) }
        #expect(failure?.kind == .notFound)
        #expect(failure?.message.contains(source.lastPathComponent) == true)
    }

    /// A loader that does not exist for the scheme: 403.
    @Test func noLoaderIs403() async throws {
        let source = try #require(URL(string: "gopher://example.invalid/a.png"))
        let failure = await RenderFixture.failure { () async throws(ServerError) in try await RenderFixture.render(Self.small(), source) }
        #expect(failure?.kind == .forbidden)
    }

    /// The source's validator comes from its disk-cache entry (the file loader's ETag, when
    /// `file` is a disk-cached scheme); no disk cache: `nil`.
    @Test func sourceValidatorFromTheDiskCache() async throws {
        let source = try RenderFixture.writePicture(PixelSize(width: 20, height: 20)) { _, _ in (1, 2, 3, 255) }
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("renderer-cache-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: folder) }
        var configuration = ImagePipeline.Configuration(decoders: RenderFixture.decoders, loaders: LoaderRegistry([FileDataLoader()]),
                                                        diskCache: try DiskCache(directory: folder))
        configuration.diskCachedSchemes.insert("file")
        let renderer = Renderer(pipeline: ImagePipeline(configuration: configuration), encoders: .standard)
        let first = try await renderer.render(Self.small(), source: source, choice: OutputChoice(explicit: .png, accepted: []))
        let validator = try #require(first.sourceValidator)
        #expect(validator.hasPrefix("\"") && validator.hasSuffix("\""))
        #expect(try await RenderFixture.render(Self.small(), source).sourceValidator == nil)
    }

    /// `strip_color_profile:false` keeps the Adobe RGB profile (and the unconverted pixels); the
    /// default converts to sRGB and embeds none.
    @Test(.enabled(if: Corpus.has("icc"), Corpus.missing("icc")))
    func keptColourProfile() async throws {
        let source = Corpus.folder("icc").appendingPathComponent("AdobeRGB1998.jpg")
        var options = Self.small()
        let stripped = try await RenderFixture.render(options, source, format: .jpeg)
        #expect(try RenderFixture.decode(stripped.data, convertsToSRGB: false).iccProfile == nil)
        options.stripColorProfile = false
        let kept = try await RenderFixture.render(options, source, format: .jpeg)
        let profile = try RenderFixture.decode(kept.data, convertsToSRGB: false).iccProfile
        let original = try RenderFixture.decode(Data(contentsOf: source), convertsToSRGB: false).iccProfile
        #expect(profile != nil && profile == original)
        let webp = try await RenderFixture.render(options, source, format: .webp)
        #expect(try RenderFixture.decode(webp.data, convertsToSRGB: false).iccProfile == original)
    }

    /// `sh:1` sharpens the resized picture, after blur, with the library's processor: the PNG
    /// is the unsharpened render with `.sharpen(sigma: 1)` applied, byte for byte, and not the
    /// unsharpened render itself; `bl:` then `sh:` is the blurred render sharpened.
    @Test func sharpenIsTheProcessorAfterTheResize() async throws {
        let source = RenderFixture.sample("dunes-progressive.jpg")
        var options = RenderOptions()
        options.width = 240
        let plain = try RenderFixture.decode(try await RenderFixture.render(options, source).data).bitmap
        options.sharpen = 1
        let sharpened = try RenderFixture.decode(try await RenderFixture.render(options, source).data).bitmap
        #expect(sharpened.size == plain.size && sharpened.unpremultipliedBytes() != plain.unpremultipliedBytes())
        #expect(sharpened.unpremultipliedBytes() == (try ImageProcessor.sharpen(sigma: 1).process(plain)).unpremultipliedBytes())
        options.blur = 2
        let both = try RenderFixture.decode(try await RenderFixture.render(options, source).data).bitmap
        options.sharpen = nil
        let blurred = try RenderFixture.decode(try await RenderFixture.render(options, source).data).bitmap
        #expect(both.unpremultipliedBytes() == (try ImageProcessor.sharpen(sigma: 1).process(blurred)).unpremultipliedBytes())
    }
}
