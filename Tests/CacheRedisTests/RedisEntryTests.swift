@testable import CacheRedis
import Foundation
import PipelineCore
import Testing

@Suite("Redis entry values")
struct RedisEntryTests {
    static let mac = HMACSHA256(key: testSecret)
    static let now = Date(timeIntervalSince1970: 1_700_000_000)

    static func decode(_ value: Data, _ url: URL, mac: HMACSHA256 = mac, maxFreshness: TimeInterval = 7 * 86_400) -> RedisEntry.Decoded {
        RedisEntry.decode(value, expecting: url, mac: mac, now: now, maxFreshness: maxFreshness)
    }

    static func encode(url: URL, data: Data, info: CacheEntryInfo, mac: HMACSHA256, storedAt: Date) throws -> Data {
        try #require(RedisEntry.encode(url: url, data: data, info: info, mac: mac, storedAt: storedAt))
    }

    @Test func aRenditionRecordRoundTripsAndTheFirstLayoutIsAMiss() throws {
        let url = URL(string: "imgpipe-rendition:///abcd")!
        let record = RenditionRecord(originTag: "10-1", originalSize: PixelSize(width: 3, height: 2), format: .png, standalone: true)
        let info = CacheEntryInfo(etag: "\"e\"", lastModified: "Sun, 06 Nov 1994 08:49:37 GMT",
                                  freshUntil: Self.now.addingTimeInterval(600), rendition: record)
        let value = try Self.encode(url: url, data: Data([1, 2, 3]), info: info, mac: Self.mac, storedAt: Self.now)
        #expect(Self.decode(value, url).read == Read(data: Data([1, 2, 3]), info: info))
        // The same value under the first layout's magic (which had no record field) is refused.
        var old = value
        old.replaceSubrange(0..<4, with: Data("IPR1".utf8))
        #expect(Self.decode(old, url).isRefused)
        // An entry without a record reads as one.
        let plain = try Self.encode(url: url, data: Data([1]), info: CacheEntryInfo(), mac: Self.mac, storedAt: Self.now)
        guard case .entry(let entry) = Self.decode(plain, url) else { Issue.record("not read"); return }
        #expect(entry.info.rendition == nil)
    }

    /// The placeholder round-trips; values of the older layouts ("IPR2" without a placeholder,
    /// "IPR3" with one, both closed by a recomputable FNV-1a checksum: what `plant.py` builds)
    /// are refused, well-formed as they are. Before the MAC, the same "IPR2" value read as an
    /// entry (this test's earlier form asserted so).
    @Test func aPlaceholderRoundTripsAndOlderLayoutsAreRefused() throws {
        let url = URL(string: "https://cdn.example/p.jpg")!
        let hash = try #require(ThumbHash(base64: "1QcSHQRnh493V4dIh4eXh1h4kJUI"))
        let info = CacheEntryInfo(etag: "\"e\"", freshUntil: Self.now.addingTimeInterval(60), placeholder: hash)
        let value = try Self.encode(url: url, data: Data([1, 2, 3]), info: info, mac: Self.mac, storedAt: Self.now)
        #expect(value.prefix(4) == Data("IPR5".utf8))
        #expect(Self.decode(value, url).read == Read(data: Data([1, 2, 3]), info: info))
        for magic in ["IPR2", "IPR3"] {
            let old = Self.legacyValue(magic: magic, url: url, data: Data([1, 2, 3]), freshUntilMilliseconds: 4_102_444_800_000)
            #expect(Self.decode(old, url).isRefused, "\(magic)")
        }
    }

