#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

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
