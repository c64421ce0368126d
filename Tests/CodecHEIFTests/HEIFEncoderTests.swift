import CHEIF
@testable import CodecHEIF
import Foundation
import PipelineCore
import PipelineTestSupport
import Testing

/// ``HEIFEncoder`` (HEIC through x265, AVIF through libaom) read back by `heif-convert`, an
/// independent program (libheif's own, decoding with libde265 and libaom/dav1d), to PNG, which
/// netpbm's `pngtopam -alphapam` turns into straight RGBA: compared with the straight bytes we
/// encoded, never after premultiplying. Pictures are small (227×149) because x265 and libaom
/// are slow.
@Suite(.enabled(if: HEIFEncoderFixtures.ready, "needs heif-convert (libheif-examples), pngtopam (netpbm) and the corpus's jpeg/testorig.ppm"), .tags(.cpuBound))
struct HEIFEncoderTests {
    static let available = HEIFEncoderFixtures.available

    /// libjpeg-turbo's `testorig.ppm` (227×149 photo: odd sides, so the encoders' padding and
    /// libheif's cropping are exercised), opaque or with alpha rising from 0 (left) to 255 (right).
    static func photo(alphaRamp: Bool = false) throws -> Bitmap {
        let data = try Corpus.data("jpeg", "testorig.ppm")
        // P6 header: "P6\n227 149\n255\n"
        let header = Array(String(decoding: data.prefix(20), as: UTF8.self).split(whereSeparator: \.isWhitespace).prefix(4))
        try #require(header.count == 4 && header[0] == "P6" && header[3] == "255")
        let width = try #require(Int(header[1])), height = try #require(Int(header[2]))
        let rgb = [UInt8](data.suffix(width * height * 3))
        var rgba = [UInt8](repeating: 255, count: width * height * 4)
        for pixel in 0..<(width * height) {
            rgba[pixel * 4] = rgb[pixel * 3]
            rgba[pixel * 4 + 1] = rgb[pixel * 3 + 1]
            rgba[pixel * 4 + 2] = rgb[pixel * 3 + 2]
            if alphaRamp { rgba[pixel * 4 + 3] = UInt8((pixel % width) * 255 / (width - 1)) }
        }
        rgba.withUnsafeMutableBufferPointer { Bitmap.premultiply($0) }
        return try #require(Bitmap(width: width, height: height, bytesPerRow: width * 4, bytes: rgba))
    }

    /// `heif-convert` of `data` to PNG, read as straight bytes by netpbm's `pngtopam -alphapam`:
    /// (size, straight RGBA, whether the PNG has an alpha channel; `-alphapam` writes one
    /// either way).
    static func heifConvert(_ data: Data, _ codec: HEIFEncoder.Codec) throws -> (size: PixelSize, rgba: [UInt8], hasAlpha: Bool) {
        let stem = FileManager.default.temporaryDirectory.appendingPathComponent("heifenc-\(UUID().uuidString)")
        let input = stem.appendingPathExtension(codec == .av1 ? "avif" : "heic"), output = stem.appendingPathExtension("png")
        defer {
            try? FileManager.default.removeItem(at: input)
            try? FileManager.default.removeItem(at: output)
        }
        try data.write(to: input)
        try run("/usr/bin/heif-convert", [input.path, output.path])
        let png = try Data(contentsOf: output)
        let hasAlpha = png.count > 25 && (png[25] == 4 || png[25] == 6)  // IHDR colour type: grey or RGB with alpha
        let pam = try run("/usr/bin/pngtopam", ["-alphapam", output.path])
        let end = try #require(pam.range(of: Data("ENDHDR\n".utf8)), "pngtopam wrote no PAM")
        var fields: [String: String] = [:]
        for line in String(decoding: pam[..<end.lowerBound], as: UTF8.self).split(separator: "\n") {
            let parts = line.split(separator: " ", maxSplits: 1)
            if parts.count == 2 { fields[String(parts[0])] = String(parts[1]) }
        }
        let width = try #require(fields["WIDTH"].flatMap(Int.init)), height = try #require(fields["HEIGHT"].flatMap(Int.init))
        let depth = try #require(fields["DEPTH"].flatMap(Int.init))
        try #require(fields["MAXVAL"] == "255" && (depth == 3 || depth == 4), "\(fields)")
        let samples = [UInt8](pam[end.upperBound...])
        try #require(samples.count == width * height * depth)
        guard depth == 3 else { return (PixelSize(width: width, height: height), samples, hasAlpha) }
        var rgba = [UInt8](repeating: 255, count: width * height * 4)
        for pixel in 0..<(width * height) {
            rgba[pixel * 4] = samples[pixel * 3]
            rgba[pixel * 4 + 1] = samples[pixel * 3 + 1]
            rgba[pixel * 4 + 2] = samples[pixel * 3 + 2]
        }
        return (PixelSize(width: width, height: height), rgba, false)
    }