    /// The info goes through the one wire format the disk cache writes too: the heuristic-lifetime
    /// flag (which the "IPR4" layout dropped) and a fresh-until finer than a millisecond come back
    /// as stored; info too long for the format is not stored.
    @Test func theInfoRoundTripsWholeThroughTheSharedWireFormat() throws {
        let url = URL(string: "https://cdn.example/h.jpg")!
        let record = RenditionRecord(originTag: "10-1", originalSize: PixelSize(width: 3, height: 2), format: .webp, standalone: false)
        let hash = try #require(ThumbHash(base64: "1QcSHQRnh493V4dIh4eXh1h4kJUI"))
        let info = CacheEntryInfo(etag: "\"h\"", lastModified: "Sun, 06 Nov 1994 08:49:37 GMT",
                                  freshUntil: Self.now.addingTimeInterval(600.000_25), lifetimeIsHeuristic: true,
                                  rendition: record, placeholder: hash)
        let value = try Self.encode(url: url, data: Data([4, 5]), info: info, mac: Self.mac, storedAt: Self.now)
        #expect(Self.decode(value, url).read == Read(data: Data([4, 5]), info: info))
        let tooLong = CacheEntryInfo(etag: String(repeating: "e", count: 70_000))
        #expect(RedisEntry.encode(url: url, data: Data([1]), info: tooLong, mac: Self.mac, storedAt: Self.now) == nil)
    }

    /// A value stored in the "IPR4" layout (MACed, with the info in that layout's own fields)
    /// before "IPR5" still reads, freshness cut as before; damaged, it is refused.
    @Test func aValueOfTheIPR4LayoutStillReads() throws {
        let url = URL(string: "imgpipe-rendition:///ef01")!
        let record = RenditionRecord(originTag: "7-3", originalSize: PixelSize(width: 9, height: 4), format: .png, standalone: true)
        let hash = try #require(ThumbHash(base64: "1QcSHQRnh493V4dIh4eXh1h4kJUI"))
        let value = Self.version4Value(url: url, data: Data([1, 2, 3]), etag: "\"e\"", lastModified: nil,
                                       freshUntilMilliseconds: 1_700_000_600_000, record: record.serialized,
                                       placeholder: Data(hash.bytes))
        let info = CacheEntryInfo(etag: "\"e\"", freshUntil: Date(timeIntervalSince1970: 1_700_000_600), rendition: record,
                                  placeholder: hash)
        #expect(Self.decode(value, url).read == Read(data: Data([1, 2, 3]), info: info))
        let bare = Self.version4Value(url: url, data: Data(), etag: nil, lastModified: "x", freshUntilMilliseconds: Int64.min,
                                      record: nil, placeholder: nil)
        #expect(Self.decode(bare, url).read == Read(data: Data(), info: CacheEntryInfo(lastModified: "x")))
        var flipped = value
        flipped[10] ^= 1
        #expect(Self.decode(flipped, url).isRefused)
    }

    /// A value in the "IPR4" layout, MACed with ``mac`` as that layout was, built here from its
    /// description (``RedisEntry/Version4``).
    static func version4Value(url: URL, data: Data, etag: String?, lastModified: String?, freshUntilMilliseconds: Int64,
                              record: Data?, placeholder: Data?) -> Data {
        func field(_ bytes: Data?, into value: inout Data) {
            guard let bytes else { value.append(contentsOf: [0xFF, 0xFF, 0xFF, 0xFF]); return }
            withUnsafeBytes(of: UInt32(bytes.count).bigEndian) { value.append(contentsOf: $0) }
            value.append(bytes)
        }
        var value = Data("IPR4".utf8)
        withUnsafeBytes(of: Int64(1_700_000_000_000).bigEndian) { value.append(contentsOf: $0) }
        field(Data(url.absoluteString.utf8), into: &value)
        field(etag.map { Data($0.utf8) }, into: &value)
        field(lastModified.map { Data($0.utf8) }, into: &value)
        withUnsafeBytes(of: freshUntilMilliseconds.bigEndian) { value.append(contentsOf: $0) }
        field(record, into: &value)
        field(placeholder, into: &value)
        withUnsafeBytes(of: UInt64(data.count).bigEndian) { value.append(contentsOf: $0) }
        value.append(data)
        var mac = Self.mac, prefix = Data()
        field(Data(url.absoluteString.utf8), into: &prefix)
        mac.update(prefix)
        mac.update(value)
        return value + Data(mac.finalize())
    }

