#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Stores opaque renditions as JPEG at quality 85 (``opaqueOptions``) and renditions with any
/// non-opaque pixel as WebP at quality 85 with exact (lossless) alpha (``transparentOptions``),
/// with encoders from a registry:
///
/// ```swift
/// configuration.diskCachePolicy = .originalsAndRenditions
/// configuration.renditionEncoder = RenditionEncoder(
///     encoders: EncoderRegistry().registering(JPEGEncoder()).registering(WebPEncoder()).registering(PNGEncoder()))
/// ```
///
/// A rendition is a cache of a display result, so its colour may be lossy in both cases; the
/// alpha of a WebP rendition is kept exactly (a round avatar's edge and outside stay as
/// processed). On the `.circle` grid a second launch decodes these about 3× faster than PNG
/// renditions (zlib level 1), and they take a tenth of the bytes (`Benchmarks/processors.sh`).
///
/// The registry's formats must also be decodable by the pipeline's decoders (a rendition that
/// does not decode is removed and reads as a miss). When no encoder for ``opaqueFormat`` is
/// registered, opaque renditions are written as transparent ones; when none for
/// ``transparentFormat`` is, as lossless PNG at zlib level 1 (the previous default). The formats
/// and options in use are part of the rendition key (``renditionIdentifier``): changing them
/// makes new renditions.
public struct RenditionEncoder: RenditionEncoding {
    /// The encoders, by format.
    public var encoders: EncoderRegistry
    /// The format of renditions whose every pixel is opaque. Default ``ImageFormat/jpeg``.
    public var opaqueFormat: ImageFormat
    /// Their options; default quality 85 (4:2:0, optimised tables): a thumbnail's cache, close to
    /// the processed pixels (SSIMULACRA2 about 80 on photos) at a fraction of PNG's size.
    public var opaqueOptions: EncodeOptions
    /// The format of renditions with any transparent or translucent pixel. Default
    /// ``ImageFormat/webp`` (lossy colour, lossless alpha); ``ImageFormat/png`` or lossless
    /// WebP (`EncodeOptions(lossless: true)`) keep every pixel.
    public var transparentFormat: ImageFormat
    /// Their options. Default for WebP `EncodeOptions(quality: 85)`; for any other format
    /// `EncodeOptions(lossless: true, compressionLevel: 1)` (renditions are written on the decode
    /// pool while a screen waits, so the fast zlib level).
    public var transparentOptions: EncodeOptions

    /// An encoder choosing by opacity: `opaqueFormat` at `quality`, else `transparentFormat`
    /// (WebP at `quality` with exact alpha, or lossless).
    public init(encoders: EncoderRegistry, opaqueFormat: ImageFormat = .jpeg, quality: Int = 85,
                transparentFormat: ImageFormat = .webp) {
        self.encoders = encoders
        self.opaqueFormat = opaqueFormat
        self.opaqueOptions = EncodeOptions(quality: quality)
        self.transparentFormat = transparentFormat
        self.transparentOptions = transparentFormat == .webp
            ? EncodeOptions(quality: quality) : EncodeOptions(lossless: true, compressionLevel: 1)
    }

    /// What renditions with alpha are written as when the registry has no encoder for
    /// ``transparentFormat``: PNG, zlib level 1.
    static let fallback = (format: ImageFormat.png, options: EncodeOptions(lossless: true, compressionLevel: 1))

    /// The format `bitmap`'s rendition is written in, and with which options.
    public func choice(for bitmap: Bitmap) -> (format: ImageFormat, options: EncodeOptions) {
        bitmap.isOpaque && encoders.encoder(for: opaqueFormat) != nil ? (opaqueFormat, opaqueOptions) : transparentChoice
    }

    /// ``transparentFormat`` and its options, or the PNG fallback without its encoder.
    private var transparentChoice: (format: ImageFormat, options: EncodeOptions) {
        encoders.encoder(for: transparentFormat) != nil ? (transparentFormat, transparentOptions) : Self.fallback
    }

    /// The rendition's bytes.
    /// - Throws: ``EncodingError`` (``EncodingError/noEncoder(format:)`` when the registry has
    ///   no encoder for the format chosen).
    public func encode(_ bitmap: Bitmap) throws -> Data {
        let (format, options) = choice(for: bitmap)
        return try encoders.requireEncoder(for: format).encode(bitmap, options: options)
    }

    /// Both formats in use and their options, e.g. `opaque=jpeg/q85/p0/o1;alpha=webp/q85/p0/o1`.
    public var renditionIdentifier: String {
        func describe(_ format: ImageFormat, _ o: EncodeOptions) -> String {
            var parts = [format.rawValue]
            if let quality = o.quality { parts.append("q\(quality)") }
            if o.lossless { parts.append("lossless") }
            if let chroma = o.chromaSubsampling { parts.append(chroma.rawValue) }
            if let level = o.compressionLevel { parts.append("z\(level)") }
            if let effort = o.effort { parts.append("e\(effort)") }
            parts.append(o.progressive ? "p1" : "p0")
            parts.append(o.optimizesCoding ? "o1" : "o0")
            return parts.joined(separator: "/")
        }
        let alpha = transparentChoice
        return "opaque=\(describe(opaqueFormat, opaqueOptions));alpha=\(describe(alpha.format, alpha.options))"
    }
}

extension Bitmap {
    /// Whether every pixel's alpha is 255.
    var isOpaque: Bool {
        withUnsafeBytes { bytes in
            for y in 0..<height {
                let row = y * bytesPerRow
                var x = row + 3
                while x < row + width * 4 {
                    if bytes[x] != 255 { return false }
                    x += 4
                }
            }
            return true
        }
    }
}
