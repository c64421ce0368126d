import CHEIF
import Foundation
import PipelineCore

/// Decodes HEIF (HEVC, `.heic`) and, when libheif has an AV1 decoder, AVIF with libheif: the
/// primary image, output RGBA8 premultiplied.
///
/// Register it with ``PipelineCore/DecoderRegistry/registering(_:)``:
/// `DecoderRegistry().registering(HEIFDecoder())`.
///
/// **Orientation.** HEIF stores rotation, mirroring and cropping as item properties
/// (`irot`, `imir`, `clap`) that are part of the picture's geometry; libheif applies them while
/// decoding and reports the displayed size. The decoder always lets it: ``readInfo(_:)``
/// reports the displayed size with orientation ``PipelineCore/ImageOrientation/up``, so
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
/// ICC profiles are not applied; images with more than 8 bits are converted to 8 bits by libheif.
public struct HEIFDecoder: ImageDecoding {
    /// Creates a HEIF decoder. It holds no state; one value serves every thread.
    public init() {}

    /// Whether this libheif can decode AVIF (it was built with libaom or dav1d):
    /// `heif_have_decoder_for_format(heif_compression_AV1)`.
    public static var decodesAVIF: Bool { HEIFLibrary.decodesAV1 }

    /// HEIF by its `ftyp` brands, and AVIF too when libheif has an AV1 decoder (AVIF data then
    /// goes to another registered decoder, or fails as "AVIF data, but no AVIF decoder").
    public var signatures: [ImageSignature] {
        Self.decodesAVIF ? [Self.heifSignature, Self.avifSignature] : [Self.heifSignature]
    }

    static let heifSignature = ImageSignature.isoBaseMedia(
        majorBrands: ["heic", "heix", "heim", "heis", "hevc", "hevx"],
        compatibleBrands: ["heic", "heix", "heim", "heis", "hevc", "hevx", "mif1", "msf1"], format: .heif)
    static let avifSignature = ImageSignature.isoBaseMedia(majorBrands: ["avif", "avis"], compatibleBrands: ["avif", "avis"],
                                                           format: .avif)

    /// Parses the container once (no pixels decoded): the primary image's displayed size,
    /// alpha, luma bit depth, and the number of top-level images as `frameCount`. The session
    /// decodes the primary image, or an embedded thumbnail that covers the target; the bitmap
    /// is at least the target size (never resampled here) and upright.
    public func withSession<R>(for data: Data, _ body: (any ImageDecodingSession) throws -> R) throws -> R {
        let format = Self.format(of: data)
        return try data.withUnsafeBytes { raw in
            let session = try Session(raw, format: format)
            return try body(session)
        }
    }

    /// One HEIF file read by libheif, its primary image found.
    final class Session: ImageDecodingSession {
        private let context: HEIFLibrary.Context
        private let primary: HEIFLibrary.Handle
        let info: ImageInfo

        init(_ raw: UnsafeRawBufferPointer, format: ImageFormat) throws {
            context = try HEIFLibrary.Context(raw, format: format)
            primary = try context.primary()
            info = HEIFDecoder.info(primary, context: context)
        }

        func decode(_ options: DecodeOptions) throws -> DecodedImage {
            if let target = options.targetSize, target.isValid,
               target.width < info.size.width || target.height < info.size.height,
               let thumbnail = HEIFDecoder.thumbnail(of: primary, covering: target, info: info, options: options) {
                return DecodedImage(bitmap: thumbnail.0, info: info, warnings: thumbnail.1)
            }
            let (bitmap, warnings) = try primary.decode(strict: options.strict, maxPixelCount: options.maxPixelCount)
            guard bitmap.size == info.size else {
                throw ImagePipelineError.corruptData(format: info.format,
                                                     message: "libheif decoded \(bitmap.size), the header says \(info.size)")
            }
            return DecodedImage(bitmap: bitmap, info: info, warnings: warnings)
        }
    }

    /// The smallest thumbnail that covers `target` with the picture's aspect ratio, decoded;
    /// `nil` (decode the primary image) when there is none or it fails to decode.
    static func thumbnail(of primary: borrowing HEIFLibrary.Handle, covering target: PixelSize, info: ImageInfo,
                                  options: DecodeOptions) -> (Bitmap, [String])? {
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
        guard let best, let handle = try? primary.thumbnail(best.id),
              let decoded = try? handle.decode(strict: options.strict, maxPixelCount: options.maxPixelCount),
              decoded.0.size.width >= target.width, decoded.0.size.height >= target.height else { return nil }
        return decoded
    }

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
