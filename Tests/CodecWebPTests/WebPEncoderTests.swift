@testable import CodecWebP
import Foundation
import PipelineCore
import PipelineTestSupport
import Testing

/// ``WebPEncoder`` against an independent decoder: every file is read back by `dwebp -pam`
/// (libwebp's own tool, straight RGBA), never by our decoder.
@Suite(.enabled(if: PortableMap.dwebp != nil, "dwebp (Debian's webp package) is not installed"), .tags(.cpuBound))
struct WebPEncoderTests {
    /// A 61×47 picture (odd sizes: partial macroblocks) of gradients and hard edges whose alpha
    /// runs through every level, 0 and 255 included.
    static func translucent() throws -> Bitmap {
        let width = 61, height = 47
        var straight = [UInt8](repeating: 0, count: width * height * 4)
        for y in 0..<height {
            for x in 0..<width {
                let i = (y * width + x) * 4
                straight[i] = UInt8((x * 255) / (width - 1))
                straight[i + 1] = UInt8((y * 255) / (height - 1))
                straight[i + 2] = (x / 8 + y / 8) % 2 == 0 ? 230 : 20
                straight[i + 3] = UInt8((y * width + x) % 256)
            }
        }
        straight.withUnsafeMutableBufferPointer { Bitmap.premultiply($0) }
        return try #require(Bitmap(width: width, height: height, bytesPerRow: width * 4, bytes: straight))
    }

    /// libjpeg-turbo's `testorig.ppm` (227×149 photo), opaque, or with alpha rising from 0 at
    /// the left edge to 255 at the right.
    static func photo(alphaRamp: Bool = false) throws -> Bitmap {
        let opaque = try PortableMap.bitmap(Corpus.data("jpeg", "testorig.ppm"))
        guard alphaRamp else { return opaque }
        var rgba = opaque.bytes
        for y in 0..<opaque.height {
            for x in 0..<opaque.width {
                rgba[(y * opaque.width + x) * 4 + 3] = UInt8(x * 255 / (opaque.width - 1))
            }
        }
        rgba.withUnsafeMutableBufferPointer { Bitmap.premultiply($0) }
        return try #require(Bitmap(width: opaque.width, height: opaque.height, bytesPerRow: opaque.width * 4, bytes: rgba))
    }

    /// `dwebp -pam` of `data`: (width, height, straight RGBA).
    static func dwebpDecode(_ data: Data) throws -> (width: Int, height: Int, rgba: [UInt8]) {
        let dwebp = try #require(PortableMap.dwebp)
        let stem = FileManager.default.temporaryDirectory.appendingPathComponent("webpenc-\(UUID().uuidString)")
        let input = stem.appendingPathExtension("webp"), output = stem.appendingPathExtension("pam")
        defer {
            try? FileManager.default.removeItem(at: input)
            try? FileManager.default.removeItem(at: output)
        }
        try data.write(to: input)
        try PortableMap.run(dwebp, ["-quiet", "-pam", input.path, "-o", output.path])
        return try PortableMap.rgba(Data(contentsOf: output))
    }

    @Test func losslessRoundTripIsExactWithSemiTransparentPixels() throws {
        let bitmap = try Self.translucent()
        let data = try WebPEncoder().encode(bitmap, options: EncodeOptions(lossless: true))
        #expect(data.range(of: Data("VP8L".utf8)) != nil, "not a lossless bitstream")
        let decoded = try Self.dwebpDecode(data)
        let (width, height) = (decoded.width, decoded.height)  // not `decoded` in #expect: it would print every pixel
        #expect(width == bitmap.width && height == bitmap.height)
        let expected = bitmap.unpremultipliedBytes()
        let differing = zip(decoded.rgba, expected).filter { $0 != $1 }.count
        #expect(differing == 0, "\(differing) channel values differ from our straight RGBA")
    }

    /// `exact`: lossless keeps the colour of fully transparent pixels, which a straight bitmap
    /// (a full-size decode) carries and libwebp would otherwise replace to save bytes. Fed as
    /// straight bytes, since a premultiplied bitmap has none to keep.
    @Test func losslessKeepsColourUnderTransparentPixels() throws {
        let size = PixelSize(width: 40, height: 24)
        let straight = straightRGBAWithColourUnderTransparency(size)
        let data = try WebPEncoder().encode(straight: straight, size: size, options: EncodeOptions(lossless: true))
        let decoded = try Self.dwebpDecode(data)
        let differing = zip(decoded.rgba, straight).filter { $0 != $1 }.count
        #expect(differing == 0, "\(differing) channel values differ (colour under alpha 0 dropped?)")
    }

