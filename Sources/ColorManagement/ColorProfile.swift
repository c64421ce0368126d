import CLCMS2
import Foundation
import PipelineCore

/// An embedded ICC profile read by lcms2, with its transform to sRGB when it has one.
///
/// Made by ``ColorManagement/profile(iccData:)``, which caches them by their bytes: a grid of
/// photos from one camera opens the profile and builds the transform once. Immutable and
/// `Sendable`: one transform serves every thread (lcms's `cmsDoTransform` keeps its pixel cache
/// on the stack, so concurrent calls on one transform are safe).
public final class ColorProfile: @unchecked Sendable {
    /// What the profile says about itself, and why it cannot be applied when it cannot.
    public let info: ColorProfileInfo

    /// The lcms context the transforms live in; its error handler writes into `log`.
    private let context: cmsContext?
    /// lcms's error messages while the profile was read (kept alive as the context's user data).
    private let log: ErrorLog
    /// Stored RGB(A) (straight) or gray-in-RGBA → sRGB RGBA, alpha copied (RGB) or left in place (gray).
    private let opaqueTransform: cmsHTRANSFORM?
    /// CMYK (0 = no ink) and inverted CMYK → sRGB RGBA, for a CMYK profile.
    private let cmykTransforms: (plain: cmsHTRANSFORM, inverted: cmsHTRANSFORM)?
    /// The matrix-shaper fast path, used instead of `opaqueTransform` when the profile allows.
    private let matrixShaper: MatrixShaper?
    /// Whether the profile is a gray one (applied to gray pictures, decoded with R = G = B).
    public let isGray: Bool
    /// Whether the profile is a CMYK one: applied only to CMYK pixels, by
    /// ``convertCMYKToSRGB(_:inverted:)`` (a CMYK JPEG's decoder keeps its rows as CMYK for it).
    public var isCMYK: Bool { cmykTransforms != nil }
    /// Whether lcms could not read the profile (truncated, bad tag table...), as opposed to a
    /// valid profile this module does not apply (CMYK, device links).
    public let isDamaged: Bool

    /// The largest profile read: a JPEG can carry at most 255 APP2 segments of 65 519 bytes.
    static let maxByteCount = 16 << 20

    /// Whether the profile converts to sRGB (`ColorProfileInfo.problem` is `nil`).
    public var isApplicable: Bool { opaqueTransform != nil || cmykTransforms != nil }

    /// Reads `bytes` with lcms2 and builds the transform to sRGB. Never fails: a profile that
    /// cannot be used comes back with ``ColorProfileInfo/problem`` set and no transform.
    init(bytes: Data) {
        let log = ErrorLog()
        self.log = log
        let context = cmsCreateContext(nil, Unmanaged.passUnretained(log).toOpaque())
        self.context = context
        if let context { cmsSetLogErrorHandlerTHR(context, ColorProfile.errorHandler) }
        let built = ColorProfile.build(bytes: bytes, context: context, log: log)
        info = built.info
        opaqueTransform = built.opaque
        matrixShaper = built.fast
        cmykTransforms = built.cmyk
        isGray = built.gray
        isDamaged = built.damaged
    }

    deinit {
        if let opaqueTransform { cmsDeleteTransform(opaqueTransform) }
        if let cmykTransforms {
            cmsDeleteTransform(cmykTransforms.plain)
            cmsDeleteTransform(cmykTransforms.inverted)
        }
        if let context { cmsDeleteContext(context) }
    }

    /// Converts `bitmap`'s rows to sRGB in place; alpha is untouched. A straight bitmap's colour
    /// is converted as it is. A premultiplied one with `hasAlpha` has, in each row, its pixels
    /// with alpha below 255 divided out (straight colour), converted and multiplied back in,
    /// so the colour converted is the stored colour (lcms 2.14's own
    /// `TYPE_RGBA_8_PREMUL` gets 8-bit premultiplied pixels wrong). A gray profile reads the red
    /// byte (gray pictures decode with R = G = B) and is applied only to opaque pictures.
    /// Does nothing when ``isApplicable`` is false. Matrix-shaper profiles take a table-driven
    /// fast path (`MatrixShaper`); others go through `cmsDoTransform`.
    public func convertToSRGB(_ bitmap: inout Bitmap, hasAlpha: Bool) {
        guard let transform = opaqueTransform, !(hasAlpha && isGray) else { return }
        let width = bitmap.width, height = bitmap.height, stride = bitmap.bytesPerRow
        let premultiplied = hasAlpha && bitmap.pixelFormat.isPremultiplied
        bitmap.withUnsafeMutableBytes { pixels in
            guard let base = pixels.baseAddress else { return }
            if let matrixShaper {
                for y in 0..<height {
                    let row = UnsafeMutableBufferPointer(start: base + y * stride, count: width * 4)
                    let translucent = premultiplied && ColorProfile.unpremultiply(row)
                    matrixShaper.convert(base + y * stride, count: width)
                    if translucent { Bitmap.premultiply(row) }
                }
                return
            }
            guard premultiplied else {
                cmsDoTransformLineStride(transform, base, base, cmsUInt32Number(width), cmsUInt32Number(height),
                                         cmsUInt32Number(stride), cmsUInt32Number(stride), 0, 0)
                return
            }
            for y in 0..<height {
                let row = UnsafeMutableBufferPointer(start: base + y * stride, count: width * 4)
                let translucent = ColorProfile.unpremultiply(row)
                cmsDoTransform(transform, row.baseAddress, row.baseAddress, cmsUInt32Number(width))
                if translucent { Bitmap.premultiply(row) }
            }
        }
    }

