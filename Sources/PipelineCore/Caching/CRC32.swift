#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

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
    /// Slicing-by-8 tables: `tables[k * 256 + n]` is the CRC of byte `n` followed by `k` zero
    /// bytes, so eight bytes are folded in with eight lookups and no per-bit work.
    private static let tables: [UInt32] = {
        var tables = [UInt32](repeating: 0, count: 8 * 256)
        for n in 0..<256 {
            var c = UInt32(n)
            for _ in 0..<8 { c = c & 1 != 0 ? 0xEDB8_8320 ^ (c >> 1) : c >> 1 }
            tables[n] = c
        }
        for k in 1..<8 {
            for n in 0..<256 {
                let previous = tables[(k - 1) * 256 + n]
                tables[k * 256 + n] = tables[Int(previous & 0xFF)] ^ (previous >> 8)
            }
        }
        return tables
    }()

    /// The CRC of `bytes`, continuing from `crc` (0 to start): feeding a buffer in pieces gives
    /// the CRC of the whole.
    /// - Complexity: O(n) in the byte count, eight bytes per step (slicing-by-8).
    public static func checksum(_ bytes: UnsafeRawBufferPointer, continuing crc: UInt32 = 0) -> UInt32 {
        var c = ~crc
        tables.withUnsafeBufferPointer { t in
            var offset = 0
            let count = bytes.count
            while count - offset >= 8 {
                let one = bytes.loadUnaligned(fromByteOffset: offset, as: UInt32.self).littleEndian ^ c
                let two = bytes.loadUnaligned(fromByteOffset: offset + 4, as: UInt32.self).littleEndian
                c = t[7 * 256 + Int(one & 0xFF)] ^ t[6 * 256 + Int((one >> 8) & 0xFF)]
                    ^ t[5 * 256 + Int((one >> 16) & 0xFF)] ^ t[4 * 256 + Int(one >> 24)]
                    ^ t[3 * 256 + Int(two & 0xFF)] ^ t[2 * 256 + Int((two >> 8) & 0xFF)]
                    ^ t[256 + Int((two >> 16) & 0xFF)] ^ t[Int(two >> 24)]
                offset += 8
            }
            while offset < count {
                c = t[Int((c ^ UInt32(bytes[offset])) & 0xFF)] ^ (c >> 8)
                offset += 1
            }
        }
        return ~c
    }

    /// The CRC of `bytes` (`Data`, `[UInt8]`, an array slice…).
    public static func checksum<C: ContiguousBytes>(_ bytes: C) -> UInt32 {
        bytes.withUnsafeBytes { checksum($0) }
    }
}
