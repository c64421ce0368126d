import CodecJXL
import CodecPNG
import Foundation
import PipelineCore
import PipelineTestSupport
import Testing

/// `JXLEncoder` against our own decoder (libjxl) and `djxl`.
@Suite(.tags(.cpuBound))
struct JXLEncoderTests {
    /// A 64×48 gradient with alpha steps, colour under every alpha value (straight).
    static func gradient(alpha: Bool) throws -> Bitmap {
        let size = PixelSize(width: 64, height: 48)
        var bytes = [UInt8](repeating: 0, count: size.pixelCount * 4)
        for y in 0..<size.height {
            for x in 0..<size.width {
                let i = (y * size.width + x) * 4
                bytes[i] = UInt8(x * 4)
                bytes[i + 1] = UInt8(y * 5)
                bytes[i + 2] = UInt8((x + y) * 2)
                bytes[i + 3] = alpha ? UInt8((x * 37 + y * 11) % 256) : 255
            }
        }
        return try #require(Bitmap(width: size.width, height: size.height, bytesPerRow: size.width * 4,
                                   pixelFormat: .rgba8Straight, bytes: bytes))
    }

    @Test(arguments: [false, true])
    func losslessRoundTripIsExact(_ alpha: Bool) throws {
        let bitmap = try Self.gradient(alpha: alpha)
        let data = try JXLEncoder().encode(bitmap, options: EncodeOptions(lossless: true))
        let info = try JXLDecoder().readInfo(data)
        #expect(info.hasAlpha == alpha && info.size == bitmap.size)
        let decoded = try JXLDecoder().decode(data, options: DecodeOptions(pixelFormat: .rgba8Straight))
        #expect(decoded.bitmap.bytes == bitmap.bytes)
    }

    @Test func lossyQualityOrdersSizeAndFidelity() throws {
        let bitmap = try Self.gradient(alpha: false)
        let low = try JXLEncoder().encode(bitmap, options: EncodeOptions(quality: 30))
        let high = try JXLEncoder().encode(bitmap, options: EncodeOptions(quality: 95))
        #expect(low.count < high.count)
        let decoded = try JXLDecoder().decode(high, options: DecodeOptions(pixelFormat: .rgba8Straight))
        #expect(psnr(decoded.bitmap, bitmap) > 40)
    }

    @Test func distanceFollowsCjxl() {
        #expect(abs(JXLEncoder.distance(quality: 90) - 1.0) < 1e-5)
        #expect(abs(JXLEncoder.distance(quality: 100) - 0.1) < 1e-5)
        #expect(abs(JXLEncoder.distance(quality: 30) - 6.4) < 1e-5)
        #expect(abs(JXLEncoder.distance(quality: 10) - 12.65) < 1e-4)
        #expect(JXLEncoder.distance(quality: 0) == 25)
        #expect(JXLEncoder.libjxlEffort(nil) == 7 && JXLEncoder.libjxlEffort(0) == 1 && JXLEncoder.libjxlEffort(6) == 9)
    }

    @Test func optionsOutOfRangeAreRefused() {
        #expect(throws: EncodingError.self) { _ = try JXLEncoder().encode(try Self.gradient(alpha: false), options: EncodeOptions(quality: 101)) }
        #expect(throws: EncodingError.self) { _ = try JXLEncoder().encode(try Self.gradient(alpha: false), options: EncodeOptions(effort: 7)) }
        #expect(throws: EncodingError.self) {
            _ = try JXLEncoder().encode(try Self.gradient(alpha: false), options: EncodeOptions(iccProfile: Data(count: 12)))
        }
    }

    /// `EncodeOptions.iccProfile` is stored: our decoder reports it back.
    @Test(.enabled(if: Corpus.has("jxl"), Corpus.missing("jxl")))
    func iccProfileIsEmbedded() throws {
        let adobe = try Corpus.data(JXLReference.folder, "adobergb-d1.jxl")
        let left = try JXLDecoder().decode(adobe, options: DecodeOptions(convertsToSRGB: false))
        let icc = try #require(left.iccProfile)
        let data = try JXLEncoder().encode(try Self.gradient(alpha: false), options: EncodeOptions(lossless: true, iccProfile: icc))
        let info = try JXLDecoder().readInfo(data)
        #expect(info.colorProfile?.byteCount == icc.count)
    }

    /// djxl 0.7 reads what we write, to the same pixels.
    @Test(.enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/bin/djxl"), "djxl is not installed: skipped"))
    func djxlDecodesOurFiles() async throws {
        let bitmap = try Self.gradient(alpha: true)
        let data = try JXLEncoder().encode(bitmap, options: EncodeOptions(lossless: true))
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("jxl-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let input = directory.appendingPathComponent("in.jxl"), output = directory.appendingPathComponent("out.png")
        try data.write(to: input)
        #expect(try await ExternalTool.run("/usr/bin/djxl", [input.path, output.path, "--quiet"]).status == 0)
        let png = try PNGDecoder().decode(Data(contentsOf: output), options: DecodeOptions(convertsToSRGB: false, pixelFormat: .rgba8Straight))
        #expect(png.bitmap.unpremultipliedBytes() == bitmap.bytes)
    }
}
