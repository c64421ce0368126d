import CJPEGShim
import ColorManagement
import PipelineCore

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Decodes JPEG with libjpeg-turbo: DCT scaling to the smallest size that covers the target,
/// EXIF orientation, grayscale, CMYK/YCCK, progressive and arithmetic-coded files.
///
/// Register it with `DecoderRegistry.registering(_:)`:
/// `DecoderRegistry().registering(JPEGDecoder())`.
///
/// A 6000×4000 file asked for at 256 pixels is decoded at 1/8 scale (750×500) and never exists
/// at full size. 12-bit files fail with `ImagePipelineError.unsupported(format:message:)`
/// (this libjpeg build decodes 8-bit samples only). libjpeg's warnings about corrupt but
/// decodable data come back in `DecodedImage.warnings`, or as an error with
/// `DecodeOptions.strict`.
///
/// Before libjpeg reads anything, one walk over the markers refuses a file
/// whose scans would cost too much (``maxScanPasses``, ``maxScans``) or whose ICC profile is too
/// large (``colorProfileLimits``), in milliseconds and before any coefficient buffer exists.
///
/// An ICC profile in `APP2 ICC_PROFILE` segments (reassembled from the walk) is reported in
/// `ImageInfo.colorProfile` and, unless `DecodeOptions.convertsToSRGB`
/// is off, the decoded (DCT-scaled) pixels are converted to sRGB through it (`ColorManagement`):
/// RGB profiles, gray profiles on gray files, and CMYK profiles on CMYK/YCCK files (whose rows
/// then stay CMYK until the profile converts them, instead of the naive CMYK → RGB).
///
/// While a progressive file arrives, ``preview(of:)`` gives its complete scans as a file of
/// their own (`ProgressiveDecoding`), which this decoder decodes as libjpeg's buffered-image
/// mode shows those scans.
public struct JPEGDecoder: ImageDecoding {
    /// How many times over all scans together may walk the picture's blocks: over it, decoding
    /// fails with `ImagePipelineError.overLimit(.decodeWork, limit:actual:)` (in blocks) before
    /// it starts. Default `Limits.default.maxScanPasses` (16; the reason is there).
    public var maxScanPasses: Int
    /// The most scans (SOS markers) a file may have: over it,
    /// `ImagePipelineError.overLimit(.scans, limit:actual:)`. Default `Limits.default.maxScans`
    /// (500; the reason is there).
    public var maxScans: Int
    /// The limits on the embedded ICC profile (default `Limits.default`'s):
    /// its size is checked from the APP2 chunk lengths before they are assembled.
    public var colorProfileLimits: ColorProfileLimits

    /// Creates a JPEG decoder with these limits (the defaults are `Limits.default`'s). It holds
    /// no other state; one value serves every thread.
    public init(maxScanPasses: Int = Limits.default.maxScanPasses, maxScans: Int = Limits.default.maxScans,
                colorProfileLimits: ColorProfileLimits = .default) {
        self.maxScanPasses = maxScanPasses
        self.maxScans = maxScans
        self.colorProfileLimits = colorProfileLimits
    }

    /// A JPEG decoder with the scan and colour profile limits of `limits`.
    public init(limits: Limits) {
        self.init(maxScanPasses: limits.maxScanPasses, maxScans: limits.maxScans, colorProfileLimits: ColorProfileLimits(limits))
    }

    /// JPEG: `FF D8 FF`.
    public var signatures: [ImageSignature] { [.magic([0xFF, 0xD8, 0xFF], format: .jpeg)] }

    /// Opens libjpeg over `data` and reads the header (size, components, progressive, EXIF
    /// orientation) once; the session decodes at the smallest DCT scale (M/8) whose output
    /// covers the target, upright.
    public func withSession<R>(for data: Data, _ body: (any ImageDecodingSession) throws -> R) throws -> R {
        try data.withUnsafeBytes { bytes in
            let session = try Session(bytes: bytes, limits: self)
            return try body(session)
        }
    }

    /// One JPEG opened by libjpeg, its header read.
    final class Session: ImageDecodingSession {
        private let decoder: JPEGSession
        private let profile: ColorProfile?
        /// CMYK or YCCK (4 components), and whether Adobe's marker says it is stored inverted.
        private let isCMYK: Bool
        private let adobeInverted: Bool
        let info: ImageInfo
        /// The whole-image coefficient arrays a progressive decode keeps, by the header.
        private let coefficientBytes: Int
        /// A warning from reassembling the ICC profile (bad chunk sequence), reported by decode.
        private let profileWarning: String?

        init(bytes: UnsafeRawBufferPointer, limits: JPEGDecoder) throws {
            let walk = JPEGMarkerWalk(bytes)
            try JPEGDecoder.check(walk, limits: limits)
            decoder = try JPEGSession(bytes: bytes)
            decoder.limitScans(to: limits.maxScans)
            let header = try decoder.readHeader()
            coefficientBytes = Int(clamping: header.coefficient_bytes)
            isCMYK = header.components == 4
            adobeInverted = header.adobe_inverted != 0
            var info = JPEGDecoder.info(header, bytes: bytes)
            let assembled = walk.iccProfile(in: bytes)
            profileWarning = assembled.warning
            profile = try assembled.profile.map { try ColorManagement.profile(iccData: $0, limits: limits.colorProfileLimits) }
            info.colorProfile = profile?.info
            self.info = info
        }

