import Foundation

/// CRC-32 (IEEE 802.3, the zlib/PNG polynomial), table-driven: the checksum of
/// ``CachedDigest/crc32``.
///
/// A ``DataCaching`` implementation that stores digests (as `DiskCache` does in each entry's
/// header) computes them with this, so that renditions tagged with an original's digest match
/// whichever cache stored it. It detects torn and flipped bytes; it is not a defence against an
/// adversary who can write the cache.
///
/// ```swift
/// let crc = CRC32.checksum(data)  // 0xCBF4_3926 for "123456789"
/// ```
public enum CRC32 {
    private static let table: [UInt32] = (0..<256).map { n -> UInt32 in
        var c = UInt32(n)
        for _ in 0..<8 { c = c & 1 != 0 ? 0xEDB8_8320 ^ (c >> 1) : c >> 1 }
        return c
    }

    /// The CRC of `bytes`, continuing from `crc` (0 to start): feeding a buffer in pieces gives
    /// the CRC of the whole.
    /// - Complexity: O(n) in the byte count, one table lookup per byte.
    public static func checksum(_ bytes: UnsafeRawBufferPointer, continuing crc: UInt32 = 0) -> UInt32 {
        var c = ~crc
        table.withUnsafeBufferPointer { table in
            for byte in bytes { c = table[Int((c ^ UInt32(byte)) & 0xFF)] ^ (c >> 8) }
        }
        return ~c
    }

    /// The CRC of `bytes` (`Data`, `[UInt8]`, an array slice…).
    public static func checksum<C: ContiguousBytes>(_ bytes: C) -> UInt32 {
        bytes.withUnsafeBytes { checksum($0) }
    }
}
