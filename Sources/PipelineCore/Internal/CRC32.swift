import Foundation

/// CRC-32 (IEEE 802.3, the zlib/PNG polynomial), table-driven: the disk cache's checksum of
/// entry bodies and headers. It detects torn and flipped bytes; it is not a defence against an
/// adversary who can write the cache directory.
package enum CRC32 {
    private static let table: [UInt32] = (0..<256).map { n -> UInt32 in
        var c = UInt32(n)
        for _ in 0..<8 { c = c & 1 != 0 ? 0xEDB8_8320 ^ (c >> 1) : c >> 1 }
        return c
    }

    /// The CRC of `bytes`, continuing from `crc` (0 to start).
    package static func checksum(_ bytes: UnsafeRawBufferPointer, continuing crc: UInt32 = 0) -> UInt32 {
        var c = ~crc
        table.withUnsafeBufferPointer { table in
            for byte in bytes { c = table[Int((c ^ UInt32(byte)) & 0xFF)] ^ (c >> 8) }
        }
        return ~c
    }

    /// The CRC of `bytes`.
    package static func checksum<C: ContiguousBytes>(_ bytes: C) -> UInt32 {
        bytes.withUnsafeBytes { checksum($0) }
    }
}
