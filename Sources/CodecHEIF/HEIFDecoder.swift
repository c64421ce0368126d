import CHEIF
import ColorManagement
import PipelineCore

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Decodes HEIF (HEVC, `.heic`) and, when libheif has an AV1 decoder, AVIF with libheif: the
/// primary image, output RGBA8 premultiplied or, as `DecodeOptions.pixelFormat`
/// asks, straight (libheif's own values at full size; a resampled picture is made straight once).
///
/// Register it with `DecoderRegistry.registering(_:)`:
/// `DecoderRegistry().registering(HEIFDecoder())`.
///
/// **Orientation.** HEIF stores rotation, mirroring and cropping as item properties
/// (`irot`, `imir`, `clap`) that are part of the picture's geometry; libheif applies them while
/// decoding and reports the displayed size. The decoder always lets it: the session's `info`
/// reports the displayed size with orientation `ImageOrientation.up`, so
/// `appliesOrientation: false` changes nothing for HEIF (decoding with libheif's
/// `ignore_transformations` would return a bitmap whose size the header does not announce,
/// and libheif 1.15 does not expose `irot`/`imir` to describe it as an orientation).
/// EXIF orientation inside a HEIF file is not used (the HEIF spec says `irot` wins).
///
/// **Thumbnails.** When a smaller size is asked for and the primary image has an embedded
/// thumbnail (`thmb`) that still covers the target in both dimensions with the same aspect
/// ratio (within 2%), the thumbnail is decoded instead: far cheaper than the full picture.
/// The result is the thumbnail's size (≥ the target); the pipeline's resampler finishes.
///
/// An ICC profile in the primary image's `colr` box (`prof`/`rICC`) is converted to sRGB
/// (see `ColorManagement`); so is an `nclx` description with Display P3 or BT.2020 primaries
/// and an SDR transfer (`ColorManagement.profile(codedPrimaries:transfer:)`). Images with more than 8 bits are converted to 8 bits by libheif.
///
/// **Codec logging.** dav1d's log lines never reach stderr: AV1 goes through a dav1d plugin of
/// this module that gives dav1d a logger, and what dav1d logged while a decode failed becomes
/// the error's message. libde265 (HEVC), though, prints a few diagnostics of corrupt headers
/// straight to stderr ("SPS error: CB alignment") and nothing in libde265 1.0.11 or libheif
/// 1.15 turns them off; a tool that owns its process's stderr can discard them with
/// ``init(standardError:)`` and ``StandardError/discardedWhileDecoding``.
public struct HEIFDecoder: ImageDecoding {
    /// What happens to what the codecs libheif calls write to the process's stderr (fd 2).
    public enum StandardError: Sendable, Hashable {
        /// Left alone: libde265's rare diagnostics of corrupt HEVC headers reach fd 2. The default
        /// for a library: fd 2 belongs to the host process.
        case inherited
        /// While any HEIF decode runs, fd 2 points at `/dev/null` (shared by overlapping decodes,
        /// restored when the last one ends). Everything any thread of the process writes to fd
        /// 2 meanwhile is lost, so use it only in a program that writes its own messages to a
        /// duplicate of fd 2 made beforehand (as `imgpipe` does).
        case discardedWhileDecoding
    }

    /// What happens to the codecs' writes to stderr while this decoder decodes.
    public let standardError: StandardError

    /// libde265's worker threads per HEVC picture (clamped to 1...32). x265 and most encoders
    /// code HEVC with wavefront parallel processing, whose rows libde265 decodes in parallel:
    /// with two workers a large picture decodes in a little over half the time on two cores, for
    /// the same total work. libheif's own plugin starts one. The grid tiles of a tiled picture
    /// (iPhone photographs) decode on one worker each: libheif decodes four tiles at a time.
    public let threadCount: Int

    /// Two workers on a machine with two or more cores, else one: what a command line decoding one
    /// picture wants, and no loss for a server decoding a picture per core (the work is the
    /// same; it is only split into more threads).
    public static let defaultThreadCount = min(2, max(1, ProcessInfo.processInfo.activeProcessorCount))

    /// Creates a HEIF decoder that leaves stderr alone. It holds no state; one value serves every thread.
    public init() { self.init(standardError: .inherited, threadCount: Self.defaultThreadCount) }

    /// Creates a HEIF decoder that treats the codecs' writes to stderr as `standardError` says.
    public init(standardError: StandardError) { self.init(standardError: standardError, threadCount: Self.defaultThreadCount) }

    /// Creates a HEIF decoder with `threadCount` libde265 workers per HEVC picture.
    public init(standardError: StandardError = .inherited, threadCount: Int) {
        self.standardError = standardError
        self.threadCount = min(max(threadCount, 1), De265Plugin.maxWorkerThreads)
    }

