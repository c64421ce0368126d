import Foundation

/// What the disk cache keeps for a request: the original bytes, the request's processed and
/// resized result encoded (its "rendition"), or both (Nuke's `DataCachePolicy`).
///
/// A rendition is tagged with its original bytes' length and CRC-32. While the original is on
/// disk, the rendition answers only for those bytes, and the original's freshness decides (its
/// revalidation bringing new bytes stops the renditions made from the old ones answering).
/// Without the original on disk (``renditions``, ``automatic``), the rendition carries the
/// original's validators (`ETag`, `Last-Modified`) and freshness and stands alone: fresh, it
/// answers; stale, it is revalidated with a conditional request of its own before it answers
/// (whatever the request's ``RevalidationPolicy``): a 304 refreshes it; new bytes are decoded
/// and processed and replace it only once they decode (when they do not, or the origin cannot
/// be reached, the stored rendition answers). A download shared with a request whose policy
/// keeps originals still stores the original.
public enum DiskCachePolicy: Hashable, Sendable {
    /// Only the original bytes, keyed by fetch URL (as before processors existed). The default.
    case originals
    /// The original bytes, and for a request with processors also the processed result
    /// ("rendition"), encoded by ``ImagePipeline/Configuration/renditionEncoder``. A memory
    /// miss then decodes the small rendition instead of decoding and processing the original.
    case originalsAndRenditions
    /// Renditions only (Nuke's `storeEncodedImages`): every request stores its result encoded,
    /// a plain full-size request too (its decoded picture re-encoded, which costs a full-size
    /// encode: prefer ``automatic``), and the original bytes are not kept.
    case renditions
    /// A rendition for a request with processors or a target size, the original bytes for a
    /// plain request (original size, no processors). Nuke's `automatic`.
    case automatic

    /// Whether a request with `key` stores its rendition and looks it up.
    func makesRendition(for key: ImageKey) -> Bool {
        switch self {
        case .originals: false
        case .originalsAndRenditions: !key.processors.isEmpty
        case .renditions: true
        case .automatic: !key.processors.isEmpty || key.targetSize != .original
        }
    }

    /// Whether a request with `key` keeps loaded original bytes on disk.
    func storesOriginal(for key: ImageKey) -> Bool {
        switch self {
        case .originals, .originalsAndRenditions: true
        case .renditions: false
        case .automatic: !makesRendition(for: key)
        }
    }
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

/// The original a response was decoded from, as a rendition made from it records it: the
/// bytes' tag (`renditionTag(of:)`) and their validators and freshness.
struct RenditionOrigin: Sendable {
    let tag: String
    let info: CacheEntryInfo
}

/// What a rendition's entry says besides its bytes. The entry's `etag` is the original's tag;
/// its `lastModified` holds `"<width> <height> <format>"` (the original's size and format) and,
/// on further lines, for a rendition that may answer without its original (`s`), the
/// original's validators (`e<ETag>`, `m<Last-Modified>`); its `freshUntil` is the original's.
struct RenditionMeta: Sendable {
    var tag: String
    var originalSize: PixelSize?
    var format: ImageFormat?
    /// Whether it may answer (and be revalidated) without its original on disk.
    var standalone = false
    var etag: String?
    var lastModified: String?

    init(tag: String, originalSize: PixelSize, format: ImageFormat, standalone: Bool, validators: CacheEntryInfo) {
        self.tag = tag
        self.originalSize = originalSize
        self.format = format
        self.standalone = standalone
        etag = validators.etag
        lastModified = validators.lastModified
    }

    /// The metadata of a stored rendition, or `nil` for an entry without a tag.
    init?(_ info: CacheEntryInfo) {
        guard let tag = info.etag else { return nil }
        self.tag = tag
        let lines = (info.lastModified ?? "").split(separator: "\n", omittingEmptySubsequences: false)
        let first = lines.first?.split(separator: " ") ?? []
        if first.count == 3, let width = Int(first[0]), let height = Int(first[1]) {
            originalSize = PixelSize(width: width, height: height)
            format = ImageFormat(rawValue: String(first[2]))
        }
        for line in lines.dropFirst() {
            switch line.first {
            case "s": standalone = true
            case "e": etag = String(line.dropFirst())
            case "m": lastModified = String(line.dropFirst())
            default: break
            }
        }
    }

    /// The validators of the original it was made from, for its own revalidation.
    var validator: CacheValidator? { CacheValidator(etag: etag, lastModified: lastModified) }

    /// The entry info that stores this metadata, fresh until `freshUntil`.
    func info(freshUntil: Date?) -> CacheEntryInfo {
        var text = [originalSize.map { "\($0.width) \($0.height)" } ?? "0 0", format?.rawValue ?? "unknown"].joined(separator: " ")
        if standalone {
            text += "\ns"
            // Header values are one line; one that is not is left out rather than misread.
            if let etag, !etag.contains("\n") { text += "\ne" + etag }
            if let lastModified, !lastModified.contains("\n") { text += "\nm" + lastModified }
        }
        return CacheEntryInfo(etag: tag, lastModified: text, freshUntil: freshUntil)
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