        /// The DCT-scaled RGBA8 bitmap (twice when orientation turns it), plus libjpeg's
        /// whole-image coefficients for a progressive file (about 3 bytes a pixel for 4:2:0
        /// colour, 6 for 4:4:4, kept at full resolution whatever the scale), plus what building
        /// the ICC profile's transform takes when it is not built yet.
        func estimatedPeakMemory(_ options: DecodeOptions) -> Int {
            let orientation = options.appliesOrientation ? info.orientation : .up
            let storedTarget = options.targetSize.map { orientation.swapsDimensions ? $0.transposed : $0 }
            let scale = JPEGDecoder.scaleNumerator(for: info.size, covering: storedTarget)
            let output = ((info.size.width * scale + 7) / 8) * ((info.size.height * scale + 7) / 8) * 4
            let pixels = output * (orientation == .up ? 1 : 2) + (info.isProgressive ? coefficientBytes : 0)
            return ColorProfile.estimate(pixels, convertingWith: profile, options: options)
        }

        func decode(_ options: DecodeOptions) throws -> DecodedImage {
            let orientation = options.appliesOrientation ? info.orientation : .up
            // The target is upright; the decoder works on stored pixels.
            let storedTarget = options.targetSize.map { orientation.swapsDimensions ? $0.transposed : $0 }
            let scale = JPEGDecoder.scaleNumerator(for: info.size, covering: storedTarget)
            // A CMYK file with a CMYK profile: rows stay CMYK and go through the profile.
            let cmykProfile = options.convertsToSRGB && isCMYK && profile?.isCMYK == true ? profile : nil
            if cmykProfile != nil { decoder.keepRawCMYK() }
            let outputSize = try decoder.start(scaleNumerator: scale)
            guard outputSize.isValid else {
                throw ImagePipelineError.corruptData(format: .jpeg, message: "the decoder produced an empty \(outputSize) picture")
            }
            // Opaque: the same bytes in either alpha representation.
            var bitmap = Bitmap(zeroed: outputSize, pixelFormat: options.pixelFormat)
            try decoder.readRGBA(into: &bitmap)
            var issues = (profileWarning.map { [DecodeIssue.warning($0)] } ?? []) + decoder.issues
            // After the last row: the pixels are whole.
            if let trailing = decoder.finish() { issues.append(.warning(trailing)) }
            // On the decoded (DCT-scaled) rows: a thumbnail pays for a thumbnail's worth.
            cmykProfile?.convertCMYKToSRGB(&bitmap, inverted: adobeInverted)
            var decoded = DecodedImage(bitmap: consume bitmap, info: info, issues: issues)
            if isCMYK, cmykProfile == nil, options.convertsToSRGB, let profile, profile.isApplicable, !profile.isCMYK {
                decoded.issues.append(.warning("the embedded ICC profile is ignored: a '\(profile.info.colorSpace)' profile on a CMYK picture"))
            } else if cmykProfile == nil {
                decoded.applyColorProfile(profile, options: options, pictureIsGray: info.componentCount == 1)
            }
            decoded.bitmap = decoded.bitmap.oriented(orientation)
            return decoded
        }
    }

    /// Refuses a file whose scans or ICC profile are over the limits, from the walk alone.
    static func check(_ walk: JPEGMarkerWalk, limits: JPEGDecoder) throws(ImagePipelineError) {
        guard walk.scanCount <= limits.maxScans else {
            throw .overLimit(.scans, limit: limits.maxScans, actual: walk.scanCount)
        }
        let (budget, overflow) = walk.pictureBlocks.multipliedReportingOverflow(by: max(1, limits.maxScanPasses))
        if !overflow, walk.scanBlocks > budget {
            throw .overLimit(.decodeWork, limit: budget, actual: walk.scanBlocks)
        }
        try limits.colorProfileLimits.check(byteCount: walk.iccByteCount)
    }

    /// The smallest `M` in 1...8 for which libjpeg's output, `ceil(size × M / 8)`, is at least
    /// `target` in both dimensions; 8 (full size) without a target.
    static func scaleNumerator(for size: PixelSize, covering target: PixelSize?) -> Int {
        guard let target else { return 8 }
        for m in 1...8 {
            let width = (size.width * m + 7) / 8, height = (size.height * m + 7) / 8
            if width >= target.width && height >= target.height { return m }
        }
        return 8
    }

    static func info(_ header: jpegshim_info, bytes: UnsafeRawBufferPointer) -> ImageInfo {
        ImageInfo(format: .jpeg, size: PixelSize(width: Int(header.width), height: Int(header.height)),
                  orientation: EXIFOrientation.read(fromJPEG: bytes) ?? .up, hasAlpha: false,
                  isProgressive: header.progressive != 0, componentCount: Int(header.components),
                  bitDepth: Int(header.precision))
    }
}
