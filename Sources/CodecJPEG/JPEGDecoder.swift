import CJPEGShim
import ColorManagement
import Foundation
import PipelineCore

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
/// An ICC profile in `APP2 ICC_PROFILE` segments (reassembled by libjpeg-turbo) is reported in
/// `ImageInfo.colorProfile` and, unless `DecodeOptions.convertsToSRGB`
/// is off, the decoded (DCT-scaled) pixels are converted to sRGB through it (`ColorManagement`):
/// RGB profiles, gray profiles on gray files, and CMYK profiles on CMYK/YCCK files (whose rows
/// then stay CMYK until the profile converts them, instead of the naive CMYK → RGB).
public struct JPEGDecoder: ImageDecoding {
    /// Creates a JPEG decoder. It holds no state; one value serves every thread.
    public init() {}

    /// JPEG: `FF D8 FF`.
    public var signatures: [ImageSignature] { [.magic([0xFF, 0xD8, 0xFF], format: .jpeg)] }

    /// Opens libjpeg over `data` and reads the header (size, components, progressive, EXIF
    /// orientation) once; the session decodes at the smallest DCT scale (M/8) whose output
    /// covers the target, upright.
    public func withSession<R>(for data: Data, _ body: (any ImageDecodingSession) throws -> R) throws -> R {
        try data.withUnsafeBytes { bytes in
            let session = try Session(bytes: bytes)
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

        init(bytes: UnsafeRawBufferPointer) throws {
            decoder = try JPEGSession(bytes: bytes)
            let header = try decoder.readHeader()
            coefficientBytes = Int(clamping: header.coefficient_bytes)
            isCMYK = header.components == 4
            adobeInverted = header.adobe_inverted != 0
            var info = JPEGDecoder.info(header, bytes: bytes)
            profile = decoder.iccProfile.map { ColorManagement.profile(iccData: $0) }
            info.colorProfile = profile?.info
            self.info = info
        }

        /// The DCT-scaled RGBA8 bitmap (twice when orientation turns it), plus libjpeg's
        /// whole-image coefficients for a progressive file (about 3 bytes a pixel for 4:2:0
        /// colour, 6 for 4:4:4, kept at full resolution whatever the scale).
        func estimatedPeakMemory(_ options: DecodeOptions) -> Int {
            let orientation = options.appliesOrientation ? info.orientation : .up
            let storedTarget = options.targetSize.map { orientation.swapsDimensions ? $0.transposed : $0 }
            let scale = JPEGDecoder.scaleNumerator(for: info.size, covering: storedTarget)
            let output = ((info.size.width * scale + 7) / 8) * ((info.size.height * scale + 7) / 8) * 4
            return output * (orientation == .up ? 1 : 2) + (info.isProgressive ? coefficientBytes : 0)
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
            var warnings = decoder.warnings
            if let trailing = decoder.finish() { warnings.append(trailing) }
            // On the decoded (DCT-scaled) rows: a thumbnail pays for a thumbnail's worth.
            cmykProfile?.convertCMYKToSRGB(&bitmap, inverted: adobeInverted)
            var decoded = DecodedImage(bitmap: consume bitmap, info: info, warnings: warnings)
            if isCMYK, cmykProfile == nil, options.convertsToSRGB, let profile, profile.isApplicable, !profile.isCMYK {
                decoded.warnings.append("the embedded ICC profile is ignored: a '\(profile.info.colorSpace)' profile on a CMYK picture")
            } else if cmykProfile == nil {
                decoded.applyColorProfile(profile, options: options, pictureIsGray: info.componentCount == 1)
            }
            decoded.bitmap = decoded.bitmap.oriented(orientation)
            return decoded
        }
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
