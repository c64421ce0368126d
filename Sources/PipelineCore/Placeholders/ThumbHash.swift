import Foundation

/// A placeholder hash of a picture: Evan Wallace's ThumbHash (https://evanw.github.io/thumbhash/),
/// at most 25 bytes that decode to a blurred picture of the right colours, alpha and aspect
/// ratio. The pipeline computes one when it decodes a picture and keeps it with the disk entry
/// (``CacheEntryInfo/placeholder``), so ``ImagePipeline/placeholder(for:)`` answers without
/// reading or decoding the picture.
public struct ThumbHash: Hashable, Sendable, CustomStringConvertible {
    /// The hash as the reference implementation writes it.
    public let bytes: [UInt8]

    /// The most bytes a hash has (with alpha, landscape or portrait).
    public static let maxByteCount = 25

    /// A hash from its bytes; `nil` when they are too short or too long to be one.
    public init?(bytes: [UInt8]) {
        guard bytes.count >= 5, bytes.count <= Self.maxByteCount else { return nil }
        self.bytes = bytes
    }

    /// A hash from standard base64 (as `imgpipe info --thumbhash` prints it); `nil` when the
    /// text is not base64 of a hash.
    public init?(base64: String) {
        guard let data = Data(base64Encoded: base64) else { return nil }
        self.init(bytes: [UInt8](data))
    }

    /// The hash in standard base64, with padding.
    public var base64: String { Data(bytes).base64EncodedString() }

    /// The base64 form.
    public var description: String { base64 }
}
