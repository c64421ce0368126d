import CJPEGTestEncoder
import CLCMS2
import CodecJPEG
import ColorManagement
import Foundation
import PipelineCore
import PipelineTestSupport
import Testing

/// The limits on an embedded profile (issue 21, finding 4): its size, checked from the APP2
/// chunk lengths before they are assembled; its lookup-table entries, read from the tables'
/// headers before a transform is built; and the transform's memory in the decode estimate,
/// with `info` building none.
@Suite(.tags(.cpuBound))
struct ICCLimitTests {
    /// An input-class RGB → Lab profile with one 16-bit CLUT of `grid`³ points (as
    /// `../shared/hostile/tools/mkicc.c bigclut` makes), described as `name`.
    static func clutProfile(grid: UInt32, name: String) throws -> Data {
        let profile = try #require(cmsCreateProfilePlaceholder(nil))
        defer { cmsCloseProfile(profile) }
        cmsSetProfileVersion(profile, 2.1)
        cmsSetDeviceClass(profile, cmsSigInputClass)
        cmsSetColorSpace(profile, cmsSigRgbData)
        cmsSetPCS(profile, cmsSigLabData)
        let pipeline = try #require(cmsPipelineAlloc(nil, 3, 3))
        defer { cmsPipelineFree(pipeline) }
        try #require(cmsPipelineInsertStage(pipeline, cmsAT_END, try #require(cmsStageAllocCLut16bit(nil, grid, 3, 3, nil))) != 0)
        try #require(cmsWriteTag(profile, cmsSigAToB0Tag, UnsafeRawPointer(pipeline)) != 0)
        try #require(cmsWriteTag(profile, cmsSigMediaWhitePointTag, UnsafeRawPointer(cmsD50_XYZ())) != 0)
        let text = try #require(cmsMLUalloc(nil, 1))
        defer { cmsMLUfree(text) }
        _ = cmsMLUsetASCII(text, "en", "US", name)
        try #require(cmsWriteTag(profile, cmsSigProfileDescriptionTag, UnsafeRawPointer(text)) != 0)
        var size: cmsUInt32Number = 0
        try #require(cmsSaveProfileToMem(profile, nil, &size) != 0)
        var bytes = [UInt8](repeating: 0, count: Int(size))
        try #require(cmsSaveProfileToMem(profile, &bytes, &size) != 0)
        return Data(bytes)
    }

    /// A 32×32 RGB JPEG with `profile` after SOI in APP2 chunks of at most 65 519 bytes.
    static func jpeg(profile: Data) throws -> Data {
        let pixels = (0..<(32 * 32 * 3)).map { UInt8(truncatingIfNeeded: $0 &* 7) }
        var out: UnsafeMutablePointer<UInt8>? = nil
        var size: UInt = 0
        try #require(jpegtest_encode(pixels, 32, 32, Int32(JPEGTEST_RGB), 90, 0, 0, 0, &out, &size) == 0)
        defer { jpegtest_free(out) }
        let encoded = [UInt8](UnsafeBufferPointer(start: try #require(out), count: Int(size)))
        let chunks = stride(from: 0, to: profile.count, by: 65519).map { profile[$0..<min(profile.count, $0 + 65519)] }
        var segments: [UInt8] = []
        for (index, chunk) in chunks.enumerated() {
            let length = 2 + 14 + chunk.count
            segments += [0xFF, 0xE2, UInt8(length >> 8), UInt8(length & 0xFF)] + Array("ICC_PROFILE".utf8)
            segments += [0, UInt8(index + 1), UInt8(chunks.count)] + chunk
        }
        return Data(encoded.prefix(2) + segments + encoded.dropFirst(2))
    }

    /// 70 chunks of zeros (4.6 MB, over the default 4 MiB): refused from the chunk lengths, so
    /// the bytes are never assembled nor read as a profile.
    @Test func aProfileOverTheDefaultSizeIsRefusedBeforeItIsAssembled() throws {
        let data = try Self.jpeg(profile: Data(count: 70 * 65519))
        let expected = ImagePipelineError.overLimit(.colorProfileBytes, limit: 4 << 20, actual: 70 * 65519)
        #expect(throws: expected) { _ = try JPEGDecoder().readInfo(data) }
        #expect(throws: expected) { _ = try JPEGDecoder().decode(data, options: DecodeOptions(convertsToSRGB: false)) }
    }

    @Test func aProfileOverARaisedOrLoweredSizeLimitIsJudgedByThatLimit() throws {
        let profile = try Self.clutProfile(grid: 33, name: "size limit")  // 33³ × 3 × 2 bytes: ~215 KB, 4 chunks
        let data = try Self.jpeg(profile: profile)
        let small = JPEGDecoder(colorProfileLimits: ColorProfileLimits(maxByteCount: 100_000))
        #expect(throws: ImagePipelineError.overLimit(.colorProfileBytes, limit: 100_000, actual: profile.count)) {
            _ = try small.readInfo(data)
        }
        #expect(try JPEGDecoder().readInfo(data).colorProfile?.byteCount == profile.count)
    }

    @Test func lookupTablesOverTheLimitAreRefusedBeforeATransformIsBuilt() throws {
        let profile = try Self.clutProfile(grid: 17, name: "entry limit")
        let data = try Self.jpeg(profile: profile)
        let limits = ColorProfileLimits(maxTableEntries: 4000)
        let expected = ImagePipelineError.overLimit(.colorProfileTableEntries, limit: 4000, actual: 17 * 17 * 17)
        #expect(throws: expected) { _ = try JPEGDecoder(colorProfileLimits: limits).decode(data, options: DecodeOptions()) }
        #expect(throws: expected) { _ = try ColorManagement.profile(iccData: profile, limits: limits) }
        #expect(try ColorManagement.profile(iccData: profile, limits: .default).tableEntryCount == 17 * 17 * 17)
    }

    /// `info` opens the profile but builds no transform; the decode's estimate counts the
    /// transform until it is built, and a CLUT profile under the limits converts.
    @Test func infoBuildsNoTransformAndTheEstimateCountsIt() throws {
        let profile = try Self.clutProfile(grid: 21, name: "estimate \(UUID())")
        let data = try Self.jpeg(profile: profile)
        let options = DecodeOptions()
        let (info, withTransform, without) = try JPEGDecoder().withSession(for: data) { session in
            (session.info, session.estimatedPeakMemory(options), session.estimatedPeakMemory(DecodeOptions(convertsToSRGB: false)))
        }
        #expect(info.colorProfile?.problem == nil)
        let cached = ColorManagement.profile(iccData: profile)
        #expect(cached.transformPeakBytes >= profile.count + 21 * 21 * 21 * 24, "not built yet, and counted")
        #expect(withTransform - without == cached.transformPeakBytes)
        let decoded = try JPEGDecoder().decode(data, options: options)
        #expect(decoded.warnings.isEmpty, "\(decoded.warnings)")
        var bitmap = decoded.bitmap
        cached.convertToSRGB(&bitmap, hasAlpha: false)
        #expect(cached.transformPeakBytes == 0, "built once converted")
    }
}
