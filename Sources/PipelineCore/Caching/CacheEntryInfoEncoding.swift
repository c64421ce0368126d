#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

// The one wire format of `CacheEntryInfo`: the disk cache's entry headers and sidecars and the
// Redis cache's values both carry the info as these bytes, so a field added to the info is
// written once and the caches cannot drift apart (they had: Redis dropped the heuristic-lifetime
// flag and kept freshness to the millisecond, the disk kept it as seconds since 1970).
//
// Version 1 (little-endian), 18 fixed bytes, then the variable parts:
//
//   0  version UInt8 = 1                      1  flags UInt8
//   2  fresh-until: Double seconds since 2001-01-01 UTC (bit pattern; `Date`'s own value, so
//      every date comes back exactly), 0 unless flags & 1
//   10 ETag length UInt16                     12 Last-Modified length UInt16
//   14 rendition record length UInt16         16 placeholder length UInt16
//   18 ETag, Last-Modified (UTF-8), rendition record (`RenditionRecord.serialized`),
//      placeholder (`ThumbHash.bytes`)
//
// Flags: 1 fresh-until present, 2 ETag present, 4 Last-Modified present, 8 rendition record
// present, 16 placeholder present, 32 the lifetime is heuristic. Another version, an unknown
// flag, a length that does not add up, a non-finite date, text that is not UTF-8 or a record or
// placeholder that does not parse: not info (`nil`), which a cache treats as a damaged entry.
// The encoding carries no checksum: the container around it (a CRC-covered disk header, a MACed
// Redis value) has one.

extension CacheEntryInfo {
    /// The version ``encoded()`` writes; the first byte of the encoding.
    package static let encodingVersion: UInt8 = 1
    /// Bytes before the variable parts.
    package static let encodingFixedLength = 18
    /// The longest encoding there can be; a longer declared length is damage.
    package static let maxEncodedLength = encodingFixedLength + 3 * Int(UInt16.max) + ThumbHash.maxByteCount

    private static let knownFlags: UInt8 = 63

    /// The info as bytes (the layout above), or `nil` when a validator or the rendition record
    /// is longer than the format allows (65,535 bytes).
    package func encoded() -> [UInt8]? {
        let etag = self.etag.map { Array($0.utf8) } ?? []
        let lastModified = self.lastModified.map { Array($0.utf8) } ?? []
        let rendition = self.rendition.map { [UInt8]($0.serialized) } ?? []
        let placeholder = self.placeholder?.bytes ?? []
        guard etag.count <= UInt16.max, lastModified.count <= UInt16.max, rendition.count <= UInt16.max,
              placeholder.count <= UInt16.max else { return nil }
        var flags: UInt8 = 0
        if freshUntil != nil { flags |= 1 }
        if self.etag != nil { flags |= 2 }
        if self.lastModified != nil { flags |= 4 }
        if self.rendition != nil { flags |= 8 }
        if self.placeholder != nil { flags |= 16 }
        if lifetimeIsHeuristic { flags |= 32 }
        var out = [UInt8]()
        out.reserveCapacity(Self.encodingFixedLength + etag.count + lastModified.count + rendition.count + placeholder.count)
        out.append(Self.encodingVersion)
        out.append(flags)
        out.appendLittleEndian((freshUntil?.timeIntervalSinceReferenceDate ?? 0).bitPattern)
        out.appendLittleEndian(UInt16(etag.count))
        out.appendLittleEndian(UInt16(lastModified.count))
        out.appendLittleEndian(UInt16(rendition.count))
        out.appendLittleEndian(UInt16(placeholder.count))
        out += etag
        out += lastModified
        out += rendition
        out += placeholder
        return out
    }

    /// Reads bytes ``encoded()`` wrote (exactly those, nothing after them); `nil` for anything else.
    package init?(encoded bytes: UnsafeRawBufferPointer) {
        guard bytes.count >= Self.encodingFixedLength, bytes.count <= Self.maxEncodedLength,
              bytes[0] == Self.encodingVersion, bytes[1] & ~Self.knownFlags == 0 else { return nil }
        let flags = bytes[1]
        let lengths = [10, 12, 14, 16].map { Int(bytes.loadLittleEndian(UInt16.self, at: $0)) }
        guard Self.encodingFixedLength + lengths.reduce(0, +) == bytes.count else { return nil }
        var start = Self.encodingFixedLength
        func field(_ index: Int) -> UnsafeRawBufferPointer {
            defer { start += lengths[index] }
            return UnsafeRawBufferPointer(rebasing: bytes[start..<start + lengths[index]])
        }
        let etagBytes = field(0), lastModifiedBytes = field(1), renditionBytes = field(2), placeholderBytes = field(3)
        // An absent field is empty.
        guard flags & 2 != 0 || etagBytes.isEmpty, flags & 4 != 0 || lastModifiedBytes.isEmpty,
              flags & 8 != 0 || renditionBytes.isEmpty, flags & 16 != 0 || placeholderBytes.isEmpty else { return nil }
        var etag: String?, lastModified: String?
        if flags & 2 != 0 {
            guard let text = String(validating: etagBytes, as: UTF8.self) else { return nil }
            etag = text
        }
        if flags & 4 != 0 {
            guard let text = String(validating: lastModifiedBytes, as: UTF8.self) else { return nil }
            lastModified = text
        }
        var freshUntil: Date?
        if flags & 1 != 0 {
            let seconds = Double(bitPattern: bytes.loadLittleEndian(UInt64.self, at: 2))
            guard seconds.isFinite else { return nil }
            freshUntil = Date(timeIntervalSinceReferenceDate: seconds)
        }
        var rendition: RenditionRecord?
        if flags & 8 != 0 {
            guard let record = RenditionRecord(serialized: Data(renditionBytes)) else { return nil }
            rendition = record
        }
        var placeholder: ThumbHash?
        if flags & 16 != 0 {
            guard let hash = ThumbHash(bytes: Array(placeholderBytes)) else { return nil }
            placeholder = hash
        }
        self.init(etag: etag, lastModified: lastModified, freshUntil: freshUntil, lifetimeIsHeuristic: flags & 32 != 0,
                  rendition: rendition, placeholder: placeholder)
    }
}

extension [UInt8] {
    /// Appends `value`'s bytes, least significant first.
    @inlinable package mutating func appendLittleEndian<T: FixedWidthInteger>(_ value: T) {
        Swift.withUnsafeBytes(of: value.littleEndian) { append(contentsOf: $0) }
    }
}

extension UnsafeRawBufferPointer {
    /// The little-endian integer at byte `offset` (unaligned; the caller checked the bounds).
    @inlinable package func loadLittleEndian<T: FixedWidthInteger>(_: T.Type, at offset: Int) -> T {
        T(littleEndian: loadUnaligned(fromByteOffset: offset, as: T.self))
    }
}