    /// Whether this libheif can decode AVIF (it was built with libaom or dav1d, or takes
    /// our dav1d plugin): `heif_have_decoder_for_format(heif_compression_AV1)`. Asking opens libheif.
    public static var decodesAVIF: Bool { (try? HEIFLibrary.load(.avif)) != nil && HEIFLibrary.decodesAV1 }

    /// HEIF and AVIF by their `ftyp` brands. Registration and sniffing do not open libheif (it is
    /// opened at the first decode), so AVIF is claimed without asking whether libheif has an AV1
    /// decoder; with none (``decodesAVIF``), decoding AVIF fails as unsupported, naming libheif.
    public var signatures: [ImageSignature] { [Self.heifSignature, Self.avifSignature] }

    static let heifSignature = ImageSignature.isoBaseMedia(
        majorBrands: ["heic", "heix", "heim", "heis", "hevc", "hevx"],
        compatibleBrands: ["heic", "heix", "heim", "heis", "hevc", "hevx", "mif1", "msf1"], format: .heif)
    static let avifSignature = ImageSignature.isoBaseMedia(majorBrands: ["avif", "avis"], compatibleBrands: ["avif", "avis"],
                                                           format: .avif)

    /// Parses the container once (no pixels decoded): the primary image's displayed size,
    /// alpha, luma bit depth, and the number of top-level images as `frameCount`. The session
    /// decodes the primary image, or an embedded thumbnail that covers the target. The bitmap
    /// is upright and at least the target size: a thumbnail at its own size; the primary
    /// image, when a smaller size is asked for, resampled to exactly the target (clamped to the
    /// picture) while its rows are read from libheif's decoded plane, so the full-size bitmap
    /// never exists beside libheif's own.
    public func withSession<R>(for data: Data, _ body: (any ImageDecodingSession) throws -> R) throws -> R {
        let format = Self.format(of: data)
        // libheif decodes on this thread, inside `body`: the HEVC plugin reads the count there.
        return try De265Plugin.withWorkerThreads(threadCount) { () throws(any Error) -> R in
            try data.withUnsafeBytes { raw in
                let session = try Session(raw, format: format, quiet: quiet)
                return try body(session)
            }
        }
    }

    /// One HEIF file read by libheif, its primary image found.
    final class Session: ImageDecodingSession {
        private let context: HEIFLibrary.Context
        private let primary: HEIFLibrary.Handle
        private let quiet: Bool
        private let profile: ColorProfile?
        let info: ImageInfo

        init(_ raw: UnsafeRawBufferPointer, format: ImageFormat, quiet: Bool) throws {
            context = try HEIFLibrary.Context(raw, format: format)
            primary = try context.primary()
            var info = HEIFDecoder.info(primary, context: context)
            if let icc = primary.iccProfile {
                profile = try ColorManagement.profile(iccData: icc, limits: .default)
            } else if let coded = primary.codedColor {
                profile = ColorManagement.profile(codedPrimaries: coded.primaries, transfer: coded.transfer)
            } else {
                profile = nil
            }
            info.colorProfile = profile?.info
            self.info = info
            self.quiet = quiet
        }

        /// libheif decodes whole (``HEIFDecoder/decodeMemory(_:output:alpha:bitDepth:av1:)``):
        /// the primary image, or an embedded thumbnail that covers the target.
        /// Plus what building the colour profile's transform takes.
        func estimatedPeakMemory(_ options: DecodeOptions) -> Int {
            ColorProfile.estimate(pixelMemory(options), convertingWith: profile, options: options)
        }

        /// libheif's planes and the bitmaps, from the thumbnail when one covers the target.
        private func pixelMemory(_ options: DecodeOptions) -> Int {
            let output = HEIFDecoder.output(for: options.targetSize, size: info.size)
            let av1 = info.format == .avif
            if let target = output, let thumbnail = HEIFDecoder.bestThumbnail(of: primary, covering: target, info: info) {
                return HEIFDecoder.decodeMemory(thumbnail.size, output: thumbnail.size, alpha: info.hasAlpha,
                                                bitDepth: info.bitDepth, av1: av1)
            }
            return HEIFDecoder.decodeMemory(info.size, output: output ?? info.size, alpha: info.hasAlpha,
                                            bitDepth: info.bitDepth, av1: av1)
        }

        func decode(_ options: DecodeOptions) throws -> DecodedImage {
            var decoded = try decodePixels(options)
            // On the output rows (a thumbnail's or the resampled plane's), with the primary
            // image's profile: thumbnails carry the same colours.
            decoded.applyColorProfile(profile, options: options, pictureIsGray: false)
            return decoded
        }

