import PipelineCore

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// The value stored under an entry key: an authenticated record of the URL, the entry's info
/// and its compressed bytes.
///
/// Layout (integers big-endian): `"IPR5"`, the time it was stored in Unix milliseconds (i64),
/// URL (u32 length + UTF-8), the info (u32 length + `CacheEntryInfo.encoded()`, the wire format
/// the disk cache writes too), bytes (u64 length + bytes), then a 32-byte HMAC-SHA-256
/// (``RedisCache/Configuration/Authentication``) of the URL asked for (u32 length + UTF-8)
/// followed by everything before the code. The code is checked before any field is read: a
/// value whose code does not match (damaged, planted by a writer without the secret, written
/// for another URL, or MACed under another secret) is refused, and so is every value of a
/// layout before the MAC (`"IPR1"` to `"IPR3"`, which carried a recomputable FNV-1a checksum).
/// `"IPR4"` values (the same MAC, the info in a layout of their own:
/// ``RedisEntry/Version4``) still read. A value that authenticates but does not parse is
/// corrupt. Either way it is a miss.
enum RedisEntry {
    static let magic = Data("IPR5".utf8)
    /// Bytes of the code at the end of a value.
    static let codeLength = 32
    /// Room a value has beyond its picture and URL (the fixed fields, validators, rendition
    /// record, placeholder): what a read asks for past ``RedisCache/Configuration/maxEntryBytes``.
    static let metadataAllowance = 64 << 10

    /// What a value read back turned out to be.
    enum Decoded {
        case entry(CachedData)
        /// The code did not verify, or an older layout: not trusted, not parsed.
        case refused
        /// Authenticated, but not a value this layout can read.
        case corrupt
    }

    /// The value for `data` and `info` under `url`, stored at `storedAt`, authenticated with `mac`
    /// (a keyed HMAC, copied for this value); `nil` when the info is too long to encode.
    static func encode(url: URL, data: Data, info: CacheEntryInfo, mac: HMACSHA256, storedAt: Date) -> Data? {
        guard let info = info.encoded() else { return nil }
        var out = Data()
        out.reserveCapacity(data.count + info.count + 128)
        out.append(magic)
        appendInteger(UInt64(bitPattern: milliseconds(storedAt)), to: &out)
        appendBytes(Data(url.absoluteString.utf8), to: &out)
        appendBytes(Data(info), to: &out)
        appendInteger(UInt64(data.count), to: &out)
        out.append(data)
        out.append(contentsOf: code(of: [UInt8](out)[...], for: url, mac: mac))
        return out
    }

    /// Reads a value back for `url`: authenticated with `mac` first, then parsed, its freshness
    /// cut to at most `maxFreshness` seconds after it was stored (or after `now`, if the value
    /// says it was stored later than that).
    static func decode(_ value: Data, expecting url: URL, mac: HMACSHA256, now: Date, maxFreshness: TimeInterval) -> Decoded {
        let bytes = [UInt8](value)
        let isVersion4 = bytes.starts(with: Version4.magic)
        guard bytes.count >= magic.count + codeLength, bytes.starts(with: magic) || isVersion4 else { return .refused }
        let body = bytes[..<(bytes.count - codeLength)]
        guard HMACSHA256.matches(code(of: body, for: url, mac: mac), bytes[body.endIndex...]) else { return .refused }
        var reader = Reader(bytes: Array(body), position: magic.count)
        guard let storedBits = reader.integer(UInt64.self),
              let storedURL = reader.string(), storedURL == url.absoluteString,
              var info = isVersion4 ? Version4.info(&reader) : reader.info(),
              let length = reader.integer(UInt64.self), length == UInt64(body.count - reader.position)
        else { return .corrupt }
        let storedAt = min(date(Int64(bitPattern: storedBits)), now)
        info.freshUntil = info.freshUntil.map { min($0, storedAt.addingTimeInterval(max(0, maxFreshness))) }
        let data = Data(body[(body.startIndex + reader.position)...])
        return .entry(CachedData(data: data, info: info))
    }

    /// The code of a value's `body` read for `url`: the URL is MACed apart from the body's own
    /// copy of it, so a value is bound to the URL it is read for, whatever the parser does.
    private static func code(of body: ArraySlice<UInt8>, for url: URL, mac: HMACSHA256) -> [UInt8] {
        var mac = mac
        var prefix = Data()
        appendBytes(Data(url.absoluteString.utf8), to: &prefix)
        mac.update(prefix)
        mac.update(body)
        return mac.finalize()
    }

    /// Unix milliseconds, clamped so that no date traps or reaches the `Int64.min` sentinel.
    private static func milliseconds(_ date: Date) -> Int64 {
        let value = (date.timeIntervalSince1970 * 1000).rounded()
        return value.isFinite ? Int64(max(-9.2e18, min(9.2e18, value))) : 0
    }

    static func date(_ milliseconds: Int64) -> Date { Date(timeIntervalSince1970: Double(milliseconds) / 1000) }

    /// FNV-1a, 64 bits: the keys' cluster hash tag (a spread, not a defence).
    static func tagHash<C: Collection>(_ bytes: C) -> UInt64 where C.Element == UInt8 {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in bytes {
            hash ^= UInt64(byte)
            hash = hash &* 0x0000_0100_0000_01b3
        }
        return hash
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

    struct Reader {
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

        /// The info field: a length-prefixed ``CacheEntryInfo/encoded()``; `nil` when cut short or
        /// not info.
        mutating func info() -> CacheEntryInfo? {
            guard let length = integer(UInt32.self), length != UInt32.max, let bytes = read(Int(length)) else { return nil }
            return bytes.withUnsafeBytes { CacheEntryInfo(encoded: $0) }
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
