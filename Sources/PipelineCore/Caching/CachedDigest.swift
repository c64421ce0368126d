#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// What identifies a stored entry's bytes without the bytes: their length and CRC-32, and the
/// entry's info. Renditions are tagged with their original's digest.
public struct CachedDigest: Hashable, Sendable {
    /// How many bytes are stored.
    public var length: Int
    /// Their CRC-32 (``CRC32``, as `DiskCache` keeps it in each entry's header).
    public var crc32: UInt32
    /// Validators and freshness.
    public var info: CacheEntryInfo

    /// Creates a digest.
    public init(length: Int, crc32: UInt32, info: CacheEntryInfo) {
        self.length = length
        self.crc32 = crc32
        self.info = info
    }
}

extension DataCaching {
    /// The digest of `url`'s entry, or `nil`. This default reads the whole entry and computes
    /// the CRC-32; `DiskCache` reads only the entry's header, which holds both.
    public func cachedDigest(for url: URL) async -> CachedDigest? {
        guard let cached = await cachedData(for: url) else { return nil }
        return CachedDigest(length: cached.data.count, crc32: CRC32.checksum(cached.data), info: cached.info)
    }
}
