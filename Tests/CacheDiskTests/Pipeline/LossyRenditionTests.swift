import CacheDisk
import CodecJPEG
import CodecPNG
import CodecWebP
import Foundation
import PipelineCore
import PipelineTestSupport
import Testing

/// Renditions through ``RenditionEncoder``: JPEG for opaque results, PNG for the others.
@Suite struct LossyRenditionTests {
    static func pipeline(_ directory: TemporaryDirectory, loader: HeldLoader, decoder: CountingDecoder,
                         events: EventRecorder, quality: Int = 85) throws -> ImagePipeline {
        var configuration = ImagePipeline.Configuration(
            decoders: DecoderRegistry([decoder, JPEGDecoder(), PNGDecoder()]), loaders: LoaderRegistry([loader]),
            memoryCache: MemoryCache(costLimit: 64 << 20), diskCache: try makeCache(directory), maxConcurrentDecodes: 2,
            eventHandler: events.handler)
        configuration.diskCachedSchemes.insert("test")
        configuration.diskCachePolicy = .originalsAndRenditions
        configuration.renditionEncoder = RenditionEncoder(
            encoders: EncoderRegistry().registering(JPEGEncoder()).registering(PNGEncoder()), quality: quality)
        return ImagePipeline(configuration: configuration)
    }

    /// The bytes stored for `request`'s rendition (found by the store event's size among the
    /// directory's files: the original is a 12-byte FakeImage).
    static func renditionBytes(_ directory: TemporaryDirectory) -> [Data] {
        directory.entryFolderFiles.compactMap { try? Data(contentsOf: URL(fileURLWithPath: $0)) }
            .filter { $0.count > 200 }
    }

    @Test func opaqueResultsAreStoredAsJPEGAndTransparentOnesAsPNG() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let loader = HeldLoader { .success(.data(HeldLoader.fakeData(for: $0.url), metadata(maxAge: 100, etag: "\"v1\""))) }
        let url = testURL(64, 48, 5)
        let blurred = ImageRequest(url: url, width: 48, height: 48, contentMode: .fill, processors: [.gaussianBlur(radius: 2)])
        let round = ImageRequest(url: url, width: 48, height: 48, contentMode: .fill, processors: [.circle])

        let events1 = EventRecorder()
        let first = try Self.pipeline(directory, loader: loader, decoder: CountingDecoder(), events: events1)
        let madeBlurred = try await first.image(for: blurred)
        let madeRound = try await first.image(for: round)
        #expect(events1.count { if case .renditionStored = $0 { true } else { false } } == 2)
        let stored = Self.renditionBytes(directory)
        #expect(stored.count == 2)
        #expect(stored.contains { $0.range(of: Data([0xFF, 0xD8, 0xFF])) != nil }, "a JPEG rendition")
        #expect(stored.contains { $0.range(of: Data([0x89, 0x50, 0x4E, 0x47])) != nil }, "a PNG rendition")

