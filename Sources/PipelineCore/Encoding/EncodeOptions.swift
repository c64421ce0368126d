#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

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
    /// An ICC profile to embed: the colour space the pixels are in (a picture's own, from
    /// ``ImageResponse/iccProfile``, to keep its colours without converting them). Default
    /// `nil`: none, and readers take the pixels as sRGB. The JPEG (APP2), PNG (`iCCP`), WebP
    /// (`ICCP`), HEIC/AVIF (`colr`) and JPEG XL (its codestream's colour encoding) encoders
    /// embed it; at most ``maxICCProfileBytes``.
    public var iccProfile: Data?

    /// The largest ICC profile an encoder embeds: 1 MiB (the profiles pictures carry are a few
    /// kilobytes; JPEG can hold up to 16 MB in APP2 segments, PNG and WebP less in practice).
    public static let maxICCProfileBytes = 1 << 20

    /// `profile` when it can be embedded: at least an ICC header (128 bytes), at most
    /// ``maxICCProfileBytes``; `nil` stays `nil`.
    /// - Throws: ``EncodingError/invalidOptions(format:message:)`` otherwise.
    public static func checkedICCProfile(_ profile: Data?, format: ImageFormat) throws -> Data? {
        guard let profile else { return nil }
        guard (128...maxICCProfileBytes).contains(profile.count) else {
            throw EncodingError.invalidOptions(format: format, message:
                "an ICC profile of \(profile.count) bytes (an ICC profile is 128 bytes to \(maxICCProfileBytes))")
        }
        return profile
    }

    /// Creates options; every `nil` is the encoder's default.
    public init(quality: Int? = nil, lossless: Bool = false, progressive: Bool = false,
                chromaSubsampling: ChromaSubsampling? = nil, compressionLevel: Int? = nil, effort: Int? = nil,
                optimizesCoding: Bool = true, iccProfile: Data? = nil) {
        self.quality = quality
        self.lossless = lossless
        self.progressive = progressive
        self.chromaSubsampling = chromaSubsampling
        self.compressionLevel = compressionLevel
        self.effort = effort
        self.optimizesCoding = optimizesCoding
        self.iccProfile = iccProfile
    }
}