    /// Default quality (50), opaque photo: the right size, no alpha, and PSNR ≥ 30 dB against
    /// our own pixels (measured here: HEIC 37.4 dB, AVIF 34.8 dB; both 4:2:0). A wrong channel
    /// order, shifted rows or a wrong stride land far below 20 dB.
    @Test(arguments: HEIFEncoderFixtures.available)
    func lossyOpaqueRoundTrip(_ codec: HEIFEncoder.Codec) throws {
        let bitmap = try Self.photo()
        let data = try HEIFEncoder(codec: codec).encode(bitmap)
        let decoded = try Self.heifConvert(data, codec)
        let (decodedSize, decodedHasAlpha) = (decoded.size, decoded.hasAlpha)  // not `decoded` in #expect: it would print every pixel
        #expect(decodedSize == bitmap.size)
        #expect(!decodedHasAlpha)
        let db = psnr(decoded.rgba, bitmap.unpremultipliedBytes())
        #expect(db >= 30, "\(codec): PSNR \(db) dB")
    }

    /// With alpha (0 at the left edge to 255 at the right), quality 60: the file has an alpha
    /// plane; alpha comes back within PSNR ≥ 40 dB (it is coded lossily too, as a monochrome
    /// picture; measured HEIC 64.3 dB, AVIF 55.9 dB) and colour where alpha ≥ 128 within
    /// PSNR ≥ 32 dB (measured 38.9 and 37.0 dB).
    @Test(arguments: HEIFEncoderFixtures.available)
    func lossyAlphaRoundTrip(_ codec: HEIFEncoder.Codec) throws {
        let bitmap = try Self.photo(alphaRamp: true)
        let data = try HEIFEncoder(codec: codec).encode(bitmap, options: EncodeOptions(quality: 60))
        let decoded = try Self.heifConvert(data, codec)
        let (decodedSize, decodedHasAlpha) = (decoded.size, decoded.hasAlpha)  // not `decoded` in #expect: it would print every pixel
        #expect(decodedSize == bitmap.size)
        #expect(decodedHasAlpha)
        let expected = bitmap.unpremultipliedBytes()
        let alpha = psnr(decoded.rgba, expected, channels: [3])
        let colour = psnr(decoded.rgba, expected) { expected[$0 * 4 + 3] >= 128 }
        #expect(alpha >= 40, "\(codec): alpha PSNR \(alpha) dB")
        #expect(colour >= 32, "\(codec): colour PSNR \(colour) dB")
    }

    /// Lossless (4:4:4, RGB stored as such, alpha plane lossless): opaque and translucent
    /// pictures come back exactly.
    @Test(arguments: HEIFEncoderFixtures.available)
    func losslessIsExact(_ codec: HEIFEncoder.Codec) throws {
        for alphaRamp in [false, true] {
            let bitmap = try Self.photo(alphaRamp: alphaRamp)
            let data = try HEIFEncoder(codec: codec).encode(bitmap, options: EncodeOptions(lossless: true))
            let decoded = try Self.heifConvert(data, codec)
            let (decodedSize, decodedHasAlpha) = (decoded.size, decoded.hasAlpha)  // not `decoded` in #expect: it would print every pixel
            #expect(decodedSize == bitmap.size && decodedHasAlpha == alphaRamp)
            let expected = bitmap.unpremultipliedBytes()
            let differing = zip(decoded.rgba, expected).filter { $0 != $1 }.count
            #expect(differing == 0, "\(codec) alpha \(alphaRamp): \(differing) channel values differ")
        }
    }

