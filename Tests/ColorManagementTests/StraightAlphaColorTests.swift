import ColorManagement
import Foundation
import PipelineCore
import PipelineTestSupport
import Testing

/// A straight bitmap's colour goes through the profile as stored: the same colour as an
/// opaque pixel of that colour gets, whatever its alpha (a premultiplied one is divided out
/// and multiplied back, losing what premultiplying lost).
@Suite(.enabled(if: Corpus.has(ICC.folder), Corpus.missing(ICC.folder)), .tags(.cpuBound))
struct StraightAlphaColorTests {
    @Test func straightColourIsConvertedAsStoredWhateverTheAlpha() throws {
        let iccData = try #require(JPEGICCSegments.profile([UInt8](try Corpus.data(ICC.folder, "AdobeRGB1998.jpg"))))
        let profile = ColorManagement.profile(iccData: iccData)
        try #require(profile.isApplicable)
        // 256 colours × 16 alphas (1…241 and 255), straight.
        let width = 256, height = 16
        var bytes = [UInt8](repeating: 0, count: width * height * 4)
        for y in 0..<height {
            for x in 0..<width {
                let i = (y * width + x) * 4
                bytes[i] = UInt8(x); bytes[i + 1] = UInt8(255 - x); bytes[i + 2] = UInt8((x * 7) & 255)
                bytes[i + 3] = y == height - 1 ? 255 : UInt8(1 + y * 16)
            }
        }
        var straight = try #require(Bitmap(width: width, height: height, bytesPerRow: width * 4,
                                           pixelFormat: .rgba8Straight, bytes: bytes))
        var opaqueBytes = bytes
        for i in stride(from: 3, to: opaqueBytes.count, by: 4) { opaqueBytes[i] = 255 }
        var opaque = try #require(Bitmap(width: width, height: height, bytesPerRow: width * 4,
                                         pixelFormat: .rgba8Straight, bytes: opaqueBytes))
        profile.convertToSRGB(&straight, hasAlpha: true)
        profile.convertToSRGB(&opaque, hasAlpha: false)
        #expect(straight.pixelFormat == .rgba8Straight)
        var differing = 0
        for i in 0..<bytes.count {
            let expected = i % 4 == 3 ? bytes[i] : opaque.bytes[i]
            if straight.bytes[i] != expected { differing += 1 }
        }
        #expect(differing == 0, "\(differing) values differ from the opaque conversion of the same colours")
        #expect(opaque.bytes != opaqueBytes, "the profile changes colours")
    }
}
