import PipelineCore

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

// The entry file format. One entry is one file, `<xx>/<64 hex>`, replaced only by an atomic
// rename: a header (below), then the body bytes exactly as loaded. The index (`DiskIndex`)
// holds the entry's current info; the header's is the info at store time, which the index is
// rebuilt from when it is lost.
//
// The flat layout of earlier releases also had `<64 hex>.info` sidecars, written after a 304:
// the same header layout with magic "IPDI" and no body, applying only while it names the
// entry's generation, body length, body CRC and URL. Nothing writes them now; the migration
// into the index (`DiskCache+Maintenance.swift`) reads them once.
//
// Header (little-endian), version 3: 40 fixed bytes, then the variable parts, then a CRC-32 of
// everything before:
//
//   0  magic "IPDC" (entry) / "IPDI" (info)   4  version UInt16 = 3    6  reserved UInt16 = 0
//   8  header length UInt32 (with the CRC)    12 generation UInt64 (random per store)
//   20 body length UInt64                     28 body CRC-32 UInt32
//   32 URL length UInt32                      36 info length UInt32
//   40 URL (UTF-8), the info (`CacheEntryInfo.encoded()`, the wire format the Redis cache
//      writes too, `CacheEntryInfoEncoding.swift` in PipelineCore)
//   …  header CRC-32 UInt32
//
// Every length is checked against fixed limits and the file size before anything is allocated,
// so a hostile file costs at most one small read. Version 2 (the same fields, with the info's
// own layout written here: `DiskCacheEntry+Version2.swift`) is still read, and replaced by
// version 3 when the entry is next stored.
// Version 1 (no rendition record; renditions kept their record as text in the ETag and
// Last-Modified fields) reads as a miss, and the entry is removed like any damaged one.

/// The header of an entry file (or of a flat-layout sidecar): the entry format above as a value,
/// encoded, decoded and read from an open file here.
struct DiskCacheEntry: Equatable {
    /// Which of the two files a header starts.
    enum Kind: Equatable {
        case entry, info

        var magic: [UInt8] { self == .entry ? Array("IPDC".utf8) : Array("IPDI".utf8) }
    }

    static let version: UInt16 = 3
    static let fixedLength = 40
    /// The most bytes a URL may take; longer URLs are not cached.
    static let maxURLLength = 32 * 1024
    /// The largest header that can exist (of either version read); bigger declared lengths are corrupt.
    static let maxLength = max(fixedLength + maxURLLength + CacheEntryInfo.maxEncodedLength + 4, Version2.maxLength)

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

    /// The header's bytes, or `nil` when the URL or the info is too long for the format.
    func encoded() -> [UInt8]? {
        let urlBytes = Array(url.utf8)
        guard urlBytes.count <= Self.maxURLLength, let info = info.encoded() else { return nil }
        let length = Self.fixedLength + urlBytes.count + info.count + 4
        var out = [UInt8]()
        out.reserveCapacity(length)
        out += kind.magic
        out.appendLittleEndian(Self.version)
        out.appendLittleEndian(UInt16(0))
        out.appendLittleEndian(UInt32(length))
        out.appendLittleEndian(generation)
        out.appendLittleEndian(bodyLength)
        out.appendLittleEndian(bodyCRC)
        out.appendLittleEndian(UInt32(urlBytes.count))
        out.appendLittleEndian(UInt32(info.count))
        out += urlBytes
        out += info
        out.appendLittleEndian(out.withUnsafeBytes { CRC32.checksum($0) })
        return out
    }

    /// The header length that `prefix` (the first bytes of a file of `fileSize` bytes) declares,
    /// and the header's version, or `nil` when the magic, version or length is wrong.
    static func declaredLength(_ prefix: UnsafeRawBufferPointer, kind: Kind, fileSize: Int) -> (length: Int, version: UInt16)? {
        guard prefix.count >= 12, prefix.starts(with: kind.magic) else { return nil }
        let version = prefix.loadLittleEndian(UInt16.self, at: 4)
        let fixed = version == Self.version ? fixedLength : version == Version2.version ? Version2.fixedLength : nil
        let length = Int(prefix.loadLittleEndian(UInt32.self, at: 8))
        guard let fixed, length >= fixed + 4, length <= maxLength, length <= fileSize else { return nil }
        return (length, version)
    }