    /// Lossy at the default quality (80), opaque: VP8 with 4:2:0 on a photo. PSNR against our
    /// own RGB ≥ 32 dB (measured 37.0 dB for `testorig` here; the margin absorbs another
    /// libwebp version's tuning); a wrong channel order, a shifted row or a wrong stride drops
    /// it below 15 dB.
    @Test(.enabled(if: Corpus.has("jpeg"), Corpus.missing("jpeg")))
    func lossyOpaquePhotoIsCloseAndHasNoAlpha() throws {
        let bitmap = try Self.photo()
        let data = try WebPEncoder().encode(bitmap)
        #expect(data.range(of: Data("ALPH".utf8)) == nil && data.range(of: Data("VP8 ".utf8)) != nil)
        let decoded = try Self.dwebpDecode(data)
        let (width, height) = (decoded.width, decoded.height)
        #expect(width == 227 && height == 149)
        let db = psnr(decoded.rgba, bitmap.unpremultipliedBytes())
        #expect(db >= 32, "PSNR \(db) dB")
        let opaque = decoded.rgba.enumerated().allSatisfy { $0.offset % 4 != 3 || $0.element == 255 }
        #expect(opaque)
        // Quality moves the size: q30 is smaller than the default, q95 bigger.
        let low = try WebPEncoder().encode(bitmap, options: EncodeOptions(quality: 30))
        let high = try WebPEncoder().encode(bitmap, options: EncodeOptions(quality: 95))
        #expect(low.count < data.count && data.count < high.count, "\(low.count) \(data.count) \(high.count)")
    }

    /// Lossy with alpha: the alpha plane is stored losslessly (`alpha_quality` 100), so alpha
    /// is exact. Colour is compared where alpha ≥ 128 (below that a premultiplied source
    /// carries few colour bits, libwebp weights chroma by alpha, and lossy WebP may change
    /// invisible colours): PSNR ≥ 34 dB at q90 on the photo (measured 40.1 dB).
    @Test(.enabled(if: Corpus.has("jpeg"), Corpus.missing("jpeg")))
    func lossyWithAlphaKeepsAlphaExactly() throws {
        let bitmap = try Self.photo(alphaRamp: true)
        let data = try WebPEncoder().encode(bitmap, options: EncodeOptions(quality: 90))
        #expect(data.range(of: Data("ALPH".utf8)) != nil)
        let decoded = try Self.dwebpDecode(data)
        let expected = bitmap.unpremultipliedBytes()
        var alphaDiffers = 0
        var visible: [UInt8] = [], expectedVisible: [UInt8] = []
        for pixel in 0..<(bitmap.width * bitmap.height) {
            if decoded.rgba[pixel * 4 + 3] != expected[pixel * 4 + 3] { alphaDiffers += 1 }
            if expected[pixel * 4 + 3] >= 128 {
                visible += decoded.rgba[pixel * 4..<pixel * 4 + 3]
                expectedVisible += expected[pixel * 4..<pixel * 4 + 3]
            }
        }
        #expect(alphaDiffers == 0)
        let db = psnr(visible, expectedVisible, stride: 3)
        #expect(db >= 34, "PSNR \(db) dB")
    }

    @Test(.enabled(if: Corpus.has("jpeg"), Corpus.missing("jpeg")))
    func effortChangesTheEncodingNotThePicture() throws {
        let bitmap = try Self.photo()
        let fast = try WebPEncoder().encode(bitmap, options: EncodeOptions(effort: 0))
        let slow = try WebPEncoder().encode(bitmap, options: EncodeOptions(effort: 6))
        #expect(fast != slow)
        for data in [fast, slow] {
            let decoded = try Self.dwebpDecode(data)
            let db = psnr(decoded.rgba, bitmap.unpremultipliedBytes())
            #expect(db >= 30, "PSNR \(db) dB")
        }
    }

    @Test func invalidOptionsAreTypedErrors() throws {
        let bitmap = try Self.translucent()
        let cases: [(EncodeOptions, String)] = [
            (EncodeOptions(quality: 120), "quality 120"), (EncodeOptions(quality: -1), "quality -1"),
            (EncodeOptions(effort: 9), "effort 9"), (EncodeOptions(chromaSubsampling: .yuv444), "4:4:4"),
        ]
        for (options, text) in cases {
            do {
                _ = try WebPEncoder().encode(bitmap, options: options)
                Issue.record("\(options) encoded")
            } catch let EncodingError.invalidOptions(format, message) {
                #expect(format == .webp && message.contains(text), "\(message)")
            }
        }
        // Lossless keeps full colour, so asking for 4:4:4 there is fine.
        _ = try WebPEncoder().encode(bitmap, options: EncodeOptions(lossless: true, chromaSubsampling: .yuv444))
    }

