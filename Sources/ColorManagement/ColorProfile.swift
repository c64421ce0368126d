import CLCMS2
import PipelineCore
import Synchronization

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// An embedded ICC profile read by lcms2, with its transform to sRGB when it has one.
///
/// Made by ``ColorManagement/profile(iccData:)``, which caches them by their bytes: a grid of
/// photos from one camera opens the profile and builds the transform once. Opening one reads
/// its header, description and lookup-table sizes only; the transform is built on the first
/// conversion (or the first question that needs it, ``isApplicable``), so reading a picture's
/// info never builds one. Immutable but for that one lazy build, behind `lock`, and `Sendable`:
/// one transform serves every thread (lcms's `cmsDoTransform` keeps its pixel cache on the
/// stack, so concurrent calls on one transform are safe).
public final class ColorProfile: @unchecked Sendable {
    /// What the profile's header says; ``info`` adds a failed build's problem.
    private let headerInfo: ColorProfileInfo
    /// The profile's bytes, kept to build the transform from (shared with the cache's key, not
    /// copied); `nil` when the header already says it cannot be applied.
    private let bytes: Data?
    /// The profile's data colour space, when it is one this module converts.
    private let space: Space?
    /// The rendering intent the transform uses.
    private let intent: cmsUInt32Number
    /// The lookup-table entries the profile holds (see ``ColorProfileLimits/maxTableEntries``).
    public let tableEntryCount: Int
    /// The profile's bytes as the file embeds them (or as made for a coded colour space).
    public let iccData: Data

    private enum Space { case rgb, gray, cmyk }

    /// The transforms, built once; guarded by `lock`, as is `built`/`buildProblem`.
    private let lock = Mutex(())
    private var built = false
    private var transforms: Transforms?
    private var buildProblem: String?

    /// Whether the profile is damaged: lcms could not read it (truncated, bad tag table...) or
    /// build its transform, as opposed to a valid profile this module does not apply (device
    /// links, Lab). A build failure is known once the transform was asked for.
    public var isDamaged: Bool { headerDamaged || (lock.withLock { _ in buildProblem } != nil) }
    private let headerDamaged: Bool

    /// The largest profile read at all: a JPEG can carry at most 255 APP2 segments of 65 519
    /// bytes. Codecs refuse smaller ones first (``ColorProfileLimits/maxByteCount``).
    static let maxByteCount = 16 << 20

    /// What the profile says about itself, and why it cannot be applied when it cannot
    /// (including a transform that failed to build, once it was tried).
    public var info: ColorProfileInfo {
        guard let problem = lock.withLock({ _ in buildProblem }) else { return headerInfo }
        var info = headerInfo
        info.problem = problem
        return info
    }

    /// Whether the profile is a gray one (applied to gray pictures, decoded with R = G = B).
    public var isGray: Bool { space == .gray }

    /// Whether the profile describes RGB pixels and is not damaged: one an RGB picture can
    /// carry on into another file, its values left as they are.
    public var describesRGBPixels: Bool { space == .rgb && !isDamaged }
    /// Whether the profile is a CMYK one that converts: applied only to CMYK pixels, by
    /// ``convertCMYKToSRGB(_:inverted:)`` (a CMYK JPEG's decoder keeps its rows as CMYK for it).
    /// Builds the transform.
    public var isCMYK: Bool { space == .cmyk && isApplicable }
    /// Whether the profile's colour space is CMYK, without building anything.
    var isCMYKSpace: Bool { space == .cmyk }

    /// Whether the profile converts to sRGB (``info``'s problem is `nil`). Builds the transform.
    public var isApplicable: Bool { currentTransforms() != nil }

    /// The memory building the transform will take on top of the decode, in bytes: lcms's
    /// copy of the profile, 24 bytes for each lookup-table entry (3 outputs of 16 bits, as read
    /// and as copied into lcms's pipelines while it optimises them), and 1 MiB for the
    /// precalculated 8-bit tables of up to two transforms. Measured on `mkicc bigclut`
    /// profiles: 1.3 MB with 216 000 entries took about 7 MB (estimate 8.5 MB), 10.4 MB with
    /// 1.73 million about 48 MB (estimate 53 MB). 0 once built, or when nothing will be built.
    public var transformPeakBytes: Int {
        guard let bytes, lock.withLock({ _ in !built }) else { return 0 }
        let tables = tableEntryCount.multipliedReportingOverflow(by: 24)
        return tables.overflow ? Int.max : bytes.count + tables.partialValue + (1 << 20)
    }

