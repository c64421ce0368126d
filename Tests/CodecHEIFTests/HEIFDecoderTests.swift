import CodecHEIF
import CodecPNG
import Foundation
import PipelineCore
import PipelineTestSupport
import Testing

/// The libheif corpus: header info, full decodes against `heif-convert`, thumbnails, AVIF.
@Suite(.enabled(if: Corpus.has("heif"), Corpus.missing("heif")), .tags(.cpuBound))
struct HEIFDecoderTests {
    static let heifConvert: URL? = FileManager.default.isExecutableFile(atPath: "/usr/bin/heif-convert")
        ? URL(fileURLWithPath: "/usr/bin/heif-convert") : nil

    /// `heif-convert NAME TMP.png`, decoded with ``PNGDecoder``.
    static func reference(_ name: String) throws -> Bitmap {
        let out = FileManager.default.temporaryDirectory.appendingPathComponent("heif-ref-\(UUID().uuidString).png")
        defer { try? FileManager.default.removeItem(at: out) }
        let convert: URL = try #require(Self.heifConvert)
        let result = try ExternalTool.runBlocking(convert.path, [Corpus.folder("heif").appendingPathComponent(name).path, out.path])
        try #require(result.status == 0, "heif-convert failed on \(name)")
        return try PNGDecoder().decode(try Data(contentsOf: out), options: DecodeOptions()).bitmap
    }

    /// Both formats are claimed without opening libheif (registration and sniffing load nothing);
    /// without an AV1 decoder, AVIF fails at decode as unsupported.
    @Test func formatsAreClaimedWithoutTheLibrary() throws {
        #expect(HEIFDecoder().formats == [.heif, .avif])
        #expect(HEIFDecoder().canDecode(try Corpus.data("heif", "example.heic")))
        #expect(HEIFDecoder().canDecode(try Corpus.data("heif", "example.avif")))
        if !HEIFDecoder.decodesAVIF {
            #expect(throws: ImagePipelineError.self) { try HEIFDecoder().decode(try Corpus.data("heif", "example.avif"), options: DecodeOptions()) }
        }
    }

    @Test func exampleInfo() throws {
        let info = try HEIFDecoder().readInfo(try Corpus.data("heif", "example.heic"))
        #expect(info.format == .heif)
        #expect(info.size == PixelSize(width: 1280, height: 854))
        #expect(info.orientation == .up)
        #expect(info.frameCount == 2)
        #expect(!info.hasAlpha)
        #expect(info.bitDepth == 8)
    }

    @Test func exampleDecodesAtFullSize() throws {
        let decoded = try HEIFDecoder().decode(try Corpus.data("heif", "example.heic"), options: DecodeOptions())
        #expect(decoded.bitmap.size == PixelSize(width: 1280, height: 854))
        #expect(decoded.info.size == decoded.bitmap.size)
        #expect(decoded.bitmap.pixel(x: 640, y: 427).a == 255)
    }

    /// libde265's worker threads change how fast, never what: every corpus HEIC decodes to the
    /// same bitmap on one worker (libheif's own plugin's count), two and four; counts are clamped.
    @Test func workerThreadsDecodeTheSameBytes() throws {
        #expect(HEIFDecoder(threadCount: 0).threadCount == 1)
        #expect(HEIFDecoder(threadCount: 1000).threadCount == 32)
        #expect(HEIFDecoder().threadCount == HEIFDecoder.defaultThreadCount)
        #expect((1...2).contains(HEIFDecoder.defaultThreadCount))
        for name in ["example.heic", "rainbow-451x461.heic"] {
            let data = try Corpus.data("heif", name)
            let one = try HEIFDecoder(threadCount: 1).decode(data, options: DecodeOptions()).bitmap
            for count in [2, 4] {
                #expect(try HEIFDecoder(threadCount: count).decode(data, options: DecodeOptions()).bitmap == one, "\(name), \(count) workers")
            }
        }
    }

