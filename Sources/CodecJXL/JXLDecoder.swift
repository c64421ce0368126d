import CJXL
import ColorManagement
import PipelineCore

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

extension ImageFormat {
    /// JPEG XL: a bare codestream (`FF 0A`) or the ISOBMFF container (`00 00 00 0C JXL␠ 0D 0A 87 0A`).
    public static let jxl = ImageFormat("jxl", mimeType: "image/jxl", fileExtension: "jxl")
}

/// Decodes JPEG XL with libjxl 0.7: lossy (VarDCT, XYB) and lossless (modular), gray, alpha,
/// 16-bit and float samples (rounded to 8 bits by libjxl), the codestream's orientation, ICC
/// profiles, lossless JPEG recompression (decoded as a picture: the JPEG reconstruction data is
/// not asked for), and animations (`AnimatedImageDecoding`; a still decode gives the first
/// frame, composited).
///
/// Register it with `DecoderRegistry.registering(_:)`: `DecoderRegistry().registering(JXLDecoder())`.
///
/// **Header.** `ImageDecoding/readInfo(_:)` reads the basic info and colour encoding (and an
/// animation's frame headers, to count them) with no pixel buffer: the stored size and the
/// orientation as stored, alpha, bit depth, frame count, the ICC profile.
///
/// **Colour.** A lossy (XYB) picture is decoded by libjxl straight into sRGB
/// (`JxlDecoderSetPreferredColorProfile`), whatever its profile: exactly what
/// `djxl --color_space=RGB_D65_SRG_Rel_SRG` writes. A lossless picture keeps its samples; when
/// its colour encoding is not sRGB, the ICC profile libjxl gives for it
/// (`JxlDecoderGetColorAsICCProfile`, the original) converts them through `ColorManagement`,
/// as the PNG and WebP decoders do. With `DecodeOptions.convertsToSRGB` `false` nothing is
/// converted: a lossy picture comes in the colour space libjxl decodes to by default (the
/// original encoding, or linear sRGB for an ICC profile it cannot target), and
/// `DecodedImage.iccProfile` is that space's profile.
///
/// **Size.** libjxl 0.7 has no scaled decode: the bitmap is always full size and the pipeline
/// resamples it to the target. What 0.7 offers is progressive detail
/// (`JxlDecoderSetProgressiveDetail`, `JXL_DEC_FRAME_PROGRESSION`,
/// `JxlDecoderGetIntendedDownsamplingRatio`, `JxlDecoderFlushImage`): for a lossy (VarDCT)
/// still asked for at an eighth of its size or less, the decode stops once the 1:8 DC image is
/// decoded and libjxl flushes it, upsampled, into the full-size bitmap: the AC coefficients
/// (most of the work) are never decoded, and the thumbnail, resampled from it, has all the
/// detail it can show. Memory is not saved (the output and libjxl's frame buffers are full
/// size). Lossless (modular) files and animations are decoded whole (see the CodecJXL article).
///
/// **Errors.** Corrupt and truncated data are `ImagePipelineError/corruptData(format:message:)`
/// naming what was being read; a size over `DecodeOptions.maxPixelCount` is refused from the
/// header before anything is allocated. An animation whose frame headers end early (cut or
/// damaged) fails a still decode too, as djxl does, though its first frame may be whole; its
/// frames up to the damage come from ``makeAnimationDecoder(for:options:)``. libjxl prints a
/// trace of every failure on corrupt data to stderr (a cut file, which it only waits for more
/// of, prints nothing); a tool that owns its stderr silences it with
/// ``StandardError/discardedWhileDecoding``.
public struct JXLDecoder: ImageDecoding {
    /// What happens to libjxl's writes to the process's stderr (fd 2).
    public enum StandardError: Sendable, Hashable {
        /// Left alone: libjxl's failure traces reach fd 2. The default for a library: fd 2
        /// belongs to the host process.
        case inherited
        /// While any decode runs, fd 2 points at `/dev/null` (shared with every other codec that
        /// silences it, restored when the last one ends): see `StandardErrorSilencer`.
        case discardedWhileDecoding
    }

    /// What happens to libjxl's writes to stderr while this decoder decodes.
    public let standardError: StandardError
    /// libjxl's worker threads per decode; 0 decodes on the calling thread (the pipeline already
    /// decodes several pictures at once).
    public let threadCount: Int

    /// Creates a JPEG XL decoder. It holds no state; one value serves every thread.
    public init(threadCount: Int = 0, standardError: StandardError = .inherited) {
        self.threadCount = max(0, threadCount)
        self.standardError = standardError
    }

    /// The bare codestream (`FF 0A`) and the container's signature box.
    public var signatures: [ImageSignature] {
        [.magic([0xFF, 0x0A], format: .jxl),
         .magic([0x00, 0x00, 0x00, 0x0C, 0x4A, 0x58, 0x4C, 0x20, 0x0D, 0x0A, 0x87, 0x0A], format: .jxl)]
    }

    var quiet: Bool { standardError == .discardedWhileDecoding }

