import CJPEGTestEncoder
import CLCMS2
import CodecJPEG
import ColorManagement
import Foundation
import PipelineCore
import PipelineTestSupport
import Testing

/// CMYK JPEGs with a CMYK profile: the rows go through the profile, not the naive formula.
@Suite(.tags(.cpuBound))
struct CMYKProfileTests {
    /// A CMYK output profile whose A2B0 table is deliberately not the naive formula: cyan ink
    /// also takes away some red *and* green, black only takes away 70%.
    static func cmykProfile() throws -> [UInt8] {
        let profile = try #require(cmsCreateProfilePlaceholder(nil))
        defer { cmsCloseProfile(profile) }
        cmsSetProfileVersion(profile, 4.3)
        cmsSetDeviceClass(profile, cmsSigOutputClass)
        cmsSetColorSpace(profile, cmsSigCmykData)
        cmsSetPCS(profile, cmsSigLabData)
        let srgb = try #require(cmsCreate_sRGBProfile())
        defer { cmsCloseProfile(srgb) }
        let lab = try #require(cmsCreateLab4Profile(nil))
        defer { cmsCloseProfile(lab) }
        let toLab = try #require(cmsCreateTransform(srgb, Self.rgbDouble, lab, Self.labDouble,
                                                    cmsUInt32Number(INTENT_RELATIVE_COLORIMETRIC), 0))
        defer { cmsDeleteTransform(toLab) }
        let pipeline = try #require(cmsPipelineAlloc(nil, 4, 3))
        defer { cmsPipelineFree(pipeline) }
        let clut = try #require(cmsStageAllocCLut16bit(nil, 9, 4, 3, nil))
        let sampler: cmsSAMPLER16 = { input, output, cargo in
            guard let input, let output, let cargo else { return 0 }
            let ink = (0..<4).map { Double(input[$0]) / 65535 }
            var rgb = [(1 - ink[0]) * (1 - 0.3 * ink[1]) * (1 - 0.7 * ink[3]),
                       (1 - ink[1]) * (1 - 0.3 * ink[0]) * (1 - 0.7 * ink[3]),
                       (1 - ink[2]) * (1 - 0.7 * ink[3])]
            var lab = cmsCIELab()
            cmsDoTransform(cargo, &rgb, &lab, 1)
            cmsFloat2LabEncoded(output, &lab)
            return 1
        }
        try #require(cmsStageSampleCLut16bit(clut, sampler, toLab, 0) != 0)
        // An `mAB` table needs curves around its CLUT: identity ones.
        try #require(cmsPipelineInsertStage(pipeline, cmsAT_END, try #require(cmsStageAllocToneCurves(nil, 4, nil))) != 0)
        try #require(cmsPipelineInsertStage(pipeline, cmsAT_END, clut) != 0)
        try #require(cmsPipelineInsertStage(pipeline, cmsAT_END, try #require(cmsStageAllocToneCurves(nil, 3, nil))) != 0)
        try #require(cmsWriteTag(profile, cmsSigAToB0Tag, UnsafeRawPointer(pipeline)) != 0)
        try #require(cmsWriteTag(profile, cmsSigMediaWhitePointTag, UnsafeRawPointer(cmsD50_XYZ())) != 0)
        var size: cmsUInt32Number = 0
        try #require(cmsSaveProfileToMem(profile, nil, &size) != 0)
        var bytes = [UInt8](repeating: 0, count: Int(size))
        try #require(cmsSaveProfileToMem(profile, &bytes, &size) != 0)
        return bytes
    }

    static let rgbDouble: cmsUInt32Number = (1 << 22) | (4 << 16) | (3 << 3)  // TYPE_RGB_DBL: FLOAT_SH(1), PT_RGB, 3 channels, BYTES_SH(0)
    static let labDouble: cmsUInt32Number = (1 << 22) | (10 << 16) | (3 << 3)  // TYPE_Lab_DBL: FLOAT_SH(1), PT_Lab, 3 channels

    @Test func cmykJPEGsGoThroughTheirCMYKProfile() throws {
        let profileBytes = try Self.cmykProfile()
        // Patches of CMYK ink (0 = none), stored Adobe-inverted as Photoshop does.
        let patches: [[UInt8]] = [[0, 0, 0, 0], [255, 0, 0, 0], [0, 200, 0, 0], [0, 0, 180, 60], [120, 60, 30, 200], [255, 255, 255, 255]]
        let width = 16 * patches.count, height = 16
        let pixels = (0..<height).flatMap { _ in (0..<width).flatMap { patches[$0 / 16].map { 255 - $0 } } }
        var out: UnsafeMutablePointer<UInt8>? = nil
        var size: UInt = 0
        try #require(jpegtest_encode(pixels, Int32(width), Int32(height), Int32(JPEGTEST_CMYK), 100, 0, 0, 0, &out, &size) == 0)
        defer { jpegtest_free(out) }
        let encoded = [UInt8](UnsafeBufferPointer(start: try #require(out), count: Int(size)))
        let length = 2 + 14 + profileBytes.count
        try #require(length <= 65535)
        let segment = [0xFF, 0xE2, UInt8(length >> 8), UInt8(length & 0xFF)] + Array("ICC_PROFILE".utf8) + [0, 1, 1] + profileBytes
        let data = Data(encoded.prefix(2) + segment + encoded.dropFirst(2))

        let decoded = try JPEGDecoder().decode(data, options: DecodeOptions())
        #expect(decoded.warnings.isEmpty, "\(decoded.warnings)")
        #expect(decoded.info.colorProfile?.colorSpace == "CMYK" && decoded.info.colorProfile?.problem == nil)
        let naive = try JPEGDecoder().decode(data, options: DecodeOptions(convertsToSRGB: false)).bitmap

        // What lcms makes of the same ink through the same profile (perceptual: the header's
        // intent, and the profile has a perceptual table).
        let profile = ColorManagement.profile(iccData: Data(profileBytes))
        var reference = try #require(Bitmap(width: patches.count, height: 1, bytesPerRow: patches.count * 4, bytes: patches.flatMap { $0 }))
        profile.convertCMYKToSRGB(&reference, inverted: false)
        var differs = false
        for (index, _) in patches.enumerated() {
            let got = decoded.bitmap.pixel(x: index * 16 + 8, y: 8), want = reference.pixel(x: index, y: 0)
            #expect(abs(Int(got.r) - Int(want.r)) <= 3 && abs(Int(got.g) - Int(want.g)) <= 3 && abs(Int(got.b) - Int(want.b)) <= 3
                    && got.a == 255, "patch \(patches[index]): \(got) vs \(want)")
            let plain = naive.pixel(x: index * 16 + 8, y: 8)
            if abs(Int(plain.r) - Int(got.r)) + abs(Int(plain.g) - Int(got.g)) + abs(Int(plain.b) - Int(got.b)) > 30 { differs = true }
        }
        #expect(differs, "the profile's colours equal the naive conversion's")
        // Pure cyan ink: the profile keeps 70% of green where the naive formula keeps it all.
        let cyan = decoded.bitmap.pixel(x: 16 + 8, y: 8)
        #expect(cyan.r < 40 && cyan.g < 235 && cyan.b > 200, "\(cyan)")
    }
}