    /// Decodes a whole header (exactly its declared length), or `nil` when it is corrupt.
    /// With `skippingInfoOf`, a version-3 header of that generation is returned with an empty
    /// info, not decoded (the caller has the entry's current info from the index; its bytes are
    /// still covered by the header's CRC).
    static func decode(_ bytes: UnsafeRawBufferPointer, kind: Kind, skippingInfoOf generation: UInt64? = nil) -> DiskCacheEntry? {
        guard let (length, version) = declaredLength(bytes, kind: kind, fileSize: bytes.count), length == bytes.count else {
            return nil
        }
        let storedCRC = bytes.loadLittleEndian(UInt32.self, at: length - 4)
        guard CRC32.checksum(UnsafeRawBufferPointer(rebasing: bytes[0..<length - 4])) == storedCRC else { return nil }
        guard version == Self.version else { return Version2.decode(bytes, kind: kind) }
        let urlLength = Int(bytes.loadLittleEndian(UInt32.self, at: 32))
        let infoLength = Int(bytes.loadLittleEndian(UInt32.self, at: 36))
        guard bytes.loadLittleEndian(UInt16.self, at: 6) == 0, urlLength <= maxURLLength,
              infoLength <= CacheEntryInfo.maxEncodedLength, fixedLength + urlLength + infoLength + 4 == length,
              let url = String(validating: UnsafeRawBufferPointer(rebasing: bytes[fixedLength..<fixedLength + urlLength]),
                               as: UTF8.self)
        else { return nil }
        let headerGeneration = bytes.loadLittleEndian(UInt64.self, at: 12)
        let info: CacheEntryInfo
        if let generation, generation == headerGeneration {
            info = CacheEntryInfo()
        } else {
            guard let decoded = CacheEntryInfo(encoded: UnsafeRawBufferPointer(
                rebasing: bytes[(fixedLength + urlLength)..<(fixedLength + urlLength + infoLength)])) else { return nil }
            info = decoded
        }
        return DiskCacheEntry(kind: kind, generation: headerGeneration, url: url, info: info,
                              bodyLength: bytes.loadLittleEndian(UInt64.self, at: 20),
                              bodyCRC: bytes.loadLittleEndian(UInt32.self, at: 28))
    }

    /// The header at the start of `bytes`, the first bytes of a file of `fileSize` bytes (the
    /// whole file, when the caller read it in one go), and its length; `nil` when it is damaged
    /// or longer than `bytes`.
    static func read(from bytes: UnsafeRawBufferPointer, kind: Kind, fileSize: Int,
                     skippingInfoOf generation: UInt64? = nil) -> (value: DiskCacheEntry, length: Int)? {
        guard let length = declaredLength(bytes, kind: kind, fileSize: fileSize)?.length, length <= bytes.count,
              let header = decode(UnsafeRawBufferPointer(rebasing: bytes[0..<length]), kind: kind, skippingInfoOf: generation)
        else { return nil }
        return (header, length)
    }

    /// The header at the start of `file`, and its length; `nil` when it is damaged.
    static func read(from file: DiskFiles.Descriptor, kind: Kind, fileSize: Int) -> (value: DiskCacheEntry, length: Int)? {
        // One small read covers nearly every header; a long URL takes a second one.
        guard var bytes = file.read(count: min(fileSize, 1024), at: 0),
              let length = bytes.withUnsafeBytes({ declaredLength($0, kind: kind, fileSize: fileSize)?.length })
        else { return nil }
        if length > bytes.count {
            guard let rest = file.read(count: length - bytes.count, at: bytes.count) else { return nil }
            bytes += rest
        }
        let header = bytes.withUnsafeBytes { decode(UnsafeRawBufferPointer(rebasing: $0[0..<length]), kind: kind) }
        return header.map { ($0, length) }
    }
}