    /// Reads the headers once (`JXLHeader`); the session decodes the first frame at full size.
    public func withSession<R>(for data: Data, _ body: (any ImageDecodingSession) throws -> R) throws -> R {
        try data.withUnsafeBytes { raw in
            let session = try Session(bytes: raw, threads: threadCount, quiet: quiet)
            return try body(session)
        }
    }

    /// One JPEG XL file, its headers read.
    final class Session: ImageDecodingSession {
        private let bytes: UnsafeRawBufferPointer
        private let header: JXLHeader
        private let profile: ColorProfile?
        private let threads: Int
        private let quiet: Bool
        let info: ImageInfo

        init(bytes: UnsafeRawBufferPointer, threads: Int, quiet: Bool) throws {
            self.bytes = bytes
            self.threads = threads
            self.quiet = quiet
            header = try JXLHeader(bytes, maxLayers: Self.walkBound, threads: threads, quiet: quiet)
            profile = try header.originalICC.map { try ColorManagement.profile(iccData: $0, limits: .default) }
            var info = header.info
            info.colorProfile = profile?.info
            self.info = info
        }

        /// How many layers the session's walk reads (it stops at one more): the default frame
        /// limit, before any options are known.
        static let walkBound = Limits.default.maxAnimationFrameCount

        /// The RGBA8 output (the full picture, whatever the target), libjxl's own buffers and the
        /// target, plus what building a colour transform takes. libjxl 0.7 renders a frame group
        /// by group into the output, so its own share is small: measured on a 24 MP picture, a
        /// 256-px thumbnail peaks at 196 MiB in all for lossy VarDCT (about 72 MiB of it libjxl's,
        /// 3 bytes a pixel) and 148 MiB for lossless (about 24 MiB libjxl's), beside the 92 MiB
        /// bitmap and the process itself; 4 bytes a pixel are counted, twice for an animation
        /// (its composited canvas). libjxl's share is counted at the size of the first frame's
        /// largest layer when it is larger than the canvas (a layer may be).
        func estimatedPeakMemory(_ options: DecodeOptions) -> Int {
            let pixels = info.size.pixelCount
            let largest = header.firstFrameCost?.largest.pixelCount ?? 0
            let library = max(pixels, largest) * 4 * (info.frameCount > 1 ? 2 : 1)
            let estimate = pixels * 4 + library + (options.targetSize?.pixelCount ?? 0) * 4
            return ColorProfile.estimate(estimate, convertingWith: header.isXYB ? nil : profile, options: options)
        }

        func decode(_ options: DecodeOptions) throws -> DecodedImage {
            // A cut or damaged animation fails as a whole, though its first frame may be complete.
            if let damage = header.damage { throw damage }
            // Before any pixel: libjxl's decode of a frame's layers cannot be cancelled.
            try header.checkFirstFrame(options, walkBound: Self.walkBound)
            let dc = JXLDecoder.dcIsEnough(header: header, options: options)
            let handle = try JXLHandle(bytes: bytes, events: [JXL_DEC_BASIC_INFO, JXL_DEC_COLOR_ENCODING, JXL_DEC_FULL_IMAGE]
                                       + (dc ? [JXL_DEC_FRAME_PROGRESSION] : []), threads: threads, quiet: quiet)
            if dc, JxlDecoderSetProgressiveDetail(handle.decoder, kDC) != JXL_DEC_SUCCESS {
                throw ImagePipelineError.corruptData(format: .jxl, message: "libjxl refused to report the DC image")
            }
            let (bitmap, pixelProfile) = try JXLDecoder.firstImage(handle, header: header, profile: profile, options: options,
                                                                   dcIsEnough: dc)
            var decoded = DecodedImage(bitmap: bitmap, info: info)
            decoded.applyColorProfile(pixelProfile, options: options, pictureIsGray: header.isGray)
            decoded.bitmap = decoded.bitmap.converted(to: options.pixelFormat)
            return decoded
        }
    }

    /// The size an opaque colour picture in sRGB is resampled to as it leaves libjxl, or `nil`
    /// to return it at full size: the target when it is smaller and nothing is cut from it
    /// (``DecodeOptions/cutsAfterScaling``: a fill's crop is resampled from the full-size
    /// picture, as before, so its bytes do not change). Its pixels then pass through an
    /// RGB buffer (3 bytes a pixel, as vips's jxlload holds them) and ``PlaneRows`` instead of a
    /// full-size RGBA bitmap — a quarter less memory for the picture, the same bytes as the
    /// pipeline's resampling of that bitmap. Pictures with alpha, gray ones and ones whose pixels
    /// still need a colour transform (done before resampling) keep the full-size path.
    static func resampledTarget(header: JXLHeader, size: PixelSize, pixelProfile: ColorProfile?,
                                options: DecodeOptions) -> PixelSize? {
        guard header.basic.alpha_bits == 0, !header.isGray, pixelProfile == nil, !options.cutsAfterScaling,
              let target = options.targetSize,
              target.isValid, target.width <= size.width, target.height <= size.height, target != size else { return nil }
        return target
    }

