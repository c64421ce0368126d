import Foundation

/// What the disk cache keeps for requests with processors.
public enum DiskCachePolicy: Hashable, Sendable {
    /// Only the original bytes, keyed by fetch URL (as before processors existed). The default.
    case originals
    /// The original bytes, and for a request with processors also the processed result
    /// ("rendition"), encoded by ``ImagePipeline/Configuration/renditionEncoder``. A memory
    /// miss then decodes the small rendition instead of decoding and processing the original.
    case originalsAndRenditions
}

/// Encodes a processed bitmap for the rendition disk cache. Must be lossless for alpha and
/// decodable by one of the pipeline's decoders. ``RenditionEncoder`` (lossy for opaque
/// renditions, lossless for the others, through an ``EncoderRegistry``) is the usual choice;
/// `CodecPNG`'s `PNGEncoder` conforms too (always PNG).
public protocol RenditionEncoding: Sendable {
    /// The encoded bytes of `bitmap`.
    func encode(_ bitmap: Bitmap) throws -> Data

    /// Names the encoding (formats and settings) in the rendition key, so renditions written
    /// with other settings never answer. Default `""` (the key of a PNG-only rendition cache).
    var renditionIdentifier: String { get }
}

extension RenditionEncoding {
    /// `""`: the key is fetch URL, size, mode, options and processors only.
    public var renditionIdentifier: String { "" }
}

/// Stores opaque renditions lossy (JPEG at quality 85 by default, ``opaqueOptions``) and renditions with any
/// non-opaque pixel lossless (PNG by default), with encoders from a registry:
///
/// ```swift
/// configuration.diskCachePolicy = .originalsAndRenditions
/// configuration.renditionEncoder = RenditionEncoder(
///     encoders: EncoderRegistry().registering(JPEGEncoder()).registering(PNGEncoder()), quality: 85)
/// ```
///
/// The registry's formats must also be decodable by the pipeline's decoders (a rendition that
/// does not decode is removed and reads as a miss). When no encoder for ``opaqueFormat`` is
/// registered, opaque renditions use ``transparentFormat`` too. The formats and options are part
/// of the rendition key (``renditionIdentifier``): changing them makes new renditions.
public struct RenditionEncoder: RenditionEncoding {
    /// The encoders, by format.
    public var encoders: EncoderRegistry
    /// The format of renditions whose every pixel is opaque. Default ``ImageFormat/jpeg``.
    public var opaqueFormat: ImageFormat
    /// Their options; default quality 85 (4:2:0, optimised tables): a thumbnail's cache, close to
    /// the processed pixels (SSIMULACRA2 about 80 on photos) at a fraction of PNG's size.
    public var opaqueOptions: EncodeOptions
    /// The format of renditions with any transparent or translucent pixel: lossless (PNG, or
    /// WebP with `lossless`). Default ``ImageFormat/png``.
    public var transparentFormat: ImageFormat
    /// Their options. Default `EncodeOptions(lossless: true, compressionLevel: 1)`: renditions
    /// are written on the decode pool while a screen waits, so the fast zlib level.
    public var transparentOptions: EncodeOptions

    /// An encoder choosing by opacity: `opaqueFormat` at `quality`, else `transparentFormat`.
    public init(encoders: EncoderRegistry, opaqueFormat: ImageFormat = .jpeg, quality: Int = 85,
                transparentFormat: ImageFormat = .png) {
        self.encoders = encoders
        self.opaqueFormat = opaqueFormat
        self.opaqueOptions = EncodeOptions(quality: quality)
        self.transparentFormat = transparentFormat
        self.transparentOptions = EncodeOptions(lossless: true, compressionLevel: 1)
    }

    /// The format `bitmap`'s rendition is written in, and with which options.
    public func choice(for bitmap: Bitmap) -> (format: ImageFormat, options: EncodeOptions) {
        bitmap.isOpaque && encoders.encoder(for: opaqueFormat) != nil
            ? (opaqueFormat, opaqueOptions) : (transparentFormat, transparentOptions)
    }

    /// The rendition's bytes.
    /// - Throws: ``EncodingError`` (``EncodingError/noEncoder(format:)`` when the registry has
    ///   no encoder for the format chosen).
    public func encode(_ bitmap: Bitmap) throws -> Data {
        let (format, options) = choice(for: bitmap)
        return try encoders.requireEncoder(for: format).encode(bitmap, options: options)
    }

    /// Both formats and their options, e.g. `opaque=jpeg/q85/4:2:0/p0/o1;alpha=png/lossless/z1`.
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
        return "opaque=\(describe(opaqueFormat, opaqueOptions));alpha=\(describe(transparentFormat, transparentOptions))"
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

extension ImageKey {
    /// The disk-cache key of this key's rendition: a URL no loader serves, naming a SHA-256 of
    /// the fetch URL, size, mode, options and processor identifiers.
    var renditionURL: URL? { renditionURL(encoding: "") }

    /// ``renditionURL`` for renditions written by an encoder with `encoding` as its
    /// ``RenditionEncoding/renditionIdentifier`` (`""` leaves the key as it always was).
    func renditionURL(encoding: String) -> URL? {
        let size: String
        switch targetSize {
        case .original: size = "original"
        case .pixels(let pixels): size = "\(pixels.width)x\(pixels.height)"
        }
        let options = [processing.appliesOrientation, processing.strictDecoding, processing.allowsUpscaling,
                       processing.convertsToSRGB].map { $0 ? "1" : "0" }.joined()
        var parts = [fetchURL.absoluteString, size, contentMode.rawValue, options] + processors.map(\.identifier)
        if !encoding.isEmpty { parts.append("encoding=" + encoding) }
        // Length-prefixed parts, so no identifier can imitate a boundary.
        let text = parts.map { "\($0.utf8.count):\($0)" }.joined()
        return URL(string: "imgpipe-rendition:///" + SHA256.hexDigest(Array(text.utf8)))
    }
}

/// The tag a rendition carries (in its entry's `etag`): the original bytes' length and CRC-32,
/// so a rendition made from other bytes (replaced by a revalidation, even across restarts, even
/// without validators) never answers.
func renditionTag(of original: Data) -> String {
    "\(original.count)-\(String(CRC32.checksum(original), radix: 16))"
}

/// The same tag from an entry's digest (no bytes read).
func renditionTag(of original: CachedDigest) -> String {
    "\(original.length)-\(String(original.crc32, radix: 16))"
}