    /// libwebp's own error code (`WebPPicture.error_code`) becomes the message: a side over 16383.
    @Test func tooWideIsAFailureWithLibwebpsReason() throws {
        let bitmap = Bitmap(zeroed: PixelSize(width: 16384, height: 1))
        for lossless in [false, true] {
            do {
                _ = try WebPEncoder().encode(bitmap, options: EncodeOptions(lossless: lossless))
                Issue.record("a 16384-pixel-wide WebP was written")
            } catch let EncodingError.failed(format, message) {
                #expect(format == .webp && message.contains("16383"), "\(message)")
            }
        }
    }

    @Test func registryFindsIt() throws {
        let registry = EncoderRegistry().registering(WebPEncoder())
        let data = try registry.encode(try Self.translucent(), as: .webp, options: EncodeOptions(lossless: true))
        #expect(data.prefix(4) == Data("RIFF".utf8) && data.dropFirst(8).prefix(4) == Data("WEBP".utf8))
    }
}

/// Netpbm files the tests read: `P6` PPM sources and the `P7` RGB_ALPHA PAM that `dwebp -pam` writes.
enum PortableMap {
    struct Malformed: Error {}

    /// libwebp's `dwebp`, if installed.
    static let dwebp: URL? = ["/usr/bin/dwebp", "/usr/local/bin/dwebp"].map(URL.init(fileURLWithPath:))
        .first { FileManager.default.isExecutableFile(atPath: $0.path) }

    /// The header's tokens and where the pixels start (PPM: after the single whitespace byte
    /// that follows maxval; PAM: after `ENDHDR\n`).
    static func header(_ data: Data) throws -> (tokens: [String: String], numbers: [Int], offset: Int) {
        let bytes = [UInt8](data.prefix(512))
        if bytes.starts(with: Array("P7".utf8)) {
            guard let end = data.range(of: Data("ENDHDR\n".utf8)) else { throw Malformed() }
            let text = String(decoding: data[..<end.lowerBound], as: UTF8.self)
            var tokens: [String: String] = [:]
            for line in text.split(separator: "\n") {
                let parts = line.split(separator: " ", maxSplits: 1)
                if parts.count == 2 { tokens[String(parts[0])] = String(parts[1]) }
            }
            return (tokens, [], end.upperBound)
        }
        guard bytes.starts(with: Array("P6".utf8)) else { throw Malformed() }
        var numbers: [Int] = [], index = 2, current = ""
        while numbers.count < 3, index < bytes.count {
            let byte = bytes[index]
            if byte == UInt8(ascii: "#") {
                while index < bytes.count, bytes[index] != 10 { index += 1 }
            } else if (48...57).contains(byte) {
                current.append(Character(UnicodeScalar(byte)))
            } else if !current.isEmpty {
                numbers.append(Int(current) ?? 0)
                current = ""
            }
            index += 1
        }
        return ([:], numbers, index)
    }

    /// A `P6` PPM (maxval 255) as an opaque bitmap.
    static func bitmap(_ data: Data) throws -> Bitmap {
        let (_, numbers, offset) = try header(data)
        guard numbers.count == 3, numbers[2] == 255 else { throw Malformed() }
        let width = numbers[0], height = numbers[1]
        let rgb = [UInt8](data.dropFirst(offset))
        guard rgb.count >= width * height * 3 else { throw Malformed() }
        var rgba = [UInt8](repeating: 255, count: width * height * 4)
        for pixel in 0..<(width * height) {
            rgba[pixel * 4] = rgb[pixel * 3]
            rgba[pixel * 4 + 1] = rgb[pixel * 3 + 1]
            rgba[pixel * 4 + 2] = rgb[pixel * 3 + 2]
        }
        guard let bitmap = Bitmap(width: width, height: height, bytesPerRow: width * 4, bytes: rgba) else { throw Malformed() }
        return bitmap
    }

    /// A `P7` PAM with `TUPLTYPE RGB_ALPHA`, depth 4, maxval 255: (width, height, RGBA).
    static func rgba(_ data: Data) throws -> (width: Int, height: Int, rgba: [UInt8]) {
        let (tokens, _, offset) = try header(data)
        guard let width = tokens["WIDTH"].flatMap(Int.init), let height = tokens["HEIGHT"].flatMap(Int.init),
              tokens["DEPTH"] == "4", tokens["MAXVAL"] == "255" else { throw Malformed() }
        let pixels = [UInt8](data.dropFirst(offset))
        guard pixels.count == width * height * 4 else { throw Malformed() }
        return (width, height, pixels)
    }

    /// Runs `tool` with `arguments`; its stdout and stderr are discarded.
    static func run(_ tool: URL, _ arguments: [String]) throws {
        try #require(try ExternalTool.runBlocking(tool.path, arguments).status == 0, "\(tool.lastPathComponent) \(arguments) failed")
    }
}
