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
/// decodable by one of the pipeline's decoders; `CodecPNG`'s `PNGEncoder` conforms.
public protocol RenditionEncoding: Sendable {
    /// The encoded bytes of `bitmap`.
    func encode(_ bitmap: Bitmap) throws -> Data
}

extension ImageKey {
    /// The disk-cache key of this key's rendition: a URL no loader serves, naming a SHA-256 of
    /// the fetch URL, size, mode, options and processor identifiers.
    var renditionURL: URL? {
        let size: String
        switch targetSize {
        case .original: size = "original"
        case .pixels(let pixels): size = "\(pixels.width)x\(pixels.height)"
        }
        let options = [processing.appliesOrientation, processing.strictDecoding, processing.allowsUpscaling,
                       processing.convertsToSRGB].map { $0 ? "1" : "0" }.joined()
        let parts = [fetchURL.absoluteString, size, contentMode.rawValue, options] + processors.map(\.identifier)
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
