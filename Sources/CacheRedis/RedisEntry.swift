import Foundation
import PipelineCore

/// The value stored under an entry key: a self-checking record of the URL, validators,
/// freshness and compressed bytes.
///
/// Layout (integers big-endian): `"IPR2"`, URL (u32 length + UTF-8), ETag and Last-Modified
/// (u32 length + UTF-8, `0xFFFFFFFF` for none), fresh-until in Unix milliseconds (i64,
/// `Int64.min` for none), a rendition's record (u32 length + `RenditionRecord.serialized`,
/// `0xFFFFFFFF` for none), the placeholder (u32 length + `ThumbHash.bytes`, `0xFFFFFFFF` for
/// none), bytes (u64 length + bytes), then an FNV-1a 64-bit checksum of everything before it.
/// A value that fails to parse, whose checksum does not match, or whose URL is not the one
/// asked for is a miss; so is a value of the first layout (`"IPR1"`, which kept no record). A
/// value of the second (`"IPR2"`, without the placeholder field) reads as one without a
/// placeholder, so a fleet can roll the new layout out while old writers still run.
enum RedisEntry {
    static let magic = Data("IPR3".utf8)
    /// The layout before the placeholder field.
    static let magicWithoutPlaceholder = Data("IPR2".utf8)
    /// Room a value has beyond its picture and URL (the fixed fields, validators, rendition
    /// record, placeholder): what a read asks for past ``RedisCache/Configuration/maxEntryBytes``.
    static let metadataAllowance = 64 << 10

    static func encode(url: URL, data: Data, info: CacheEntryInfo) -> Data {
        var out = Data()
        out.reserveCapacity(data.count + 128)
        out.append(magic)
        appendString(url.absoluteString, to: &out)
        appendString(info.etag, to: &out)
        appendString(info.lastModified, to: &out)
        let fresh = info.freshUntil.map { Int64(($0.timeIntervalSince1970 * 1000).rounded()) } ?? Int64.min
        appendInteger(UInt64(bitPattern: fresh), to: &out)
        appendBytes(info.rendition?.serialized, to: &out)
        appendBytes(info.placeholder.map { Data($0.bytes) }, to: &out)
        appendInteger(UInt64(data.count), to: &out)
        out.append(data)
        appendInteger(checksum(out), to: &out)
        return out
    }

    static func decode(_ value: Data, expecting url: URL) -> CachedData? {
        let bytes = [UInt8](value)
        let hasPlaceholder = bytes.starts(with: magic)
        guard bytes.count >= magic.count + 8, hasPlaceholder || bytes.starts(with: magicWithoutPlaceholder) else { return nil }
        let body = bytes[..<(bytes.count - 8)]
        var reader = Reader(bytes: bytes, position: bytes.count - 8)
        guard let stored = reader.integer(UInt64.self), stored == checksum(body) else { return nil }
        reader = Reader(bytes: Array(body), position: magic.count)
        guard let storedURL = reader.string(), storedURL == url.absoluteString,
              let etag = reader.optionalString(), let lastModified = reader.optionalString(),
              let freshBits = reader.integer(UInt64.self), let record = reader.optionalBytes(),
              let placeholderBytes = hasPlaceholder ? reader.optionalBytes() : .some(nil),
              let length = reader.integer(UInt64.self), length == UInt64(body.count - reader.position)
        else { return nil }
        var rendition: RenditionRecord?
        if let record {
            guard let parsed = RenditionRecord(serialized: record) else { return nil }
            rendition = parsed
        }
        var placeholder: ThumbHash?
        if let placeholderBytes {
            guard let parsed = ThumbHash(bytes: [UInt8](placeholderBytes)) else { return nil }
            placeholder = parsed
        }
        let fresh = Int64(bitPattern: freshBits)
        let freshUntil = fresh == Int64.min ? nil : Date(timeIntervalSince1970: Double(fresh) / 1000)
        let data = Data(body[(body.startIndex + reader.position)...])
        return CachedData(data: data, info: CacheEntryInfo(etag: etag, lastModified: lastModified, freshUntil: freshUntil,
                                                                  rendition: rendition, placeholder: placeholder))
    }

    /// FNV-1a, 64 bits: catches truncation and bit rot; not a defence against a writer with
    /// access to the Redis server.
    static func checksum<C: Collection>(_ bytes: C) -> UInt64 where C.Element == UInt8 {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in bytes {
            hash ^= UInt64(byte)
            hash = hash &* 0x0000_0100_0000_01b3
        }
        return hash
    }

    private static func appendString(_ string: String?, to out: inout Data) {
        appendBytes(string.map { Data($0.utf8) }, to: &out)
    }

    private static func appendBytes(_ bytes: Data?, to out: inout Data) {
        guard let bytes else {
            appendInteger(UInt32.max, to: &out)
            return
        }
        appendInteger(UInt32(clamping: bytes.count), to: &out)
        out.append(bytes.prefix(Int(UInt32.max - 1)))
    }

    private static func appendInteger<T: FixedWidthInteger>(_ value: T, to out: inout Data) {
        withUnsafeBytes(of: value.bigEndian) { out.append(contentsOf: $0) }
    }

    private struct Reader {
        let bytes: [UInt8]
        var position: Int

        mutating func integer<T: FixedWidthInteger>(_: T.Type) -> T? {
            let size = MemoryLayout<T>.size
            guard position >= 0, bytes.count - position >= size else { return nil }
            var value: T = 0
            for byte in bytes[position..<(position + size)] { value = value << 8 | T(byte) }
            position += size
            return value
        }

        /// A length-prefixed field (`0xFFFFFFFF` for none): `nil` when the value is cut short.
        mutating func optionalBytes() -> Data?? {
            guard let length = integer(UInt32.self) else { return nil }
            if length == UInt32.max { return .some(nil) }
            return read(Int(length)).map { .some($0) }
        }

        mutating func optionalString() -> String?? {
            optionalBytes().map { $0.map { String(decoding: $0, as: UTF8.self) } }
        }

        mutating func string() -> String? {
            guard let length = integer(UInt32.self), length != UInt32.max else { return nil }
            return read(Int(length)).map { String(decoding: $0, as: UTF8.self) }
        }

        private mutating func read(_ length: Int) -> Data? {
            guard bytes.count - position >= length else { return nil }
            defer { position += length }
            return Data(bytes[position..<(position + length)])
        }
    }
}