        // A restart: both answer from their renditions without decoding the original.
        let events2 = EventRecorder(), decoder2 = CountingDecoder()
        let second = try Self.pipeline(directory, loader: loader, decoder: decoder2, events: events2)
        let againRound = try await second.image(for: round)
        let againBlurred = try await second.image(for: blurred)
        #expect(decoder2.decodeCount == 0 && loader.loadCount(url) == 1)
        #expect(events2.count { if case .renditionHit = $0 { true } else { false } } == 2)
        #expect(againRound.bitmap == madeRound.bitmap, "PNG: exact")
        #expect(againRound.source == .rendition && againBlurred.source == .rendition)
        // JPEG of a flat colour at q85: within 2 levels everywhere (DCT rounding and YCbCr).
        #expect(againBlurred.bitmap.size == madeBlurred.bitmap.size)
        var worst = 0
        for y in 0..<madeBlurred.bitmap.height {
            for x in 0..<madeBlurred.bitmap.width {
                let p = againBlurred.bitmap.pixel(x: x, y: y), q = madeBlurred.bitmap.pixel(x: x, y: y)
                worst = max(worst, abs(Int(p.r) - Int(q.r)), abs(Int(p.g) - Int(q.g)), abs(Int(p.b) - Int(q.b)))
                #expect(p.a == 255)
            }
        }
        #expect(worst <= 2, "largest difference \(worst)")
        #expect(againBlurred.originalSize == madeBlurred.originalSize && againBlurred.format == madeBlurred.format)
    }

    /// With a WebP encoder registered (the default ``RenditionEncoder/transparentFormat``), a
    /// result with alpha is stored as lossy WebP at q85 whose alpha is exact: after a restart
    /// the round avatar's alpha equals the processed one everywhere (0 outside, 255 inside, the
    /// antialiased edge as it was); its colour is lossy (tolerances below).
    @Test func resultsWithAlphaAreStoredAsWebPWithExactAlpha() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let loader = HeldLoader { .success(.data(HeldLoader.fakeData(for: $0.url), metadata(maxAge: 100, etag: "\"v1\""))) }
        let request = ImageRequest(url: testURL(64, 48, 5), width: 48, height: 48, contentMode: .fill, processors: [.circle])
        func pipeline(_ events: EventRecorder) throws -> ImagePipeline {
            var configuration = ImagePipeline.Configuration(
                decoders: DecoderRegistry([CountingDecoder(), WebPDecoder(), PNGDecoder()]), loaders: LoaderRegistry([loader]),
                diskCache: try makeCache(directory), eventHandler: events.handler)
            configuration.diskCachedSchemes.insert("test")
            configuration.diskCachePolicy = .originalsAndRenditions
            configuration.renditionEncoder = RenditionEncoder(
                encoders: EncoderRegistry().registering(JPEGEncoder()).registering(WebPEncoder()).registering(PNGEncoder()))
            return ImagePipeline(configuration: configuration)
        }
        let made = try await pipeline(EventRecorder()).image(for: request)
        let stored = try #require(Self.renditionBytes(directory).first)
        #expect(stored.range(of: Data("WEBPVP8".utf8)) != nil, "a WebP rendition")
        let events = EventRecorder()
        let again = try await pipeline(events).image(for: request)
        #expect(again.source == .rendition && again.bitmap.size == made.bitmap.size)
        var worst = (centre: 0, anywhere: 0)
        for y in 0..<made.bitmap.height {
            for x in 0..<made.bitmap.width {
                let p = again.bitmap.pixel(x: x, y: y), q = made.bitmap.pixel(x: x, y: y)
                #expect(p.a == q.a, "alpha at \(x),\(y)")
                let error = max(abs(Int(p.r) - Int(q.r)), abs(Int(p.g) - Int(q.g)), abs(Int(p.b) - Int(q.b)))
                worst.anywhere = max(worst.anywhere, error)
                let dx = Double(x) + 0.5 - 24, dy = Double(y) + 0.5 - 24
                if (dx * dx + dy * dy).squareRoot() <= 12 { worst.centre = max(worst.centre, error) }
            }
        }
        // Within 12 px of the centre (12 px from the edge): flat colour, only YUV rounding.
        #expect(worst.centre <= 3, "largest colour difference near the centre \(worst.centre)")
        // Near the edge the 4:2:0 chroma and the DCT blocks straddle the black (straight
        // colour of the transparent outside) and ring: measured 8-9 levels at q85.
        #expect(worst.anywhere <= 16, "largest colour difference \(worst.anywhere)")
        #expect(made.bitmap.pixel(x: 0, y: 0).a == 0 && made.bitmap.pixel(x: 24, y: 24).a == 255)
    }

    /// A rendition hit checks its tag against the original's header only: with the original's
    /// body damaged on disk (a full read would find the CRC mismatch and drop the entry), the
    /// rendition still answers and nothing is loaded.
    @Test func aHitDoesNotReadTheOriginalsBytes() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let loader = HeldLoader { .success(.data(HeldLoader.fakeData(for: $0.url), metadata(maxAge: 100, etag: "\"v1\""))) }
        let url = testURL(40, 40, 9)
        let request = ImageRequest(url: url, width: 32, height: 32, processors: [.grayscale])
        _ = try await Self.pipeline(directory, loader: loader, decoder: CountingDecoder(), events: EventRecorder())
            .image(for: request)

        let path = directory.entryPath(url)
        var bytes = try Data(contentsOf: URL(fileURLWithPath: path))
        bytes[bytes.count - 1] ^= 0x5A
        try bytes.write(to: URL(fileURLWithPath: path))

        let events = EventRecorder(), decoder = CountingDecoder()
        let second = try Self.pipeline(directory, loader: loader, decoder: decoder, events: events)
        _ = try await second.image(for: request)
        #expect(events.count { if case .renditionHit = $0 { true } else { false } } == 1)
        #expect(decoder.decodeCount == 0 && loader.loadCount(url) == 1)
    }

    /// The encoder's formats and options are part of the rendition key.
    @Test func anotherQualityMakesANewRendition() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let loader = HeldLoader { .success(.data(HeldLoader.fakeData(for: $0.url), metadata(maxAge: 100))) }
        let request = ImageRequest(url: testURL(40, 40, 3), width: 32, height: 32, processors: [.grayscale])
        _ = try await Self.pipeline(directory, loader: loader, decoder: CountingDecoder(), events: EventRecorder(), quality: 85)
            .image(for: request)
        let events = EventRecorder()
        _ = try await Self.pipeline(directory, loader: loader, decoder: CountingDecoder(), events: events, quality: 60)
            .image(for: request)
        #expect(events.count { if case .renditionHit = $0 { true } else { false } } == 0)
        #expect(events.count { if case .renditionStored = $0 { true } else { false } } == 1)
        let same = EventRecorder()
        _ = try await Self.pipeline(directory, loader: loader, decoder: CountingDecoder(), events: same, quality: 60)
            .image(for: request)
        #expect(same.count { if case .renditionHit = $0 { true } else { false } } == 1)
    }

    @Test func choiceFollowsOpacityAndRegisteredEncoders() throws {
        let both = RenditionEncoder(encoders: EncoderRegistry().registering(JPEGEncoder()).registering(PNGEncoder()))
        let opaque = try #require(Bitmap(width: 4, height: 4, bytesPerRow: 16, bytes: [UInt8](repeating: 255, count: 64)))
        var translucentBytes = [UInt8](repeating: 255, count: 64)
        translucentBytes[63] = 254
        let translucent = try #require(Bitmap(width: 4, height: 4, bytesPerRow: 16, bytes: translucentBytes))
        #expect(both.choice(for: opaque).format == .jpeg && both.choice(for: opaque).options.quality == 85)
        #expect(both.choice(for: translucent).format == .png, "no WebP encoder: lossless PNG")
        let withWebP = RenditionEncoder(encoders: both.encoders.registering(WebPEncoder()))
        #expect(withWebP.choice(for: translucent).format == .webp && withWebP.choice(for: translucent).options.quality == 85)
        #expect(withWebP.renditionIdentifier != both.renditionIdentifier)
        #expect(try both.encode(opaque).starts(with: [0xFF, 0xD8, 0xFF]))
        // Without a JPEG encoder, opaque renditions are lossless too; without either, a typed error.
        let pngOnly = RenditionEncoder(encoders: EncoderRegistry().registering(PNGEncoder()))
        #expect(pngOnly.choice(for: opaque).format == .png)
        #expect(throws: EncodingError.noEncoder(format: .png)) { try RenditionEncoder(encoders: EncoderRegistry()).encode(translucent) }
        #expect(both.renditionIdentifier != RenditionEncoder(encoders: both.encoders, quality: 84).renditionIdentifier)
        #expect(PNGEncoder().renditionIdentifier == "", "PNG-only caches keep their keys")
    }
}
