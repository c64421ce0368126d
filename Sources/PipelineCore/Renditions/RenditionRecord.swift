#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// What a rendition's cache entry records besides its bytes (``CacheEntryInfo/rendition``):
/// which original bytes it was made from, the original's size and format, and whether it may
/// answer without that original on disk. The entry's own validators and freshness are the
/// original's (those of the response the rendition was made from), so a standalone rendition
/// revalidates with them.
///
/// A ``DataCaching`` implementation stores it as it stores the rest of the info; one that
/// writes bytes can use ``serialized`` and ``init(serialized:)``.
public struct RenditionRecord: Hashable, Sendable {
    /// The original bytes' length and CRC-32 (``tag(of:)``): while that original is on disk the
    /// rendition answers only for those bytes (replaced by a revalidation, even across
    /// restarts, even without validators, it never answers again).
    public var originTag: String
    /// The original picture's size (upright), reported as the response's `originalSize`.
    public var originalSize: PixelSize
    /// The original's format, reported as the response's `format`.
    public var format: ImageFormat
    /// Whether it may answer (and be revalidated) without its original on disk
    /// (``DiskCachePolicy/renditions``, ``DiskCachePolicy/automatic``).
    public var standalone: Bool

    /// Creates a record.
    public init(originTag: String, originalSize: PixelSize, format: ImageFormat, standalone: Bool) {
        self.originTag = originTag
        self.originalSize = originalSize
        self.format = format
        self.standalone = standalone
    }

    /// The tag of original bytes: their length and CRC-32, e.g. `"48213-1c291ca3"`.
    public static func tag(of original: Data) -> String {
        "\(original.count)-\(String(CRC32.checksum(original), radix: 16))"
    }

    /// The same tag from a stored entry's digest (no bytes read).
    public static func tag(for original: CachedDigest) -> String {
        "\(original.length)-\(String(original.crc32, radix: 16))"
    }

    /// The record as bytes: a version byte (1), flags (bit 0: standalone), the size as two
    /// little-endian `UInt32`s, then the tag and the format's raw value, each a little-endian
    /// `UInt16` length and UTF-8.
    public var serialized: Data {
        var out = Data([1, standalone ? 1 : 0])
        for value in [originalSize.width, originalSize.height] {
            withUnsafeBytes(of: UInt32(clamping: value).littleEndian) { out.append(contentsOf: $0) }
        }
        for text in [originTag, format.rawValue] {
            let bytes = Array(text.utf8.prefix(Int(UInt16.max)))
            withUnsafeBytes(of: UInt16(bytes.count).littleEndian) { out.append(contentsOf: $0) }
            out.append(contentsOf: bytes)
        }
        return out
    }

    /// Reads ``serialized`` bytes; `nil` for anything else (another version, a short or long
    /// buffer, text that is not UTF-8).
    public init?(serialized data: Data) {
        let bytes = [UInt8](data)
        guard bytes.count >= 10, bytes[0] == 1, bytes[1] <= 1 else { return nil }
        func integer(_ offset: Int, _ count: Int) -> Int {
            (0..<count).reduce(0) { $0 | Int(bytes[offset + $1]) << (8 * $1) }
        }
        var offset = 10
        func text() -> String? {
            guard offset + 2 <= bytes.count else { return nil }
            let length = integer(offset, 2)
            guard offset + 2 + length <= bytes.count else { return nil }
            defer { offset += 2 + length }
            return String(validating: bytes[(offset + 2)..<(offset + 2 + length)], as: UTF8.self)
        }
        guard let tag = text(), let format = text(), offset == bytes.count else { return nil }
        self.init(originTag: tag, originalSize: PixelSize(width: integer(2, 4), height: integer(6, 4)),
                  format: ImageFormat(rawValue: format), standalone: bytes[1] == 1)
    }
}
