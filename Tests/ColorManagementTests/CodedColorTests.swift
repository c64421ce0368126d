import ColorManagement
import Foundation
import PipelineCore
import PipelineTestSupport
import Testing

/// Coded (`nclx`) colour descriptions: Display P3 converts like the published P3 → sRGB matrix.
@Suite(.tags(.cpuBound))
struct CodedColorTests {
    @Test func displayP3ConvertsLikeThePublishedMatrix() throws {
        let profile = try #require(ColorManagement.profile(codedPrimaries: 12, transfer: 13))
        #expect(profile.isApplicable)
        #expect(profile.info.description == "Display P3 (nclx)" && profile.info.colorSpace == "RGB")
        let p3: [[Double]] = [[1.2249, -0.2247, 0], [-0.0420, 1.0419, 0], [-0.0197, -0.0786, 1.0979]]
        let samples: [[UInt8]] = [[200, 100, 50], [30, 180, 90], [128, 128, 128], [250, 20, 200], [0, 0, 0], [255, 255, 255]]
        var bitmap = try #require(Bitmap(width: samples.count, height: 1, bytesPerRow: samples.count * 4,
                                         bytes: samples.flatMap { $0 + [255] }))
        profile.convertToSRGB(&bitmap, hasAlpha: false)
        for (index, sample) in samples.enumerated() {
            let linear = sample.map { SRGBTransfer.decode(Double($0) / 255) }
            let expected = p3.map { row in SRGBTransfer.encode(zip(row, linear).map(*).reduce(0, +)) * 255 }
            let got = bitmap.pixel(x: index, y: 0)
            for (value, want) in zip([got.r, got.g, got.b], expected) {
                #expect(abs(Double(value) - want) <= 2, "\(sample): got \(got), expected \(expected)")
            }
        }
        #expect(ColorManagement.profile(codedPrimaries: 12, transfer: 13)?.info == profile.info)
    }

    @Test func sRGBPrimariesAndHDRTransfersAreLeftAlone() {
        #expect(ColorManagement.profile(codedPrimaries: 1, transfer: 13) == nil)   // BT.709 = sRGB primaries
        #expect(ColorManagement.profile(codedPrimaries: 2, transfer: 2) == nil)    // unspecified
        #expect(ColorManagement.profile(codedPrimaries: 9, transfer: 16) == nil)   // PQ
        #expect(ColorManagement.profile(codedPrimaries: 9, transfer: 18) == nil)   // HLG
        #expect(ColorManagement.profile(codedPrimaries: 9, transfer: 14)?.isApplicable == true)
    }
}
