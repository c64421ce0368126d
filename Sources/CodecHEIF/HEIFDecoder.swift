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

    /// `[.heif, .avif]`, or `[.heif]` when libheif has no AV1 decoder (AVIF data handed to
    /// ``decode(_:options:)`` then fails with ``PipelineCore/ImagePipelineError/unsupported(format:message:)``).
    public var formats: Set<ImageFormat> { Self.decodesAVIF ? [.heif, .avif] : [.heif] }

    /// Parses the container (no pixels decoded): the primary image's displayed size, alpha,
    /// luma bit depth, and the number of top-level images as `frameCount`.
    public func readInfo(_ data: Data) throws -> ImageInfo {
        let format = Self.format(of: data)
        return try data.withUnsafeBytes { raw in
            let context = try HEIFLibrary.Context(raw, format: format)
            let primary = try context.primary()
            return Self.info(primary, context: context)
        }
    }

    /// Decodes the primary image, or an embedded thumbnail that covers `options.targetSize`.
    /// The bitmap is at least the target size (never resampled here) and upright.
    public func decode(_ data: Data, options: DecodeOptions) throws -> DecodedImage {
        let format = Self.format(of: data)
        return try data.withUnsafeBytes { raw in
            let context = try HEIFLibrary.Context(raw, format: format)
            let primary = try context.primary()
            let info = Self.info(primary, context: context)
            try options.checkPixelLimit(info)
            if let target = options.targetSize, target.isValid,
               target.width < info.size.width || target.height < info.size.height,
               let thumbnail = Self.thumbnail(of: primary, covering: target, info: info, options: options) {
                return DecodedImage(bitmap: thumbnail.0, info: info, warnings: thumbnail.1)
            }
            let (bitmap, warnings) = try primary.decode(strict: options.strict, maxPixelCount: options.maxPixelCount)
            guard bitmap.size == info.size else {
                throw ImagePipelineError.corruptData(format: format, message: "libheif decoded \(bitmap.size), the header says \(info.size)")
            }
            return DecodedImage(bitmap: bitmap, info: info, warnings: warnings)
        }
    }

    /// The smallest thumbnail that covers `target` with the picture's aspect ratio, decoded;
    /// `nil` (decode the primary image) when there is none or it fails to decode.
    private static func thumbnail(of primary: borrowing HEIFLibrary.Handle, covering target: PixelSize, info: ImageInfo,
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

    private static func info(_ primary: borrowing HEIFLibrary.Handle, context: borrowing HEIFLibrary.Context) -> ImageInfo {
        ImageInfo(format: context.format, size: primary.size, orientation: .up, hasAlpha: primary.hasAlpha,
                  frameCount: max(1, context.topLevelImageCount), componentCount: primary.hasAlpha ? 4 : 3,
                  bitDepth: primary.bitDepth)
    }

    /// `.avif` when the `ftyp` brands say so, else `.heif` (the format named in errors).
    private static func format(of data: Data) -> ImageFormat {
        ImageFormat.sniff(data) == .avif ? .avif : .heif
    }
}