    /// Converts CMYK pixels (4 bytes each, as libjpeg returns them; `inverted` when 255 means no
    /// ink, as in Adobe's CMYK JPEGs) to opaque sRGB RGBA in place. Does nothing unless ``isCMYK``.
    public func convertCMYKToSRGB(_ bitmap: inout Bitmap, inverted: Bool) {
        guard let cmykTransforms else { return }
        let transform = inverted ? cmykTransforms.inverted : cmykTransforms.plain
        let width = bitmap.width, height = bitmap.height, stride = bitmap.bytesPerRow
        bitmap.withUnsafeMutableBytes { pixels in
            guard let base = pixels.baseAddress else { return }
            // 4 bytes in, RGB + an extra (alpha) byte out: lcms leaves the extra byte (K) alone.
            cmsDoTransformLineStride(transform, base, base, cmsUInt32Number(width), cmsUInt32Number(height),
                                     cmsUInt32Number(stride), cmsUInt32Number(stride), 0, 0)
            for y in 0..<height {
                var index = y * stride + 3
                for _ in 0..<width { pixels[index] = 255; index += 4 }
            }
        }
    }

    /// Divides alpha out of premultiplied RGBA8 in place; returns whether any pixel had alpha < 255.
    static func unpremultiply(_ rgba: UnsafeMutableBufferPointer<UInt8>) -> Bool {
        var any = false
        var i = 0
        while i + 3 < rgba.count {
            let a = Int(rgba[i + 3])
            if a != 255 {
                any = true
                if a > 0 {
                    for c in 0..<3 { rgba[i + c] = UInt8(min(255, (Int(rgba[i + c]) * 255 + a / 2) / a)) }
                }
            }
            i += 4
        }
        return any
    }

    /// lcms's error callback: keeps the message in the context's ``ErrorLog``; never prints.
    private static let errorHandler: cmsLogErrorHandlerFunction = { context, _, text in
        guard let context, let user = cmsGetContextUserData(context) else { return }
        let log = Unmanaged<ErrorLog>.fromOpaque(user).takeUnretainedValue()
        log.append(text.map { MessageText.escaped(String(cString: $0)) } ?? "unknown lcms2 error")  // quotes tag types from the file
    }

    private struct Built {
        var info: ColorProfileInfo
        var opaque: cmsHTRANSFORM?
        var gray = false
        var damaged = false
        var fast: MatrixShaper? = nil
        var cmyk: (plain: cmsHTRANSFORM, inverted: cmsHTRANSFORM)? = nil
    }

