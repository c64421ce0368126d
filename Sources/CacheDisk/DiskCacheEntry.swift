import Foundation
import PipelineCore

// The on-disk format. One entry is up to two files, both replaced only by an atomic rename:
//
//   <64 hex>        the entry: a header (below), then the body bytes exactly as loaded.
//   <64 hex>.info   an optional sidecar written by `updateInfo` after a 304: the same header
//                   layout with magic "IPDI" and no body. It applies only while it names the
//                   entry's generation, body length, body CRC and URL; otherwise it is ignored.
//
// Header (little-endian), 52 fixed bytes, then the variable parts, then a CRC-32 of everything
// before:
//
//   0  magic "IPDC" (entry) / "IPDI" (info)   4  version UInt16 = 2    6  flags UInt16
//   8  header length UInt32 (with the CRC)    12 generation UInt64 (random per store)
//   20 body length UInt64                     28 body CRC-32 UInt32
//   32 fresh-until: Double seconds since 1970 (bit pattern), valid when flags & 1
//   40 URL length UInt32                      44 ETag length UInt16  46 Last-Modified length UInt16
//   48 rendition record length UInt16         50 placeholder length UInt16 (0 for none)
//   52 URL, ETag, Last-Modified (UTF-8), rendition record (`RenditionRecord.serialized`),
//      placeholder (`ThumbHash.bytes`)
//   …  header CRC-32 UInt32
//
// Flags: 1 fresh-until present, 2 ETag present, 4 Last-Modified present, 8 rendition record
// present, 16 placeholder present (its length was a reserved 0 before, so older entries read
// as entries without one). Every length is checked against fixed limits and the file size before anything is
// allocated, so a hostile file costs at most one small read. Version 1 (no rendition record;
// renditions kept their record as text in the ETag and Last-Modified fields) reads as a miss,
// and the entry is removed like any damaged one.

/// The header of an entry file or of its info sidecar: the entry format above as a value,
/// encoded, decoded and read from an open file here.
struct DiskCacheEntry: Equatable {
    /// Which of the two files a header starts.
    enum Kind: Equatable {
        case entry, info

        var magic: [UInt8] { self == .entry ? Array("IPDC".utf8) : Array("IPDI".utf8) }
    }

    static let version: UInt16 = 2
    static let fixedLength = 52
    /// The most bytes a URL may take; longer URLs are not cached.
    static let maxURLLength = 32 * 1024
    /// The largest header that can exist; bigger declared lengths are corrupt.
    static let maxLength = fixedLength + maxURLLength + 3 * Int(UInt16.max) + 4

    var kind: Kind
    var generation: UInt64
    var url: String
    var info: CacheEntryInfo
    var bodyLength: UInt64
    var bodyCRC: UInt32

    /// Whether an info sidecar with this header describes the entry `entry`.
    func applies(to entry: DiskCacheEntry) -> Bool {
        kind == .info && entry.kind == .entry && generation == entry.generation && url == entry.url
            && bodyLength == entry.bodyLength && bodyCRC == entry.bodyCRC
    }

    /// The header's bytes, or `nil` when a string is too long for the format.
    func encoded() -> [UInt8]? {
        let urlBytes = Array(url.utf8)
        let etag = info.etag.map { Array($0.utf8) } ?? []
        let lastModified = info.lastModified.map { Array($0.utf8) } ?? []
        let rendition = info.rendition.map { [UInt8]($0.serialized) } ?? []
        let placeholder = info.placeholder?.bytes ?? []
        guard urlBytes.count <= Self.maxURLLength, etag.count <= UInt16.max, lastModified.count <= UInt16.max,
              rendition.count <= UInt16.max else {
            return nil
        }
        let length = Self.fixedLength + urlBytes.count + etag.count + lastModified.count + rendition.count
            + placeholder.count + 4
        var flags: UInt16 = 0
        if info.freshUntil != nil { flags |= 1 }
        if info.etag != nil { flags |= 2 }
        if info.lastModified != nil { flags |= 4 }
        if info.rendition != nil { flags |= 8 }
        if info.placeholder != nil { flags |= 16 }
        if info.lifetimeIsHeuristic { flags |= 32 }
        var out = [UInt8]()
        out.reserveCapacity(length)
        out += kind.magic
        out.appendLittleEndian(Self.version)
        out.appendLittleEndian(flags)
        out.appendLittleEndian(UInt32(length))
        out.appendLittleEndian(generation)
        out.appendLittleEndian(bodyLength)
        out.appendLittleEndian(bodyCRC)
        out.appendLittleEndian((info.freshUntil?.timeIntervalSince1970 ?? 0).bitPattern)
        out.appendLittleEndian(UInt32(urlBytes.count))
        out.appendLittleEndian(UInt16(etag.count))
        out.appendLittleEndian(UInt16(lastModified.count))
        out.appendLittleEndian(UInt16(rendition.count))
        out.appendLittleEndian(UInt16(placeholder.count))
        out += urlBytes
        out += etag
        out += lastModified
        out += rendition
        out += placeholder
        out.appendLittleEndian(out.withUnsafeBytes { CRC32.checksum($0) })
        return out
    }

