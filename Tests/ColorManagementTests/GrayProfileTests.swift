import CJPEGTestEncoder
import CLCMS2
import CodecJPEG
import ColorManagement
import Foundation
import PipelineCore
import PipelineTestSupport
import Testing

/// Gray JPEGs with a gray ICC profile: the gray curve is applied (here a linear one).
@Suite(.tags(.cpuBound))
struct GrayProfileTests {
    /// A gray profile with a linear (gamma 1) curve, as ICC bytes, made with lcms.
    static func linearGrayProfile() throws -> [UInt8] {
        var white = cmsCIExyY(x: 0.3457, y: 0.3585, Y: 1)  // D50
        let curve = try #require(cmsBuildGamma(nil, 1.0))
        defer { cmsFreeToneCurve(curve) }
        let profile = try #require(cmsCreateGrayProfile(&white, curve))
        defer { cmsCloseProfile(profile) }
        var size: cmsUInt32Number = 0
        try #require(cmsSaveProfileToMem(profile, nil, &size) != 0)
        var bytes = [UInt8](repeating: 0, count: Int(size))
        try #require(cmsSaveProfileToMem(profile, &bytes, &size) != 0)
        return bytes
    }

    /// `pixels` encoded at quality 100 with `profile` in one APP2 segment after SOI.
    static func jpeg(_ pixels: [UInt8], width: Int, height: Int, kind: Int32, profile: [UInt8]) throws -> Data {
        var out: UnsafeMutablePointer<UInt8>? = nil
        var size: UInt = 0
        try #require(jpegtest_encode(pixels, Int32(width), Int32(height), kind, 100, 0, 0, 0, &out, &size) == 0)
        defer { jpegtest_free(out) }
        let encoded = [UInt8](UnsafeBufferPointer(start: try #require(out), count: Int(size)))
        let length = 2 + 14 + profile.count
        let segment = [0xFF, 0xE2, UInt8(length >> 8), UInt8(length & 0xFF)] + Array("ICC_PROFILE".utf8) + [0, 1, 1] + profile
        return Data(encoded.prefix(2) + segment + encoded.dropFirst(2))
    }

    @Test func grayJPEGsGoThroughTheirGrayProfile() throws {
        let levels: [UInt8] = [0, 16, 64, 128, 200, 255]
        let width = 16 * levels.count, height = 16
        let pixels = (0..<height).flatMap { _ in (0..<width).map { levels[$0 / 16] } }
        let data = try Self.jpeg(pixels, width: width, height: height, kind: Int32(JPEGTEST_GRAY), profile: try Self.linearGrayProfile())
        let decoded = try JPEGDecoder().decode(data, options: DecodeOptions())
        #expect(decoded.warnings.isEmpty, "\(decoded.warnings)")
        #expect(decoded.info.colorProfile?.colorSpace == "GRAY")
        for (index, level) in levels.enumerated() {
            let pixel = decoded.bitmap.pixel(x: index * 16 + 8, y: 8)
            let expected = SRGBTransfer.encode(Double(level) / 255) * 255
            #expect(abs(Double(pixel.r) - expected) <= 3 && pixel.r == pixel.g && pixel.g == pixel.b && pixel.a == 255,
                    "level \(level): \(pixel), expected \(expected)")
        }
        let stored = try JPEGDecoder().decode(data, options: DecodeOptions(convertsToSRGB: false))
        #expect(stored.bitmap.pixel(x: 2 * 16 + 8, y: 8).r <= 66)
    }

    @Test func aGrayProfileOnAColourJPEGIsIgnoredWithAWarning() throws {
        let pixels = [UInt8](repeating: 90, count: 16 * 16 * 3)
        let data = try Self.jpeg(pixels, width: 16, height: 16, kind: Int32(JPEGTEST_RGB), profile: try Self.linearGrayProfile())
        let decoded = try JPEGDecoder().decode(data, options: DecodeOptions())
        #expect(decoded.warnings.contains { $0.contains("gray profile") }, "\(decoded.warnings)")
        #expect(decoded.bitmap == (try JPEGDecoder().decode(data, options: DecodeOptions(convertsToSRGB: false)).bitmap))
    }
}