    private static func build(bytes: Data, context: cmsContext?, log: ErrorLog) -> Built {
        func failed(_ message: String, space: String = "", description: String? = nil, damaged: Bool = true) -> Built {
            let detail = log.messages.first.map { ": \($0)" } ?? ""
            return Built(info: ColorProfileInfo(description: description, colorSpace: space, byteCount: bytes.count,
                                                problem: message + detail), damaged: damaged)
        }
        guard let context else { return failed("lcms2 could not allocate a context") }
        guard bytes.count >= 132 else { return failed("the ICC profile is truncated (\(bytes.count) bytes)") }
        guard bytes.count <= maxByteCount else { return failed("the ICC profile is too large (\(bytes.count) bytes)") }
        // The header's size field must fit the data (lcms would silently clamp it). Padding
        // after the declared size, which some writers add, is dropped.
        let declared = bytes.prefix(4).reduce(0) { $0 << 8 | Int($1) }
        guard declared >= 132, declared <= bytes.count else {
            return failed("the ICC header gives a size of \(declared) bytes for a \(bytes.count)-byte profile")
        }
        let opened = bytes.withUnsafeBytes { raw -> cmsHPROFILE? in
            guard let base = raw.baseAddress else { return nil }
            return cmsOpenProfileFromMemTHR(context, base, cmsUInt32Number(declared))
        }
        guard let profile = opened else { return failed("lcms2 cannot read the ICC profile") }
        defer { cmsCloseProfile(profile) }
        let space = signatureText(cmsGetColorSpace(profile).rawValue)
        let description = profileDescription(profile)
        let deviceClass = cmsGetDeviceClass(profile)
        let usable: Set<cmsProfileClassSignature> = [cmsSigInputClass, cmsSigDisplayClass, cmsSigOutputClass, cmsSigColorSpaceClass]
        guard usable.contains(deviceClass) else {
            return failed("the ICC profile's class '\(signatureText(deviceClass.rawValue))' cannot convert pixels", space: space,
                          description: description, damaged: false)
        }
        let isRGB = cmsGetColorSpace(profile) == cmsSigRgbData
        let isGray = cmsGetColorSpace(profile) == cmsSigGrayData
        let isCMYK = cmsGetColorSpace(profile) == cmsSigCmykData
        guard isRGB || isGray || isCMYK else {
            return failed("a '\(space)' profile is not applied (only RGB, gray and CMYK profiles are)", space: space,
                          description: description, damaged: false)
        }
        guard let srgb = cmsCreate_sRGBProfileTHR(context) else { return failed("lcms2 cannot make sRGB", space: space) }
        defer { cmsCloseProfile(srgb) }
        // Relative colorimetric with black-point compensation, unless the profile asks for
        // perceptual in its header and carries a perceptual table for it.
        var intent = cmsUInt32Number(INTENT_RELATIVE_COLORIMETRIC)
        if cmsGetHeaderRenderingIntent(profile) == cmsUInt32Number(INTENT_PERCEPTUAL),
           cmsIsCLUT(profile, cmsUInt32Number(INTENT_PERCEPTUAL), cmsUInt32Number(LCMS_USED_AS_INPUT)) != 0 {
            intent = cmsUInt32Number(INTENT_PERCEPTUAL)
        }
        let flags = clcms2_flag_black_point_compensation()
        let rgba = clcms2_type_rgba_8()
        if isCMYK {
            let plain = cmsCreateTransformTHR(context, profile, clcms2_type_cmyk_8(), srgb, rgba, intent, flags)
            let inverted = cmsCreateTransformTHR(context, profile, clcms2_type_cmyk_8_rev(), srgb, rgba, intent, flags)
            guard let plain, let inverted else {
                if let plain { cmsDeleteTransform(plain) }
                if let inverted { cmsDeleteTransform(inverted) }
                return failed("lcms2 cannot build a transform from the CMYK profile to sRGB", space: space, description: description)
            }
            return Built(info: ColorProfileInfo(description: description, colorSpace: space, byteCount: bytes.count),
                         cmyk: (plain, inverted))
        }
        let opaque = isRGB
            ? cmsCreateTransformTHR(context, profile, rgba, srgb, rgba, intent, flags | clcms2_flag_copy_alpha())
            : cmsCreateTransformTHR(context, profile, clcms2_type_gray_in_rgba_8(), srgb, rgba, intent, flags)
        guard let opaque else {
            return failed("lcms2 cannot build a transform from the ICC profile to sRGB", space: space, description: description)
        }
        let fast = isRGB ? MatrixShaper(profile: profile, srgb: srgb, intent: intent) : nil
        return Built(info: ColorProfileInfo(description: description, colorSpace: space, byteCount: bytes.count),
                     opaque: opaque, gray: isGray, fast: fast)
    }

    /// The profile's `desc` tag in English (or whatever it has), trimmed; `nil` when absent.
    private static func profileDescription(_ profile: cmsHPROFILE) -> String? {
        let count = cmsGetProfileInfoASCII(profile, cmsInfoDescription, "en", "US", nil, 0)
        guard count > 0, count < 4096 else { return nil }
        var buffer = [CChar](repeating: 0, count: Int(count) + 1)
        _ = cmsGetProfileInfoASCII(profile, cmsInfoDescription, "en", "US", &buffer, count)
        let bytes = buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }
        let text = String(decoding: bytes, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        return text.isEmpty ? nil : text
    }

    /// An ICC signature as its four characters, trailing spaces removed (`'RGB '` → `RGB`).
    static func signatureText(_ value: UInt32) -> String {
        let bytes = [24, 16, 8, 0].map { UInt8(truncatingIfNeeded: value >> UInt32($0)) }
        let printable = bytes.allSatisfy { $0 >= 0x20 && $0 < 0x7F }
        return printable ? String(decoding: bytes, as: UTF8.self).trimmingCharacters(in: .whitespaces)
                         : String(format: "0x%08X", value)
    }
}

/// lcms's error messages for one context. Written by the error handler, which lcms calls on
/// the thread that does the failing call; a lock keeps it safe all the same.
final class ErrorLog: @unchecked Sendable {
    private let lock = NSLock()
    private var stored: [String] = []

    func append(_ message: String) {
        lock.lock(); defer { lock.unlock() }
        if stored.count < 8 { stored.append(message) }
    }

    var messages: [String] {
        lock.lock(); defer { lock.unlock() }
        return stored
    }
}
