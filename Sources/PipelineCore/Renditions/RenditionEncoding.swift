#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

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