    /// A value as the checksummed layouts built it (IPR3 adds an empty placeholder field), with
    /// a valid FNV-1a checksum: what anyone with write access to Redis could build.
    static func legacyValue(magic: String, url: URL, data: Data, freshUntilMilliseconds: Int64) -> Data {
        var value = Data(magic.utf8)
        func string(_ text: String?) {
            guard let text else { value.append(contentsOf: [0xFF, 0xFF, 0xFF, 0xFF]); return }
            withUnsafeBytes(of: UInt32(text.utf8.count).bigEndian) { value.append(contentsOf: $0) }
            value.append(Data(text.utf8))
        }
        string(url.absoluteString); string("\"e\""); string(nil)
        withUnsafeBytes(of: freshUntilMilliseconds.bigEndian) { value.append(contentsOf: $0) }
        string(nil)  // no rendition record
        if magic == "IPR3" { string(nil) }  // no placeholder
        withUnsafeBytes(of: UInt64(data.count).bigEndian) { value.append(contentsOf: $0) }
        value.append(data)
        withUnsafeBytes(of: RedisEntry.tagHash(value).bigEndian) { value.append(contentsOf: $0) }
        return value
    }

    /// The code covers every byte and the URL asked for; it is checked before anything is parsed.
    @Test func aValueIsBoundToItsURLItsSecretAndEveryByte() throws {
        let url = URL(string: "https://cdn.example/a.png")!, other = URL(string: "https://cdn.example/b.png")!
        let value = try Self.encode(url: url, data: Data(repeating: 9, count: 100), info: CacheEntryInfo(), mac: Self.mac,
                                      storedAt: Self.now)
        #expect(Self.decode(value, other).isRefused)
        #expect(Self.decode(value, url, mac: HMACSHA256(key: [UInt8]("another fleet's secret".utf8))).isRefused)
        #expect(Self.decode(value, url, mac: HMACSHA256(key: [])).isRefused)
        for index in [0, 5, 40, value.count - 1] {
            var flipped = value
            flipped[index] ^= 0x01
            #expect(Self.decode(flipped, url).isRefused, "byte \(index)")
        }
        #expect(Self.decode(value.prefix(value.count - 1), url).isRefused)
        #expect(Self.decode(Data(), url).isRefused)
    }

    /// Freshness is cut to the ceiling past the time the value was stored, and past now when
    /// the value says it was stored later.
    @Test func freshnessIsCutToTheCeilingPastTheTimeItWasStored() throws {
        let url = URL(string: "https://cdn.example/a.png")!
        let year2100 = Date(timeIntervalSince1970: 4_102_444_800)
        let stored = Self.now.addingTimeInterval(-3600)
        let value = try Self.encode(url: url, data: Data([1]), info: CacheEntryInfo(freshUntil: year2100), mac: Self.mac,
                                      storedAt: stored)
        guard case .entry(let entry) = Self.decode(value, url, maxFreshness: 86_400) else { Issue.record("not read"); return }
        #expect(entry.info.freshUntil == stored.addingTimeInterval(86_400))
        let future = try Self.encode(url: url, data: Data([1]), info: CacheEntryInfo(freshUntil: year2100), mac: Self.mac,
                                       storedAt: year2100)
        guard case .entry(let claimed) = Self.decode(future, url, maxFreshness: 86_400) else { Issue.record("not read"); return }
        #expect(claimed.info.freshUntil == Self.now.addingTimeInterval(86_400))
        // Shorter freshness, and none, are kept as they are.
        let short = try Self.encode(url: url, data: Data([1]), info: CacheEntryInfo(freshUntil: Self.now.addingTimeInterval(60)),
                                      mac: Self.mac, storedAt: Self.now)
        #expect(Self.decode(short, url).read == Read(data: Data([1]), info: CacheEntryInfo(freshUntil: Self.now.addingTimeInterval(60))))
        let none = try Self.encode(url: url, data: Data([1]), info: CacheEntryInfo(), mac: Self.mac, storedAt: Self.now)
        #expect(Self.decode(none, url).read == Read(data: Data([1]), info: CacheEntryInfo()))
    }
}

/// What a test compares of a decoded entry.
struct Read: Equatable {
    let data: Data
    let info: CacheEntryInfo
}

extension RedisEntry.Decoded {
    var read: Read? {
        guard case .entry(let entry) = self else { return nil }
        return Read(data: entry.data, info: entry.info)
    }

    var isRefused: Bool {
        guard case .refused = self else { return false }
        return true
    }
}
