import CodecPNG
import Foundation
import PipelineCore
import PipelineTestSupport
import Testing

/// netpbm's `pngtopam` (Debian `netpbm`, in `scripts/bootstrap`): an independent PNG decoder.
enum PNGTopam {
    static let path = ["/usr/bin/pngtopam", "/usr/local/bin/pngtopam"].first { FileManager.default.isExecutableFile(atPath: $0) }
    static let missing: Comment = "pngtopam is not installed (Debian netpbm; scripts/bootstrap installs it): skipped"

    /// `pngtopam -alphapam` of `png`: width, height, channels (3 or 4) and straight samples.
    static func decode(_ png: Data) throws -> (width: Int, height: Int, depth: Int, samples: [UInt8]) {
        let tool = try #require(path)
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("pngenc-\(UUID().uuidString).png")
        try png.write(to: file)
        defer { try? FileManager.default.removeItem(at: file) }
        let result = try ExternalTool.runBlocking(tool, ["-alphapam", file.path])
        try #require(result.status == 0, "pngtopam failed")
        return try #require(pam(result.output), "pngtopam wrote no PAM")
    }

    /// A P7 PAM with MAXVAL 255.
    static func pam(_ data: Data) -> (width: Int, height: Int, depth: Int, samples: [UInt8])? {
        let bytes = [UInt8](data)
        guard let end = bytes.indices.first(where: { bytes[$0...].starts(with: Array("ENDHDR\n".utf8)) }) else { return nil }
        var fields: [String: Int] = [:]
        for line in String(decoding: bytes[..<end], as: UTF8.self).split(separator: "\n") {
            let parts = line.split(separator: " ")
            if parts.count == 2, let value = Int(parts[1]) { fields[String(parts[0])] = value }
        }
        guard bytes.starts(with: Array("P7\n".utf8)), let width = fields["WIDTH"], let height = fields["HEIGHT"],
              let depth = fields["DEPTH"], fields["MAXVAL"] == 255 else { return nil }
        let samples = Array(bytes[(end + 7)...])
        guard samples.count == width * height * depth else { return nil }
        return (width, height, depth, samples)
    }
}

/// `PNGEncoder` through `encode(_:options:)`, read back by `pngtopam`.
@Suite(.enabled(if: PNGTopam.path != nil, PNGTopam.missing), .tags(.cpuBound))
struct PNGEncoderTests {
    /// Every alpha from 0 to 255 against varied colour: a premultiplied bitmap built from
    /// straight pixels (until bitmaps can hold straight alpha themselves).
    static func translucent(width: Int = 64, height: Int = 48) -> Bitmap {
        var generator = SeededGenerator(seed: 11)
        var rgba = [UInt8](repeating: 0, count: width * height * 4)
        for p in 0..<(width * height) {
            for c in 0..<3 { rgba[p * 4 + c] = UInt8.random(in: 0...255, using: &generator) }
            rgba[p * 4 + 3] = UInt8(truncatingIfNeeded: p)  // 0...255 repeatedly
        }
        rgba.withUnsafeMutableBufferPointer { Bitmap.premultiply($0) }
        return Bitmap(width: width, height: height, bytesPerRow: width * 4, bytes: rgba) ?? Bitmap(zeroed: PixelSize(width: 1, height: 1))
    }

    /// The straight pixels the encoder is given (`unpremultipliedBytes()`) come back exactly.
    @Test(arguments: [false, true])
    func straightAlphaRoundTripsExactlyThroughPngtopam(interlaced: Bool) throws {
        let bitmap = Self.translucent()
        let png = try PNGEncoder().encode(bitmap, options: EncodeOptions(progressive: interlaced, compressionLevel: 9))
        let decoded = try PNGTopam.decode(png)
        #expect(decoded.width == bitmap.width && decoded.height == bitmap.height)
        #expect(decoded.depth == 4)
        let expected = bitmap.unpremultipliedBytes()
        let differing = zip(decoded.samples, expected).filter { $0 != $1 }.count
        #expect(decoded.samples == expected, "\(differing) samples differ")
    }

    @Test func opaqueBitmapsAreWrittenAsRGBAndRoundTripExactly() throws {
        var rgba = Self.translucent().unpremultipliedBytes()
        for i in stride(from: 3, to: rgba.count, by: 4) { rgba[i] = 255 }
        let bitmap = try #require(Bitmap(width: 64, height: 48, bytesPerRow: 256, bytes: rgba))
        let png = try PNGEncoder().encode(bitmap, options: EncodeOptions())
        #expect([UInt8](png)[25] == 2, "IHDR colour type 2 (RGB)")
        let decoded = try PNGTopam.decode(png)  // with -alphapam: opaque alpha added
        #expect(decoded.samples.count == rgba.count)
        #expect(decoded.samples == rgba, "\(zip(decoded.samples, rgba).filter { $0 != $1 }.count) samples differ")
    }

