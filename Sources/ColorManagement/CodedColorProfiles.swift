import CLCMS2
import Synchronization

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

extension ColorManagement {
    /// The ICC profile for a coded colour description (ITU-T H.273, as in HEIF/AVIF `nclx`
    /// boxes), when it is one that needs converting: Display P3 (primaries 12, SMPTE EG 432-1,
    /// D65) and BT.2020 (primaries 9) with the sRGB transfer (13) or one of the SDR camera
    /// curves (1, 6, 14, 15: BT.709/601/2020, decoded with the sRGB curve, as browsers show
    /// 8-bit video). `nil` for BT.709/sRGB primaries (already sRGB), unspecified values, and
    /// what is not handled (PQ/HLG, DCI white point, other primaries).
    ///
    /// The profile is built with lcms (`cmsCreateRGBProfile`), described as e.g.
    /// "Display P3 (nclx)", and serialised, so it is cached and reported like an embedded one.
    public static func profile(codedPrimaries primaries: Int, transfer: Int) -> ColorProfile? {
        guard [1, 6, 13, 14, 15].contains(transfer) else { return nil }
        let key = primaries
        if let bytes = codedProfiles.withLock({ $0[key] }) { return profile(iccData: bytes) }
        let made: Data?
        switch primaries {
        case 12: made = makeProfile("Display P3 (nclx)", red: (0.680, 0.320), green: (0.265, 0.690), blue: (0.150, 0.060))
        case 9: made = makeProfile("BT.2020 (nclx)", red: (0.708, 0.292), green: (0.170, 0.797), blue: (0.131, 0.046))
        default: made = nil
        }
        guard let made else { return nil }
        codedProfiles.withLock { $0[key] = made }
        return profile(iccData: made)
    }

    private static let codedProfiles = Mutex([Int: Data]())

    /// A D65 matrix-shaper profile with the sRGB curve and these primaries, as ICC bytes.
    private static func makeProfile(_ description: String, red: (Double, Double), green: (Double, Double),
                                    blue: (Double, Double)) -> Data? {
        var white = cmsCIExyY(x: 0.3127, y: 0.3290, Y: 1)
        var primaries = cmsCIExyYTRIPLE(Red: cmsCIExyY(x: red.0, y: red.1, Y: 1),
                                        Green: cmsCIExyY(x: green.0, y: green.1, Y: 1),
                                        Blue: cmsCIExyY(x: blue.0, y: blue.1, Y: 1))
        let parameters: [cmsFloat64Number] = [2.4, 1 / 1.055, 0.055 / 1.055, 1 / 12.92, 0.04045]
        guard let curve = parameters.withUnsafeBufferPointer({ cmsBuildParametricToneCurve(nil, 4, $0.baseAddress) }) else { return nil }
        defer { cmsFreeToneCurve(curve) }
        var curves: [OpaquePointer?] = [curve, curve, curve]
        guard let profile = cmsCreateRGBProfile(&white, &primaries, &curves) else { return nil }
        defer { cmsCloseProfile(profile) }
        if let text = cmsMLUalloc(nil, 1) {
            defer { cmsMLUfree(text) }
            _ = cmsMLUsetASCII(text, "en", "US", description)
            _ = cmsWriteTag(profile, cmsSigProfileDescriptionTag, UnsafeRawPointer(text))
        }
        var size: cmsUInt32Number = 0
        guard cmsSaveProfileToMem(profile, nil, &size) != 0, size > 0 else { return nil }
        var bytes = Data(count: Int(size))
        let saved = bytes.withUnsafeMutableBytes { cmsSaveProfileToMem(profile, $0.baseAddress, &size) }
        return saved != 0 ? bytes : nil
    }
}