    /// The header length that `prefix` (the first bytes of a file of `fileSize` bytes) declares,
    /// or `nil` when the magic, version or length is wrong.
    static func declaredLength(_ prefix: UnsafeRawBufferPointer, kind: Kind, fileSize: Int) -> Int? {
        guard prefix.count >= 12, prefix.starts(with: kind.magic),
              prefix.loadLittleEndian(UInt16.self, at: 4) == version else { return nil }
        let length = Int(prefix.loadLittleEndian(UInt32.self, at: 8))
        guard length >= fixedLength + 4, length <= maxLength, length <= fileSize else { return nil }
        return length
    }

    /// Decodes a whole header (exactly its declared length), or `nil` when it is corrupt.
    static func decode(_ bytes: UnsafeRawBufferPointer, kind: Kind) -> DiskCacheEntry? {
        guard let length = declaredLength(bytes, kind: kind, fileSize: bytes.count), length == bytes.count else {
            return nil
        }
        let storedCRC = bytes.loadLittleEndian(UInt32.self, at: length - 4)
        guard CRC32.checksum(UnsafeRawBufferPointer(rebasing: bytes[0..<length - 4])) == storedCRC else { return nil }
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
        let info = CacheEntryInfo(etag: flags & 2 != 0 ? etag : nil,
                                  lastModified: flags & 4 != 0 ? lastModified : nil,
                                  freshUntil: flags & 1 != 0 ? Date(timeIntervalSince1970: fresh) : nil,
                                  lifetimeIsHeuristic: flags & 32 != 0, rendition: rendition, placeholder: placeholder)
        return DiskCacheEntry(kind: kind, generation: bytes.loadLittleEndian(UInt64.self, at: 12), url: url,
                               info: info, bodyLength: bytes.loadLittleEndian(UInt64.self, at: 20),
                               bodyCRC: bytes.loadLittleEndian(UInt32.self, at: 28))
    }

    /// The header at the start of `file`, and its length; `nil` when it is damaged.
    static func read(from file: DiskFiles.Descriptor, kind: Kind, fileSize: Int) -> (value: DiskCacheEntry, length: Int)? {
        // One small read covers nearly every header; a long URL takes a second one.
        guard var bytes = file.read(count: min(fileSize, 1024), at: 0),
              let length = bytes.withUnsafeBytes({ declaredLength($0, kind: kind, fileSize: fileSize) })
        else { return nil }
        if length > bytes.count {
            guard let rest = file.read(count: length - bytes.count, at: bytes.count) else { return nil }
            bytes += rest
        }
        let header = bytes.withUnsafeBytes { decode(UnsafeRawBufferPointer(rebasing: $0[0..<length]), kind: kind) }
        return header.map { ($0, length) }
    }
}

extension [UInt8] {
    fileprivate mutating func appendLittleEndian<T: FixedWidthInteger>(_ value: T) {
        Swift.withUnsafeBytes(of: value.littleEndian) { append(contentsOf: $0) }
    }
}

extension UnsafeRawBufferPointer {
    fileprivate func loadLittleEndian<T: FixedWidthInteger>(_: T.Type, at offset: Int) -> T {
        T(littleEndian: loadUnaligned(fromByteOffset: offset, as: T.self))
    }
}