    /// `progressive: true` writes Adam7 (the IHDR interlace byte is 1); the default does not.
    @Test func progressiveMeansAdam7() throws {
        let bitmap = Self.translucent()
        let plain = try PNGEncoder().encode(bitmap)
        let interlaced = try PNGEncoder().encode(bitmap, options: EncodeOptions(progressive: true))
        #expect([UInt8](plain)[28] == 0)
        #expect([UInt8](interlaced)[28] == 1)
        #expect(try PNGDecoder().decode(interlaced, options: DecodeOptions()).bitmap == PNGDecoder().decode(plain, options: DecodeOptions()).bitmap)
    }

    @Test func compressionLevelChangesSizeNotPixels() throws {
        let bitmap = PNGStreamingTests.pattern(width: 300, height: 200)
        let stored = try PNGEncoder().encode(bitmap, options: EncodeOptions(compressionLevel: 0))
        let smallest = try PNGEncoder().encode(bitmap, options: EncodeOptions(compressionLevel: 9))
        #expect(smallest.count < stored.count)
        #expect(try PNGTopam.decode(stored).samples == PNGTopam.decode(smallest).samples)
        // The option wins over the encoder's own level.
        #expect(try PNGEncoder(compressionLevel: 1).encode(bitmap, options: EncodeOptions(compressionLevel: 9)) == smallest)
    }

    /// `effort: 0` writes filter type None on every row (what a rendition cache may ask for:
    /// the cheapest to read back); the default lets libpng filter. At zlib level 0 the rows are
    /// stored as is, in one stored deflate block for this small picture: IDAT's data is the
    /// zlib header (2 bytes), the block header (5), then each row's filter byte and its pixels.
    @Test func effortZeroWritesNoRowFilters() throws {
        let bitmap = PNGStreamingTests.pattern(width: 16, height: 12)
        func filterBytes(_ png: Data) throws -> [UInt8] {
            let bytes = [UInt8](png)
            let idat = try #require(bytes.indices.first { bytes[$0...].starts(with: Array("IDAT".utf8)) })
            let rowLength = 1 + bitmap.width * (bytes[25] == 6 ? 4 : 3)  // IHDR colour type: RGBA or RGB
            return (0..<bitmap.height).map { bytes[idat + 4 + 7 + $0 * rowLength] }
        }
        let none = try PNGEncoder().encode(bitmap, options: EncodeOptions(compressionLevel: 0, effort: 0))
        let chosen = try PNGEncoder().encode(bitmap, options: EncodeOptions(compressionLevel: 0))
        #expect(try filterBytes(none) == [UInt8](repeating: 0, count: bitmap.height))
        #expect(try filterBytes(chosen).contains { $0 != 0 }, "libpng filters this pattern by default")
        #expect(try PNGTopam.decode(none).samples == PNGTopam.decode(chosen).samples)
    }

    @Test(arguments: [-1, 10, 100])
    func outOfRangeCompressionLevelIsInvalidOptions(_ level: Int) throws {
        let bitmap = Self.translucent(width: 4, height: 4)
        let error = #expect(throws: EncodingError.self) {
            try PNGEncoder().encode(bitmap, options: EncodeOptions(compressionLevel: level))
        }
        guard case .invalidOptions(format: .png, let message)? = error else {
            Issue.record("expected .invalidOptions, got \(String(describing: error))")
            return
        }
        #expect(message.contains("\(level)"))
        #expect(throws: EncodingError.self) { try PNGEncoder(compressionLevel: level).encode(bitmap) }
    }
}

/// ``EncodeOptions/iccProfile`` in PNG: a real profile (from a corpus picture) round-trips
/// through our decoder; a too-short one is refused before libpng; one libpng cannot take
/// fails with its message, not a crash or a file without it.
@Suite("PNG encoder ICC profiles", .tags(.cpuBound))
struct PNGEncoderICCTests {
    static let picture = Bitmap(zeroed: PixelSize(width: 4, height: 4), pixelFormat: .rgba8Straight)

    @Test(.enabled(if: Corpus.has("icc"), Corpus.missing("icc")))
    func aProfileIsEmbeddedAndReadBack() throws {
        let source = try Corpus.data("icc", "ProPhotoRGB.png")
        let decoder = PNGDecoder()
        let original = try decoder.decode(source, options: DecodeOptions(convertsToSRGB: false))
        let profile = try #require(original.iccProfile, "an RGB profile left unconverted is handed on")
        let encoded = try PNGEncoder().encode(Self.picture, options: EncodeOptions(iccProfile: profile))
        let again = try decoder.decode(encoded, options: DecodeOptions(convertsToSRGB: false))
        #expect(again.iccProfile == profile)
        #expect(again.info.colorProfile?.description == original.info.colorProfile?.description)
        let converted = try decoder.decode(source, options: DecodeOptions())
        #expect(converted.iccProfile == nil, "converted pixels are sRGB: no profile to carry")
    }

    @Test func unusableProfilesFailTyped() throws {
        #expect(throws: EncodingError.self) {
            try PNGEncoder().encode(Self.picture, options: EncodeOptions(iccProfile: Data(repeating: 1, count: 10)))
        }
        #expect(throws: EncodingError.self) {
            try PNGEncoder().encode(Self.picture, options: EncodeOptions(iccProfile: Data(repeating: 0x41, count: 400)))
        }
    }
}