    /// Lossless keeps the colour of fully transparent pixels (a straight bitmap carries it; fed
    /// as straight bytes here, since a premultiplied bitmap has none).
    @Test(arguments: HEIFEncoderFixtures.available)
    func losslessKeepsColourUnderTransparentPixels(_ codec: HEIFEncoder.Codec) throws {
        let size = PixelSize(width: 40, height: 24)
        let straight = straightRGBAWithColourUnderTransparency(size)
        let data = try HEIFEncoder(codec: codec).encode(straight: straight, size: size, options: EncodeOptions(lossless: true))
        let decoded = try Self.heifConvert(data, codec)
        let (decodedSize, decodedHasAlpha) = (decoded.size, decoded.hasAlpha)  // not `decoded` in #expect: it would print every pixel
        #expect(decodedSize == size && decodedHasAlpha)
        let differing = zip(decoded.rgba, straight).filter { $0 != $1 }.count
        #expect(differing == 0, "\(codec): \(differing) channel values differ")
    }

    /// Runs `tool`; its stdout, read to the end while it runs.
    @discardableResult
    static func run(_ tool: String, _ arguments: [String]) throws -> Data {
        let result = try ExternalTool.runBlocking(tool, arguments)
        try #require(result.status == 0, "\(tool) \(arguments) failed")
        return result.output
    }

    @Test(arguments: HEIFEncoderFixtures.available)
    func invalidOptionsAreTypedErrors(_ codec: HEIFEncoder.Codec) throws {
        let bitmap = Bitmap(zeroed: PixelSize(width: 16, height: 16))
        let cases: [(EncodeOptions, String)] = [
            (EncodeOptions(quality: 120), "quality 120"), (EncodeOptions(effort: 9), "effort 9"),
            (EncodeOptions(lossless: true, chromaSubsampling: .yuv420), "4:4:4"),
        ]
        for (options, text) in cases {
            do {
                _ = try HEIFEncoder(codec: codec).encode(bitmap, options: options)
                Issue.record("\(codec) \(options) encoded")
            } catch let EncodingError.invalidOptions(format, message) {
                #expect(format == HEIFEncoder(codec: codec).format && message.contains(text), "\(message)")
            }
        }
    }

    /// A compression libheif 1.15 has no encoder for (JPEG 2000 inside HEIF) takes the path a
    /// libheif built without x265 or libaom takes: a typed `.unsupported`, nothing written.
    @Test func missingEncoderIsUnsupported() throws {
        let jpeg2000 = ImageFormat("jpeg2000-heif", mimeType: "image/hej2k", fileExtension: "hej2")
        let encoder = HEIFEncoder(format: jpeg2000, compression: heif_compression_JPEG2000, codec: .hevc)
        try #require(!encoder.isAvailable, "this libheif can encode JPEG 2000: pick another format for the test")
        do {
            _ = try encoder.encode(Bitmap(zeroed: PixelSize(width: 8, height: 8)), options: EncodeOptions())
            Issue.record("encoded without an encoder")
        } catch let EncodingError.unsupported(format, message) {
            #expect(format == jpeg2000 && message.contains("no"), "\(message)")
        }
    }

    /// x265 and libaom print nothing on fd 2 while encoding, odd and 1×1 pictures included. fd
    /// 2 is shared with tests running meanwhile, so only the encoders' own words are looked for.
    @Test func encodersWriteNothingToStandardError() throws {
        let bitmap = try Self.photo(alphaRamp: true)
        let (_, captured) = try capturingStandardError {
            for codec in Self.available {
                _ = try HEIFEncoder(codec: codec).encode(bitmap, options: EncodeOptions(effort: 6))
                _ = try HEIFEncoder(codec: codec).encode(bitmap, options: EncodeOptions(lossless: true))
                _ = try HEIFEncoder(codec: codec).encode(Bitmap(zeroed: PixelSize(width: 1, height: 1)), options: EncodeOptions(effort: 0))
            }
        }
        // Swift Testing's own event lines ("◇ Test … started.", "✔ …") from tests running
        // meanwhile land on the same fd and may name an encoder: they are not the encoders' words.
        let eventGlyphs: Set<Character> = ["◇", "✔", "✘", "↳", "⚠", "􀟈", "􁁛", "􀢄", "􀙟", "􀄣", "􀊯"]
        let foreign = captured.split(separator: "\n").filter { line in
            guard let first = line.trimmingPrefix(while: \.isWhitespace).first else { return false }
            return !eventGlyphs.contains(first)
        }.joined(separator: "\n")
        for word in ["x265", "aom", "AV1", "HEVC", "encoder", "[info]", "[warning]"] {
            #expect(!foreign.contains(word), "stderr: \(foreign)")
        }
    }