    /// A decoder's peak-memory `estimate` with what converting by `profile` adds:
    /// ``transformPeakBytes`` when `options` convert to sRGB (saturating at `Int.max`).
    /// Every shipped decoder's `estimatedPeakMemory` goes through it.
    public static func estimate(_ estimate: Int, convertingWith profile: ColorProfile?, options: DecodeOptions) -> Int {
        guard options.convertsToSRGB, let profile else { return estimate }
        let (total, overflow) = estimate.addingReportingOverflow(profile.transformPeakBytes)
        return overflow ? Int.max : total
    }

    /// Reads `bytes`' header with lcms2. Never fails: a profile that cannot be used comes back
    /// with ``ColorProfileInfo/problem`` set and builds no transform.
    init(bytes: Data) {
        let read = ColorProfile.readHeader(bytes: bytes)
        headerInfo = read.info
        headerDamaged = read.damaged
        space = read.space
        intent = read.intent
        self.bytes = read.space != nil ? bytes : nil
        iccData = bytes
        tableEntryCount = ICCLookupTables.entryCount(bytes)
    }

    deinit { transforms?.free() }

    /// The transforms, built on the first call (outside no lock but this profile's own).
    private func currentTransforms() -> Transforms? {
        lock.withLock { _ in
            if !built {
                built = true
                if let bytes, let space {
                    switch Transforms.build(bytes: bytes, space: space, intent: intent) {
                    case .success(let made): transforms = made
                    case .failure(let problem): buildProblem = problem.text
                    }
                }
            }
            return transforms
        }
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
        guard !(hasAlpha && isGray), let transforms = currentTransforms(), let transform = transforms.opaque else { return }
        let matrixShaper = transforms.matrixShaper
        let width = bitmap.width, height = bitmap.height, stride = bitmap.bytesPerRow
        let premultiplied = hasAlpha && bitmap.pixelFormat.isPremultiplied
        bitmap.withUnsafeMutableBytes { pixels in
            guard let base = pixels.baseAddress else { return }
            if let matrixShaper {
                for y in 0..<height {
                    let row = UnsafeMutableBufferPointer(start: base + y * stride, count: width * 4)
                    let translucent = premultiplied && Bitmap.unpremultiply(UnsafeBufferPointer(row), into: row)
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
                let translucent = Bitmap.unpremultiply(UnsafeBufferPointer(row), into: row)
                cmsDoTransform(transform, row.baseAddress, row.baseAddress, cmsUInt32Number(width))
                if translucent { Bitmap.premultiply(row) }
            }
        }
    }

    /// Converts CMYK pixels (4 bytes each, as libjpeg returns them; `inverted` when 255 means no
    /// ink, as in Adobe's CMYK JPEGs) to opaque sRGB RGBA in place. Does nothing unless ``isCMYK``.
    public func convertCMYKToSRGB(_ bitmap: inout Bitmap, inverted: Bool) {
        guard space == .cmyk, let cmykTransforms = currentTransforms()?.cmyk else { return }
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

    /// lcms's error callback: keeps the message in the context's ``ErrorLog``; never prints.
    private static let errorHandler: cmsLogErrorHandlerFunction = { context, _, text in
        guard let context, let user = cmsGetContextUserData(context) else { return }
        let log = Unmanaged<ErrorLog>.fromOpaque(user).takeUnretainedValue()
        log.append(text.map { MessageText.escaped(String(cString: $0)) } ?? "unknown lcms2 error")  // quotes tag types from the file
    }

    private struct Header {
        var info: ColorProfileInfo
        var damaged = true
        var space: Space? = nil
        var intent = cmsUInt32Number(INTENT_RELATIVE_COLORIMETRIC)
    }

    /// Opens the profile with lcms (in a context of its own, closed before returning) for its
    /// header, description and intent; reads no lookup table and builds nothing.
    private static func readHeader(bytes: Data) -> Header {
        let log = ErrorLog()
        let context = cmsCreateContext(nil, Unmanaged.passUnretained(log).toOpaque())
        defer { if let context { cmsDeleteContext(context) } }
        func failed(_ message: String, space: String = "", description: String? = nil, damaged: Bool = true) -> Header {
            let detail = log.messages.first.map { ": \($0)" } ?? ""
            return Header(info: ColorProfileInfo(description: description, colorSpace: space, byteCount: bytes.count,
                                                 problem: message + detail), damaged: damaged)
        }
        guard let context else { return failed("lcms2 could not allocate a context") }
        cmsSetLogErrorHandlerTHR(context, errorHandler)
        guard bytes.count >= 132 else { return failed("the ICC profile is truncated (\(bytes.count) bytes)") }
        guard bytes.count <= maxByteCount else { return failed("the ICC profile is too large (\(bytes.count) bytes)") }
        guard let profile = open(bytes, context: context) else {
            let declared = declaredSize(bytes)
            guard declared >= 132, declared <= bytes.count else {
                return failed("the ICC header gives a size of \(declared) bytes for a \(bytes.count)-byte profile")
            }
            return failed("lcms2 cannot read the ICC profile")
        }
        defer { cmsCloseProfile(profile) }
        let space = signatureText(cmsGetColorSpace(profile).rawValue)
        let description = profileDescription(profile)
        let deviceClass = cmsGetDeviceClass(profile)
        let usable: Set<cmsProfileClassSignature> = [cmsSigInputClass, cmsSigDisplayClass, cmsSigOutputClass, cmsSigColorSpaceClass]
        guard usable.contains(deviceClass) else {
            return failed("the ICC profile's class '\(signatureText(deviceClass.rawValue))' cannot convert pixels", space: space,
                          description: description, damaged: false)
        }
        let kinds: [cmsColorSpaceSignature: Space] = [cmsSigRgbData: .rgb, cmsSigGrayData: .gray, cmsSigCmykData: .cmyk]
        guard let kind = kinds[cmsGetColorSpace(profile)] else {
            return failed("a '\(space)' profile is not applied (only RGB, gray and CMYK profiles are)", space: space,
                          description: description, damaged: false)
        }
        // Relative colorimetric with black-point compensation, unless the profile asks for
        // perceptual in its header and carries a perceptual table for it.
        var intent = cmsUInt32Number(INTENT_RELATIVE_COLORIMETRIC)
        if cmsGetHeaderRenderingIntent(profile) == cmsUInt32Number(INTENT_PERCEPTUAL),
           cmsIsCLUT(profile, cmsUInt32Number(INTENT_PERCEPTUAL), cmsUInt32Number(LCMS_USED_AS_INPUT)) != 0 {
            intent = cmsUInt32Number(INTENT_PERCEPTUAL)
        }
        return Header(info: ColorProfileInfo(description: description, colorSpace: space, byteCount: bytes.count),
                      damaged: false, space: kind, intent: intent)
    }

    /// The size the header's first field gives.
    private static func declaredSize(_ bytes: Data) -> Int { bytes.prefix(4).reduce(0) { $0 << 8 | Int($1) } }

    /// `bytes` opened by lcms in `context`, or nil. The header's size field must fit the data
    /// (lcms would silently clamp it); padding after the declared size, which some writers add,
    /// is dropped.
    private static func open(_ bytes: Data, context: cmsContext) -> cmsHPROFILE? {
        let declared = declaredSize(bytes)
        guard declared >= 132, declared <= bytes.count else { return nil }
        return bytes.withUnsafeBytes { raw -> cmsHPROFILE? in
            guard let base = raw.baseAddress else { return nil }
            return cmsOpenProfileFromMemTHR(context, base, cmsUInt32Number(declared))
        }
    }

    /// A profile's transforms to sRGB, with the lcms context they live in; freed together.
    private final class Transforms {
        let context: cmsContext
        /// lcms's messages while building (the context's user data: kept alive here).
        let log: ErrorLog
        /// Stored RGB(A) (straight) or gray-in-RGBA → sRGB RGBA, alpha copied (RGB) or left in place (gray).
        var opaque: cmsHTRANSFORM?
        /// CMYK (0 = no ink) and inverted CMYK → sRGB RGBA, for a CMYK profile.
        var cmyk: (plain: cmsHTRANSFORM, inverted: cmsHTRANSFORM)?
        /// The matrix-shaper fast path, used instead of `opaque` when the profile allows.
        var matrixShaper: MatrixShaper?

        private init(context: cmsContext, log: ErrorLog) {
            self.context = context
            self.log = log
        }

        func free() {
            if let opaque { cmsDeleteTransform(opaque) }
            if let cmyk {
                cmsDeleteTransform(cmyk.plain)
                cmsDeleteTransform(cmyk.inverted)
            }
            opaque = nil
            cmyk = nil
            cmsDeleteContext(context)
        }

        struct Problem: Error { var text: String }

        /// Opens the profile again and builds its transform(s) to sRGB.
        static func build(bytes: Data, space: Space, intent: cmsUInt32Number) -> Result<Transforms, Problem> {
            let log = ErrorLog()
            guard let context = cmsCreateContext(nil, Unmanaged.passUnretained(log).toOpaque()) else {
                return .failure(Problem(text: "lcms2 could not allocate a context"))
            }
            cmsSetLogErrorHandlerTHR(context, ColorProfile.errorHandler)
            let made = Transforms(context: context, log: log)
            func failed(_ message: String) -> Result<Transforms, Problem> {
                let detail = log.messages.first.map { ": \($0)" } ?? ""
                made.free()
                return .failure(Problem(text: message + detail))
            }
            guard let profile = ColorProfile.open(bytes, context: context) else { return failed("lcms2 cannot read the ICC profile") }
            defer { cmsCloseProfile(profile) }
            guard let srgb = cmsCreate_sRGBProfileTHR(context) else { return failed("lcms2 cannot make sRGB") }
            defer { cmsCloseProfile(srgb) }
            let flags = clcms2_flag_black_point_compensation()
            let rgba = clcms2_type_rgba_8()
            switch space {
            case .cmyk:
                let plain = cmsCreateTransformTHR(context, profile, clcms2_type_cmyk_8(), srgb, rgba, intent, flags)
                let inverted = cmsCreateTransformTHR(context, profile, clcms2_type_cmyk_8_rev(), srgb, rgba, intent, flags)
                guard let plain, let inverted else {
                    if let plain { cmsDeleteTransform(plain) }
                    if let inverted { cmsDeleteTransform(inverted) }
                    return failed("lcms2 cannot build a transform from the CMYK profile to sRGB")
                }
                made.cmyk = (plain, inverted)
            case .rgb, .gray:
                let opaque = space == .rgb
                    ? cmsCreateTransformTHR(context, profile, rgba, srgb, rgba, intent, flags | clcms2_flag_copy_alpha())
                    : cmsCreateTransformTHR(context, profile, clcms2_type_gray_in_rgba_8(), srgb, rgba, intent, flags)
                guard let opaque else { return failed("lcms2 cannot build a transform from the ICC profile to sRGB") }
                made.opaque = opaque
                made.matrixShaper = space == .rgb ? MatrixShaper(profile: profile, srgb: srgb, intent: intent) : nil
            }
            return .success(made)
        }
    }

    /// The profile's `desc` tag in English (or whatever it has), trimmed; `nil` when absent.
    private static func profileDescription(_ profile: cmsHPROFILE) -> String? {
        let count = cmsGetProfileInfoASCII(profile, cmsInfoDescription, "en", "US", nil, 0)
        guard count > 0, count < 4096 else { return nil }
        var buffer = [CChar](repeating: 0, count: Int(count) + 1)
        _ = cmsGetProfileInfoASCII(profile, cmsInfoDescription, "en", "US", &buffer, count)
        let bytes = buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }
        let text = String(decoding: bytes, as: UTF8.self).trimmingWhitespace()
        return text.isEmpty ? nil : text
    }

    /// An ICC signature as its four characters, trailing spaces removed (`'RGB '` → `RGB`).
    static func signatureText(_ value: UInt32) -> String {
        let bytes = [24, 16, 8, 0].map { UInt8(truncatingIfNeeded: value >> UInt32($0)) }
        let printable = bytes.allSatisfy { $0 >= 0x20 && $0 < 0x7F }
        return printable ? String(decoding: bytes, as: UTF8.self).trimmingSpacesAndTabs()
                         : printfFormat("0x%08X", value)
    }
}

/// lcms's error messages for one context. Written by the error handler, which lcms calls on
/// the thread that does the failing call; a lock keeps it safe all the same.
final class ErrorLog: @unchecked Sendable {
    private let stored = Mutex<[String]>([])

    func append(_ message: String) {
        stored.withLock { stored in
            if stored.count < 8 { stored.append(message) }
        }
    }

    var messages: [String] { stored.withLock { $0 } }
}
