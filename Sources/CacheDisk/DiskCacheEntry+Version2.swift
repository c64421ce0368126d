import PipelineCore

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

// Version 2 of the header, read so that entries stored before version 3 still serve; nothing
// writes it. It had its own layout of the info, now `CacheEntryInfo.encoded()`:
//
//   0  magic "IPDC" / "IPDI"                  4  version UInt16 = 2    6  flags UInt16
//   8  header length UInt32 (with the CRC)    12 generation UInt64
//   20 body length UInt64                     28 body CRC-32 UInt32
//   32 fresh-until: Double seconds since 1970 (bit pattern), valid when flags & 1
//   40 URL length UInt32                      44 ETag length UInt16  46 Last-Modified length UInt16
//   48 rendition record length UInt16         50 placeholder length UInt16 (0 for none)
//   52 URL, ETag, Last-Modified (UTF-8), rendition record, placeholder
//   …  header CRC-32 UInt32
//
// Flags: 1 fresh-until, 2 ETag, 4 Last-Modified, 8 rendition record, 16 placeholder, 32 the
// lifetime is heuristic.

extension DiskCacheEntry {
    enum Version2 {
        static let version: UInt16 = 2
        static let fixedLength = 52
        static let maxLength = fixedLength + maxURLLength + 3 * Int(UInt16.max) + ThumbHash.maxByteCount + 4

        /// Decodes a version-2 header whose magic, version, length and CRC were checked; `nil`
        /// when it is corrupt.
        static func decode(_ bytes: UnsafeRawBufferPointer, kind: Kind) -> DiskCacheEntry? {
            let length = bytes.count
            let flags = bytes.loadLittleEndian(UInt16.self, at: 6)
            let urlLength = Int(bytes.loadLittleEndian(UInt32.self, at: 40))
            let etagLength = Int(bytes.loadLittleEndian(UInt16.self, at: 44))
            let lastModifiedLength = Int(bytes.loadLittleEndian(UInt16.self, at: 46))
            let renditionLength = Int(bytes.loadLittleEndian(UInt16.self, at: 48))
            let placeholderLength = Int(bytes.loadLittleEndian(UInt16.self, at: 50))
            guard urlLength <= maxURLLength, placeholderLength <= ThumbHash.maxByteCount,
                  fixedLength + urlLength + etagLength + lastModifiedLength + renditionLength + placeholderLength + 4 == length
            else { return nil }
            func string(_ start: Int, _ count: Int) -> String? {
                String(validating: UnsafeRawBufferPointer(rebasing: bytes[start..<start + count]), as: UTF8.self)
            }
            guard let url = string(fixedLength, urlLength),
                  let etag = string(fixedLength + urlLength, etagLength),
                  let lastModified = string(fixedLength + urlLength + etagLength, lastModifiedLength) else { return nil }
            let fresh = Double(bitPattern: bytes.loadLittleEndian(UInt64.self, at: 32))
            guard flags & 1 == 0 || fresh.isFinite else { return nil }
            var rendition: RenditionRecord?
            if flags & 8 != 0 {
                let start = fixedLength + urlLength + etagLength + lastModifiedLength
                guard let record = RenditionRecord(serialized: Data(bytes[start..<start + renditionLength])) else { return nil }
                rendition = record
            }
            var placeholder: ThumbHash?
            if flags & 16 != 0 {
                let start = length - 4 - placeholderLength
                guard let hash = ThumbHash(bytes: Array(bytes[start..<start + placeholderLength])) else { return nil }
                placeholder = hash
            }
            let info = CacheEntryInfo(etag: flags & 2 != 0 ? etag : nil, lastModified: flags & 4 != 0 ? lastModified : nil,
                                      freshUntil: flags & 1 != 0 ? Date(timeIntervalSince1970: fresh) : nil,
                                      lifetimeIsHeuristic: flags & 32 != 0, rendition: rendition, placeholder: placeholder)
            return DiskCacheEntry(kind: kind, generation: bytes.loadLittleEndian(UInt64.self, at: 12), url: url, info: info,
                                  bodyLength: bytes.loadLittleEndian(UInt64.self, at: 20),
                                  bodyCRC: bytes.loadLittleEndian(UInt32.self, at: 28))
        }
    }
}