    /// example.heic embeds 320×212 thumbnails: a target they cover decodes the thumbnail
    /// (the bitmap is the thumbnail's size, not 1280×854), and it looks like the picture.
    @Test func aSmallTargetDecodesTheEmbeddedThumbnail() throws {
        let data = try Corpus.data("heif", "example.heic")
        let target = PixelSize(width: 200, height: 133)
        let small = try HEIFDecoder().decode(data, options: DecodeOptions(targetSize: target))
        #expect(small.bitmap.size == PixelSize(width: 320, height: 212))
        #expect(small.bitmap.size.width >= target.width && small.bitmap.size.height >= target.height)
        #expect(small.info.size == PixelSize(width: 1280, height: 854))
        let full = try HEIFDecoder().decode(data, options: DecodeOptions())
        let scaled = Resampler.resample(full.bitmap, to: small.bitmap.size)
        #expect(absoluteDifference(scaled, small.bitmap).mean < 12)
        // Exactly the thumbnail's size still uses it; one pixel more needs the primary image,
        // which is resampled to the target while it is read from libheif's plane.
        #expect(try HEIFDecoder().decode(data, options: DecodeOptions(targetSize: PixelSize(width: 320, height: 212))).bitmap.size
                == PixelSize(width: 320, height: 212))
        #expect(try HEIFDecoder().decode(data, options: DecodeOptions(targetSize: PixelSize(width: 321, height: 214))).bitmap.size
                == PixelSize(width: 321, height: 214))
    }

    /// A smaller target without a usable thumbnail: the primary image's rows go from libheif's
    /// plane through the resampler, with exactly the pixels of resampling the full decode
    /// (opaque HEIC through libheif's RGB plane; AVIF with alpha through RGBA, premultiplied row by row).
    @Test(arguments: ["rainbow-451x461.heic", "example.avif"])
    func aSmallerPrimaryImageIsResampledFromTheDecodedPlane(name: String) throws {
        guard name.hasSuffix(".heic") || HEIFDecoder.decodesAVIF else { return }
        let data = try Corpus.data("heif", name)
        let full = try HEIFDecoder().decode(data, options: DecodeOptions()).bitmap
        for target in [PixelSize(width: 100, height: 80), PixelSize(width: full.width, height: full.height / 3)] {
            let small = try HEIFDecoder().decode(data, options: DecodeOptions(targetSize: target))
            #expect(small.bitmap.size == target)
            #expect(small.bitmap == Resampler.resample(full, to: target), "\(name) at \(target)")
        }
    }

    /// With alpha (HEIC and AVIF made by `heif-enc` from `Samples/glass-alpha.png`): the rows
    /// of libheif's straight RGBA plane are premultiplied one at a time on their way into the
    /// resampler, with the same pixels as resampling the full (premultiplied) decode.
    @Test(.enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/bin/heif-enc"), "heif-enc is not installed"),
          arguments: [[], ["-A"]])
    func anAlphaPrimaryImageIsPremultipliedRowByRow(encoderArguments: [String]) throws {
        guard encoderArguments.isEmpty || HEIFDecoder.decodesAVIF else { return }
        let png = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../../Samples/glass-alpha.png")
        let out = FileManager.default.temporaryDirectory.appendingPathComponent("alpha-\(UUID().uuidString).heif")
        defer { try? FileManager.default.removeItem(at: out) }
        let encoded = try ExternalTool.runBlocking("/usr/bin/heif-enc", encoderArguments + ["-q", "80", png.standardizedFileURL.path, "-o", out.path])
        try #require(encoded.status == 0, "heif-enc failed")
        let data = try Data(contentsOf: out)
        #expect(try HEIFDecoder().readInfo(data).hasAlpha)
        let full = try HEIFDecoder().decode(data, options: DecodeOptions()).bitmap
        let target = PixelSize(width: 120, height: 80)
        let small = try HEIFDecoder().decode(data, options: DecodeOptions(targetSize: target)).bitmap
        #expect(small == Resampler.resample(full, to: target))
        #expect((0..<full.height).contains { y in (0..<full.width).contains { full.pixel(x: $0, y: y).a < 255 } }, "the picture has transparent parts")
    }

    /// HEIC and AVIF with alpha (made by `heif-enc` from `Samples/glass-alpha.png`) decoded at
    /// full size with straight alpha give exactly `heif-convert`'s straight RGBA PNG (the same
    /// libheif conversion), read by an independent decoder, netpbm's `pngtopam -alphapam`.
    @Test(.enabled(if: ["/usr/bin/heif-enc", "/usr/bin/heif-convert", "/usr/bin/pngtopam"].allSatisfy {
              FileManager.default.isExecutableFile(atPath: $0) }, "heif-enc, heif-convert or pngtopam is not installed"),
          arguments: [[], ["-A"]])
    func aStraightDecodeWithAlphaMatchesHeifConvertExactly(heifEncArguments: [String]) throws {
        guard heifEncArguments.isEmpty || HEIFDecoder.decodesAVIF else { return }
        let png = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../../Samples/glass-alpha.png")
        let temporary = try TemporaryDirectory(prefix: "heif-alpha")
        defer { temporary.remove() }
        let directory = temporary.url
        let encoded = directory.appendingPathComponent("alpha.heif"), reference = directory.appendingPathComponent("reference.png")
        let pam = directory.appendingPathComponent("reference.pam")
        for (tool, arguments, output) in [
            ("/usr/bin/heif-enc", heifEncArguments + ["-q", "80", png.standardizedFileURL.path, "-o", encoded.path], nil),
            ("/usr/bin/heif-convert", [encoded.path, reference.path], nil),
            ("/usr/bin/pngtopam", ["-alphapam", reference.path], pam),
        ] as [(String, [String], URL?)] {
            let result = try ExternalTool.runBlocking(tool, arguments)
            try #require(result.status == 0, "\(tool) failed")
            try output.map { try result.output.write(to: $0) }
        }
        let pamData = try Data(contentsOf: pam)
        let header = try #require(pamData.range(of: Data("ENDHDR\n".utf8)), "pngtopam wrote no PAM")
        let headerText = String(decoding: pamData[..<header.lowerBound], as: UTF8.self)
        try #require(headerText.contains("TUPLTYPE RGB_ALPHA") && headerText.contains("MAXVAL 255"), "\(headerText)")
        let expected = [UInt8](pamData[header.upperBound...])
        let decoded = try HEIFDecoder().decode(try Data(contentsOf: encoded), options: DecodeOptions(pixelFormat: .rgba8Straight)).bitmap
        #expect(decoded.pixelFormat == .rgba8Straight)
        try #require(expected.count == decoded.width * decoded.height * 4, "\(headerText) vs \(decoded.size)")
        let translucent = stride(from: 3, to: expected.count, by: 4).filter { expected[$0] > 0 && expected[$0] < 255 }.count
        #expect(translucent > 1000, "the picture has semi-transparent parts")
        let ours = decoded.unpremultipliedBytes()
        let differing = zip(ours, expected).filter { $0 != $1 }.count
        #expect(differing == 0, "\(differing) channel values differ from heif-convert's")
    }

    @Test func rainbowMatchesHeifConvert() throws {
        let decoded = try HEIFDecoder().decode(try Corpus.data("heif", "rainbow-451x461.heic"), options: DecodeOptions())
        #expect(decoded.bitmap.size == PixelSize(width: 451, height: 461))
        let corner = decoded.bitmap.pixel(x: 5, y: 5), opposite = decoded.bitmap.pixel(x: 445, y: 455)
        #expect(corner.a == 255 && opposite.a == 255)
        let spread = abs(Int(corner.r) - Int(opposite.r)) + abs(Int(corner.g) - Int(opposite.g)) + abs(Int(corner.b) - Int(opposite.b))
        #expect(spread > 100, "a rainbow's corners differ in hue: \(corner) vs \(opposite)")
        if Self.heifConvert != nil {
            let reference = try Self.reference("rainbow-451x461.heic")
            #expect(reference.size == decoded.bitmap.size)
            if reference.size == decoded.bitmap.size { #expect(absoluteDifference(reference, decoded.bitmap).mean < 1.5) }
        }
    }

    /// Decodes when libheif has an AV1 decoder (and matches `heif-convert`), else `.unsupported`.
    @Test func avifFollowsTheAV1Decoder() throws {
        let data = try Corpus.data("heif", "example.avif")
        if HEIFDecoder.decodesAVIF {
            let decoded = try HEIFDecoder().decode(data, options: DecodeOptions())
            #expect(decoded.info.format == .avif)
            #expect(decoded.bitmap.size == PixelSize(width: 800, height: 533))
            if Self.heifConvert != nil {
                let reference = try Self.reference("example.avif")
                #expect(reference.size == decoded.bitmap.size)
                if reference.size == decoded.bitmap.size { #expect(absoluteDifference(reference, decoded.bitmap).mean < 1.5) }
            }
        } else {
            #expect {
                _ = try HEIFDecoder().decode(data, options: DecodeOptions())
            } throws: { error in
                if case ImagePipelineError.unsupported(format: .avif, _) = error { return true }
                return false
            }
        }
    }

    /// A HEIF "mini" (low-overhead) file, which libheif 1.15 predates: a typed error or a picture.
    @Test func lightningMiniFailsTypedOrDecodes() throws {
        let data = try Corpus.data("heif", "lightning_mini.heif")
        do {
            let decoded = try HEIFDecoder().decode(data, options: DecodeOptions())
            #expect(decoded.bitmap.size == decoded.info.size)
        } catch let error as ImagePipelineError {
            switch error {
            case .corruptData(format: .heif?, _), .unsupported(format: .heif, _): break
            default: Issue.record("unexpected error \(error)")
            }
        }
    }

    @Test func aPipelineWithTheHEIFDecoderReturnsTheRequestedSize() async throws {
        let data = try Corpus.data("heif", "example.heic")
        let loader = HeldLoader(schemes: ["test"]) { _ in .success(.data(data, ResponseMetadata())) }
        let pipeline = ImagePipeline(configuration: ImagePipeline.Configuration(
            decoders: DecoderRegistry().registering(HEIFDecoder()), loaders: LoaderRegistry([loader])))
        let url = try #require(URL(string: "test:///example.heic"))
        let full = try await pipeline.image(for: ImageRequest(url: url))
        #expect(full.format == .heif)
        #expect(full.bitmap.size == PixelSize(width: 1280, height: 854))
        #expect(full.originalSize == PixelSize(width: 1280, height: 854))
        let thumb = try await pipeline.image(for: ImageRequest(url: url, width: 100, height: 100))
        #expect(thumb.bitmap.size.width == 100 || thumb.bitmap.size.height == 100)
        #expect(thumb.bitmap.size.width <= 100 && thumb.bitmap.size.height <= 100)
        #expect(thumb.originalSize == PixelSize(width: 1280, height: 854))
    }
}
