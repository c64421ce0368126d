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

    @Test func aRenditionRecordRoundTripsAndTheFirstLayoutIsAMiss() throws {
        let url = URL(string: "imgpipe-rendition:///abcd")!
        let record = RenditionRecord(originTag: "10-1", originalSize: PixelSize(width: 3, height: 2), format: .png, standalone: true)
        let info = CacheEntryInfo(etag: "\"e\"", lastModified: "Sun, 06 Nov 1994 08:49:37 GMT",
                                  freshUntil: Self.now.addingTimeInterval(600), rendition: record)
        let value = RedisEntry.encode(url: url, data: Data([1, 2, 3]), info: info, mac: Self.mac, storedAt: Self.now)
        #expect(Self.decode(value, url).read == Read(data: Data([1, 2, 3]), info: info))
        // The same value under the first layout's magic (which had no record field) is refused.
        var old = value
        old.replaceSubrange(0..<4, with: Data("IPR1".utf8))
        #expect(Self.decode(old, url).isRefused)
        // An entry without a record reads as one.
        let plain = RedisEntry.encode(url: url, data: Data([1]), info: CacheEntryInfo(), mac: Self.mac, storedAt: Self.now)
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
        let value = RedisEntry.encode(url: url, data: Data([1, 2, 3]), info: info, mac: Self.mac, storedAt: Self.now)
        #expect(value.prefix(4) == Data("IPR4".utf8))
        #expect(Self.decode(value, url).read == Read(data: Data([1, 2, 3]), info: info))
        for magic in ["IPR2", "IPR3"] {
            let old = Self.legacyValue(magic: magic, url: url, data: Data([1, 2, 3]), freshUntilMilliseconds: 4_102_444_800_000)
            #expect(Self.decode(old, url).isRefused, "\(magic)")
        }
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
    @Test func aValueIsBoundToItsURLItsSecretAndEveryByte() {
        let url = URL(string: "https://cdn.example/a.png")!, other = URL(string: "https://cdn.example/b.png")!
        let value = RedisEntry.encode(url: url, data: Data(repeating: 9, count: 100), info: CacheEntryInfo(), mac: Self.mac,
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
        let value = RedisEntry.encode(url: url, data: Data([1]), info: CacheEntryInfo(freshUntil: year2100), mac: Self.mac,
                                      storedAt: stored)
        guard case .entry(let entry) = Self.decode(value, url, maxFreshness: 86_400) else { Issue.record("not read"); return }
        #expect(entry.info.freshUntil == stored.addingTimeInterval(86_400))
        let future = RedisEntry.encode(url: url, data: Data([1]), info: CacheEntryInfo(freshUntil: year2100), mac: Self.mac,
                                       storedAt: year2100)
        guard case .entry(let claimed) = Self.decode(future, url, maxFreshness: 86_400) else { Issue.record("not read"); return }
        #expect(claimed.info.freshUntil == Self.now.addingTimeInterval(86_400))
        // Shorter freshness, and none, are kept as they are.
        let short = RedisEntry.encode(url: url, data: Data([1]), info: CacheEntryInfo(freshUntil: Self.now.addingTimeInterval(60)),
                                      mac: Self.mac, storedAt: Self.now)
        #expect(Self.decode(short, url).read == Read(data: Data([1]), info: CacheEntryInfo(freshUntil: Self.now.addingTimeInterval(60))))
        let none = RedisEntry.encode(url: url, data: Data([1]), info: CacheEntryInfo(), mac: Self.mac, storedAt: Self.now)
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