    /// Effort reaches the encoder: the fastest and the slowest setting give different files.
    @Test(arguments: HEIFEncoderFixtures.available)
    func effortChangesTheFile(_ codec: HEIFEncoder.Codec) throws {
        let bitmap = try Self.photo()
        let fast = try HEIFEncoder(codec: codec).encode(bitmap, options: EncodeOptions(effort: 0))
        let slow = try HEIFEncoder(codec: codec).encode(bitmap, options: EncodeOptions(effort: 5))
        #expect(fast != slow)
        let fastSize = try Self.heifConvert(fast, codec).size
        #expect(fastSize == bitmap.size)
    }

    /// Sizes the encoders pad (odd sides under 4:2:0, below x265's and libaom's block sizes)
    /// come back at their own size, with and without alpha.
    @Test(arguments: HEIFEncoderFixtures.available)
    func tinyAndOddSizesRoundTrip(_ codec: HEIFEncoder.Codec) throws {
        for (width, height) in [(1, 1), (2, 1), (1, 3), (17, 1), (7, 65)] {
            for opaque in [true, false] {
                var bitmap = Bitmap(zeroed: PixelSize(width: width, height: height))
                bitmap.withUnsafeMutableBytes { bytes in
                    for index in bytes.indices { bytes[index] = index % 4 == 3 ? (opaque ? 255 : 200) : UInt8(index % 200) }
                }
                let data = try HEIFEncoder(codec: codec).encode(bitmap)
                let decoded = try Self.heifConvert(data, codec)
                let (decodedSize, decodedHasAlpha) = (decoded.size, decoded.hasAlpha)  // not `decoded` in #expect: it would print every pixel
                #expect(decodedSize == bitmap.size && decodedHasAlpha == !opaque, "\(codec) \(width)×\(height)")
            }
        }
    }

    /// Encodes running at once (as a batch on every core does) give the same bytes as one alone.
    @Test(arguments: HEIFEncoderFixtures.available)
    func concurrentEncodesAgree(_ codec: HEIFEncoder.Codec) async throws {
        let bitmap = try Self.photo(alphaRamp: true)
        let alone = try HEIFEncoder(codec: codec).encode(bitmap)
        let together = try await withThrowingTaskGroup(of: Data.self) { group in
            for _ in 0..<4 { group.addTask { try HEIFEncoder(codec: codec).encode(bitmap) } }
            var all: [Data] = []
            for try await data in group { all.append(data) }
            return all
        }
        #expect(together.count == 4 && together.allSatisfy { $0 == alone })
    }

    @Test func registryFindsBothFormats() throws {
        let registry = EncoderRegistry().registering(HEIFEncoder.heic).registering(HEIFEncoder.avif)
        #expect(registry.formats == [.heif, .avif])
        #expect(HEIFEncoder.heic.format == .heif && HEIFEncoder.avif.format == .avif)
    }
}

/// What ``HEIFEncoderTests`` needs, outside the suite so its traits can refer to it.
enum HEIFEncoderFixtures {
    /// `heif-convert` is installed and the corpus has the photo.
    static let ready = FileManager.default.isExecutableFile(atPath: "/usr/bin/heif-convert")
        && FileManager.default.isExecutableFile(atPath: "/usr/bin/pngtopam") && Corpus.has("jpeg")

    /// The codecs this libheif can encode.
    static let available = HEIFEncoder.Codec.allCases.filter { HEIFEncoder(codec: $0).isAvailable }
}