    /// Decodes the next image as RGB8 into a buffer of `size` and resamples it to `target`.
    static func resampledImage(_ handle: JXLHandle, size: PixelSize, target: PixelSize, options: DecodeOptions,
                               dcIsEnough: Bool) throws -> Bitmap {
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: size.pixelCount * 3, alignment: 16)
        defer { buffer.deallocate() }
        try handle.decodeImage(into: buffer, size: size, format: JXLHandle.rgb8, stage: "the first frame's pixels",
                               dcIsEnough: dcIsEnough)
        guard let base = buffer.baseAddress else {
            throw ImagePipelineError.corruptData(format: .jxl, message: "no memory for a \(size) picture")
        }
        let rows = PlaneRows(plane: base.assumingMemoryBound(to: UInt8.self), stride: size.width * 3, size: size,
                             channels: 3, premultiply: false)
        return rows.resampled(to: target, filter: options.resamplingFilter)
    }

    /// Whether a still picture asked for at `options.targetSize` can stop at its DC image (1:8):
    /// lossy (XYB: VarDCT has a DC, which libjxl reports; a lossless file never stops early, it
    /// has no DC event), not animated, and the target at most an eighth of the picture in both
    /// dimensions, so the DC has a sample for every target pixel and more.
    static func dcIsEnough(header: JXLHeader, options: DecodeOptions) -> Bool {
        guard let target = options.targetSize, target.isValid, header.isXYB, header.basic.have_animation == 0 else { return false }
        let upright = options.appliesOrientation ? header.orientation.uprightSize(of: header.size) : header.size
        return target.width * 8 <= upright.width && target.height * 8 <= upright.height
    }

    /// The profile an XYB-coded (lossy) picture with an embedded profile is decoded in, asked at
    /// `JXL_DEC_COLOR_ENCODING`: `nil` (sRGB) when sRGB is wanted and libjxl takes the
    /// preference, else the profile of libjxl's output. libjxl converts XYB into the colour
    /// space asked for; without a preference it decodes to the original encoding, or linear
    /// sRGB for an ICC profile.
    static func xybPixelProfile(_ handle: JXLHandle, header: JXLHeader, options: DecodeOptions) throws -> ColorProfile? {
        if options.convertsToSRGB, handle.preferSRGB(gray: header.isGray) { return nil }
        return try handle.iccProfile(JXL_COLOR_PROFILE_TARGET_DATA).map { try ColorManagement.profile(iccData: $0, limits: .default) }
    }

    /// Decodes the next image of `handle` (subscribed to basic info, colour encoding and full
    /// image) as straight RGBA8, oriented as `options` asks. Returns it with the profile its
    /// pixels are in (`nil`: sRGB). A picture without alpha comes labelled
    /// `options.pixelFormat` straight away: libjxl gives it alpha 255 everywhere, where both
    /// formats are the same bytes, so the caller's conversion is not a pass over every pixel.
    static func firstImage(_ handle: JXLHandle, header: JXLHeader, profile: ColorProfile?,
                           options: DecodeOptions, dcIsEnough: Bool = false) throws -> (Bitmap, ColorProfile?) {
        guard JxlDecoderSetKeepOrientation(handle.decoder, options.appliesOrientation ? 0 : 1) == JXL_DEC_SUCCESS,
              JxlDecoderSetUnpremultiplyAlpha(handle.decoder, 1) == JXL_DEC_SUCCESS else {
            throw ImagePipelineError.corruptData(format: .jxl, message: "libjxl refused the decoding options")
        }
        var output: PixelSize?
        var pixelProfile = header.isXYB ? nil : profile
        var stage = "the header"
        while true {
            let status = try handle.process(stage)
            switch status {
            case JXL_DEC_BASIC_INFO:
                let basic = try handle.basicInfo()
                let size = PixelSize(width: Int(basic.xsize), height: Int(basic.ysize))
                // The same file as the session's header: the limit was checked on its size.
                guard size.pixelCount == header.size.pixelCount, size.isValid else {
                    throw ImagePipelineError.corruptData(format: .jxl, message: "the header gives a size of \(size)")
                }
                try options.checkPixelLimit(ImageInfo(format: .jxl, size: size))
                output = size
            case JXL_DEC_COLOR_ENCODING:
                if header.isXYB, profile != nil { pixelProfile = try xybPixelProfile(handle, header: header, options: options) }
                stage = "the first frame's header"
            case JXL_DEC_NEED_IMAGE_OUT_BUFFER:
                guard let output else { throw ImagePipelineError.corruptData(format: .jxl, message: "libjxl reported no basic info") }
                if let target = resampledTarget(header: header, size: output, pixelProfile: pixelProfile, options: options) {
                    return (try resampledImage(handle, size: output, target: target, options: options, dcIsEnough: dcIsEnough),
                            pixelProfile)
                }
                var bitmap = Bitmap(zeroed: output, pixelFormat: header.basic.alpha_bits > 0 ? .rgba8Straight : options.pixelFormat)
                try handle.decodeImage(into: &bitmap, stage: "the first frame's pixels", dcIsEnough: dcIsEnough)
                return (bitmap, pixelProfile)
            case JXL_DEC_SUCCESS:
                throw ImagePipelineError.corruptData(format: .jxl, message: "the file has no frame")
            default:
                continue
            }
        }
    }
}
