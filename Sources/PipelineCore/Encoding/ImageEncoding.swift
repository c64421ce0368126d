import Foundation

/// How chroma is sampled by encoders that store luma and chroma (JPEG, lossy WebP, HEIC, AVIF).
public enum ChromaSubsampling: String, Hashable, Sendable, CaseIterable {
    /// Chroma at half the resolution in both directions (4:2:0): the smallest files; the
    /// default of libjpeg, vips and every web encoder.
    case yuv420 = "4:2:0"
    /// Chroma at half the horizontal resolution (4:2:2).
    case yuv422 = "4:2:2"
    /// Chroma at full resolution (4:4:4): sharper coloured edges, bigger files.
    case yuv444 = "4:4:4"
}

/// What an encoder is asked for. Every field has an encoder-specific default when `nil`, so
/// `EncodeOptions()` means "this encoder's sensible default"; an encoder ignores fields that
/// mean nothing for its format (a PNG encoder ignores `quality`) and throws
/// ``EncodingError/invalidOptions(format:message:)`` for values out of range.
public struct EncodeOptions: Hashable, Sendable {
    /// Lossy quality, 0 (worst) to 100 (best). `nil`: the encoder's default (JPEG 80, WebP 80,
    /// HEIC/AVIF 50; vips's own defaults are 75 for `jpegsave`/`webpsave` and 50 for
    /// `heifsave`). Ignored by lossless encoders and with ``lossless``.
    public var quality: Int?
    /// Store the pixels exactly (WebP lossless, AVIF/HEIC lossless where libheif supports it).
    /// PNG is always lossless; JPEG throws ``EncodingError/invalidOptions(format:message:)``.
    public var lossless: Bool
    /// Write a progressive JPEG (or an interlaced PNG). Default `false`.
    public var progressive: Bool
    /// Chroma subsampling for formats that have it; `nil`: 4:2:0 for lossy encodes.
    public var chromaSubsampling: ChromaSubsampling?
    /// Lossless compression effort for PNG: the zlib level 0–9. `nil`: 6.
    public var compressionLevel: Int?
    /// Encoder effort, 0 (fastest) to 6 (slowest, smallest): WebP's `method`; AVIF/HEIC map it
    /// onto their speed setting. `nil`: the encoder's default (WebP 4).
    public var effort: Int?
    /// Optimise entropy coding (JPEG's optimal Huffman tables). Default `true`.
    public var optimizesCoding: Bool

    /// Creates options; every `nil` is the encoder's default.
    public init(quality: Int? = nil, lossless: Bool = false, progressive: Bool = false,
                chromaSubsampling: ChromaSubsampling? = nil, compressionLevel: Int? = nil, effort: Int? = nil,
                optimizesCoding: Bool = true) {
        self.quality = quality
        self.lossless = lossless
        self.progressive = progressive
        self.chromaSubsampling = chromaSubsampling
        self.compressionLevel = compressionLevel
        self.effort = effort
        self.optimizesCoding = optimizesCoding
    }
}

/// Why encoding failed. Encoders throw these (wrapped in nothing: the caller knows which
/// bitmap it asked to write).
public enum EncodingError: Error, Hashable, Sendable, CustomStringConvertible {
    /// No registered encoder writes `format`.
    case noEncoder(format: ImageFormat)
    /// The encoder exists but cannot run here, e.g. libheif was built without an AVIF encoder.
    case unsupported(format: ImageFormat, message: String)
    /// An option is out of range or meaningless for the format (quality 120, lossless JPEG).
    case invalidOptions(format: ImageFormat, message: String)
    /// The codec library refused; `message` is its own.
    case failed(format: ImageFormat, message: String)

    /// A sentence naming the format and the reason.
    public var description: String {
        switch self {
        case .noEncoder(let format):
            return "no encoder is registered for \(format)"
        case .unsupported(let format, let message):
            return "cannot encode \(format) here: \(message)"
        case .invalidOptions(let format, let message):
            return "invalid \(format) encoding options: \(message)"
        case .failed(let format, let message):
            return "\(format) encoding failed: \(message)"
        }
    }
}

extension EncodingError: LocalizedError {
    /// The same as ``description``.
    public var errorDescription: String? { description }
}

/// Writes a ``Bitmap`` in one format. Codec modules ship one each (`JPEGEncoder`,
/// `PNGEncoder`, `WebPEncoder`, `HEIFEncoder`); a third party can add its own and register
/// it in an ``EncoderRegistry`` without touching the core.
///
/// An encoder takes bitmaps of either alpha representation (see ``PixelFormat``) and writes
/// straight alpha, as every file format stores it: a straight bitmap's bytes go out
/// unchanged, so decoding a file at full size and writing it back is exact.
public protocol ImageEncoding: Sendable {
    /// The format this encoder writes.
    var format: ImageFormat { get }

    /// The encoded bytes of `bitmap`.
    /// - Throws: ``EncodingError``.
    func encode(_ bitmap: Bitmap, options: EncodeOptions) throws -> Data
}

extension ImageEncoding {
    /// The encoded bytes of `bitmap` with this encoder's default options.
    public func encode(_ bitmap: Bitmap) throws -> Data {
        try encode(bitmap, options: EncodeOptions())
    }

    /// Throws ``EncodingError/invalidOptions(format:message:)`` unless `quality` (when set)
    /// is within 0...100 and `effort` (when set) within 0...6: the checks every encoder shares.
    public func validateCommonOptions(_ options: EncodeOptions) throws {
        if let quality = options.quality, !(0...100).contains(quality) {
            throw EncodingError.invalidOptions(format: format, message: "quality \(quality) is outside 0...100")
        }
        if let effort = options.effort, !(0...6).contains(effort) {
            throw EncodingError.invalidOptions(format: format, message: "effort \(effort) is outside 0...6")
        }
    }
}

/// The encoders an app links, by the format they write. A value, like ``DecoderRegistry``.
///
/// Rule for duplicates: **the last registration wins**, as for decoders.
public struct EncoderRegistry: Sendable {
    private var encoders: [any ImageEncoding] = []

    /// An empty registry.
    public init() {}

    /// A registry holding `encoders`, registered in order (so later ones win).
    public init(_ encoders: [any ImageEncoding]) {
        for encoder in encoders { register(encoder) }
    }

    /// Adds `encoder`; it replaces an earlier encoder of the same format.
    public mutating func register(_ encoder: any ImageEncoding) {
        encoders.insert(encoder, at: 0)
    }

    /// A copy with `encoder` registered.
    public func registering(_ encoder: any ImageEncoding) -> EncoderRegistry {
        var copy = self
        copy.register(encoder)
        return copy
    }

    /// Every registered encoder, newest first.
    public var all: [any ImageEncoding] { encoders }

    /// The formats some registered encoder writes.
    public var formats: Set<ImageFormat> { Set(encoders.map(\.format)) }

    /// The newest encoder for `format`, or `nil`.
    public func encoder(for format: ImageFormat) -> (any ImageEncoding)? {
        encoders.first { $0.format == format }
    }

    /// The encoder for `format`, or ``EncodingError/noEncoder(format:)``.
    public func requireEncoder(for format: ImageFormat) throws -> any ImageEncoding {
        if let encoder = encoder(for: format) { return encoder }
        throw EncodingError.noEncoder(format: format)
    }

    /// Encodes `bitmap` as `format` with the registered encoder.
    /// - Throws: ``EncodingError``.
    public func encode(_ bitmap: Bitmap, as format: ImageFormat, options: EncodeOptions = EncodeOptions()) throws -> Data {
        try requireEncoder(for: format).encode(bitmap, options: options)
    }
}