        private func decodePixels(_ options: DecodeOptions) throws -> DecodedImage {
            if let target = options.targetSize, target.isValid,
               target.width < info.size.width || target.height < info.size.height,
               let thumbnail = HEIFDecoder.thumbnail(of: primary, covering: target, info: info, options: options, quiet: quiet) {
                // A smaller rendition, like a resampled one: premultiplied, converted once.
                return DecodedImage(bitmap: thumbnail.0.converted(to: options.pixelFormat), info: info, warnings: thumbnail.1)
            }
            let decoded = try primary.decode(strict: options.strict, maxPixelCount: options.maxPixelCount, quiet: quiet,
                                             output: HEIFDecoder.output(for: options.targetSize, size: info.size),
                                             filter: options.resamplingFilter, pixelFormat: options.pixelFormat)
            guard decoded.decodedSize == info.size else {
                throw ImagePipelineError.corruptData(format: info.format,
                                                     message: "libheif decoded \(decoded.decodedSize), the header says \(info.size)")
            }
            return DecodedImage(bitmap: decoded.bitmap, info: info, warnings: decoded.warnings)
        }
    }

    /// The smallest thumbnail that covers `target` with the picture's aspect ratio, decoded;
    /// `nil` (decode the primary image) when there is none or it fails to decode.
    static func thumbnail(of primary: borrowing HEIFLibrary.Handle, covering target: PixelSize, info: ImageInfo,
                                  options: DecodeOptions, quiet: Bool) -> (Bitmap, [String])? {
        guard let best = bestThumbnail(of: primary, covering: target, info: info), let handle = try? primary.thumbnail(best.id),
              let decoded = try? handle.decode(strict: options.strict, maxPixelCount: options.maxPixelCount, quiet: quiet),
              decoded.bitmap.size.width >= target.width, decoded.bitmap.size.height >= target.height else { return nil }
        return (decoded.bitmap, decoded.warnings)
    }

    /// The smallest embedded thumbnail that covers `target` with the picture's aspect ratio.
    static func bestThumbnail(of primary: borrowing HEIFLibrary.Handle, covering target: PixelSize,
                              info: ImageInfo) -> (id: heif_item_id, size: PixelSize)? {
        var best: (id: heif_item_id, size: PixelSize)?
        for id in primary.thumbnailIDs {
            guard let handle = try? primary.thumbnail(id) else { continue }
            let size = handle.size
            let aspect = Double(size.width) / Double(max(1, size.height))
            let expected = Double(info.size.width) / Double(info.size.height)
            guard size.isValid, size.width >= target.width, size.height >= target.height,
                  size.width < info.size.width, abs(aspect / expected - 1) <= 0.02,
                  best.map({ size.pixelCount < $0.size.pixelCount }) ?? true else { continue }
            best = (id, size)
        }
        return best
    }

    /// The peak of decoding a picture of `size` to RGBA8 at `output` pixels: while libheif
    /// decodes, the decoder's own picture and libheif's copy as YCbCr 4:2:0 (1.5 bytes a pixel
    /// each, twice that above 8 bits; dav1d's padded AV1 pictures and frame buffers measure
    /// about 5 in all), an alpha plane, and the interleaved RGB(A) conversion; afterwards that
    /// conversion and the output bitmap (the planes are freed by then).
    static func decodeMemory(_ size: PixelSize, output: PixelSize, alpha: Bool, bitDepth: Int?, av1: Bool) -> Int {
        let sampleBytes = (bitDepth ?? 8) > 8 ? 2 : 1
        let pictures = size.pixelCount * (av1 ? 5 : 3) * sampleBytes + (alpha ? 2 * size.pixelCount * sampleBytes : 0)
        let interleaved = size.pixelCount * (alpha ? 4 : 3)
        return max(pictures + interleaved, interleaved + output.pixelCount * 4)
    }

    /// The size the primary image is resampled to while it is read from libheif's plane:
    /// `target` clamped to `size` in each dimension (never upscaled), or nil for full size.
    static func output(for target: PixelSize?, size: PixelSize) -> PixelSize? {
        guard let target, target.isValid, target.width < size.width || target.height < size.height else { return nil }
        return PixelSize(width: min(target.width, size.width), height: min(target.height, size.height))
    }

    private var quiet: Bool { standardError == .discardedWhileDecoding }

    static func info(_ primary: borrowing HEIFLibrary.Handle, context: borrowing HEIFLibrary.Context) -> ImageInfo {
        ImageInfo(format: context.format, size: primary.size, orientation: .up, hasAlpha: primary.hasAlpha,
                  frameCount: max(1, context.topLevelImageCount), componentCount: primary.hasAlpha ? 4 : 3,
                  bitDepth: primary.bitDepth)
    }

    /// `.avif` when the `ftyp` brands say so, else `.heif` (the format named in errors).
    private static func format(of data: Data) -> ImageFormat {
        avifSignature.matches(data) ? .avif : .heif
    }
}
