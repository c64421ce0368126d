@testable import CacheRedis
import Foundation
import PipelineCore
import Testing

@Suite("Redis entry values")
struct RedisEntryTests {
    @Test func aRenditionRecordRoundTripsAndTheFirstLayoutIsAMiss() throws {
        let url = URL(string: "imgpipe-rendition:///abcd")!
        let record = RenditionRecord(originTag: "10-1", originalSize: PixelSize(width: 3, height: 2), format: .png, standalone: true)
        let info = CacheEntryInfo(etag: "\"e\"", lastModified: "Sun, 06 Nov 1994 08:49:37 GMT",
                                  freshUntil: Date(timeIntervalSince1970: 1_700_000_000), rendition: record)
        let value = RedisEntry.encode(url: url, data: Data([1, 2, 3]), info: info)
        let decoded = try #require(RedisEntry.decode(value, expecting: url))
        #expect(decoded.info == info && decoded.data == Data([1, 2, 3]))
        // The same value under the first layout's magic (which had no record field) is a miss.
        var old = value
        old.replaceSubrange(0..<4, with: Data("IPR1".utf8))
        #expect(RedisEntry.decode(old, expecting: url) == nil)
        // A damaged record is a miss, never an entry without it.
        let plain = RedisEntry.encode(url: url, data: Data([1]), info: CacheEntryInfo())
        #expect(RedisEntry.decode(plain, expecting: url)?.info.rendition == nil)
    }

    /// The placeholder round-trips; a value of the previous layout ("IPR2", no placeholder
    /// field) still reads, as an entry without one.
    @Test func aPlaceholderRoundTripsAndThePreviousLayoutStillReads() throws {
        let url = URL(string: "https://cdn.example/p.jpg")!
        let hash = try #require(ThumbHash(base64: "1QcSHQRnh493V4dIh4eXh1h4kJUI"))
        let info = CacheEntryInfo(etag: "\"e\"", freshUntil: Date(timeIntervalSince1970: 1_700_000_000), placeholder: hash)
        let value = RedisEntry.encode(url: url, data: Data([1, 2, 3]), info: info)
        #expect(value.prefix(4) == Data("IPR3".utf8))
        let decoded = try #require(RedisEntry.decode(value, expecting: url))
        #expect(decoded.info == info && decoded.data == Data([1, 2, 3]))
        // The previous layout, as its writer made it: no placeholder field.
        var previous = Data("IPR2".utf8)
        func string(_ text: String?) {
            guard let text else { previous.append(contentsOf: [0xFF, 0xFF, 0xFF, 0xFF]); return }
            withUnsafeBytes(of: UInt32(text.utf8.count).bigEndian) { previous.append(contentsOf: $0) }
            previous.append(Data(text.utf8))
        }
        string(url.absoluteString); string("\"e\""); string(nil)
        withUnsafeBytes(of: Int64(1_700_000_000_000).bigEndian) { previous.append(contentsOf: $0) }
        string(nil)  // no rendition record
        withUnsafeBytes(of: UInt64(3).bigEndian) { previous.append(contentsOf: $0) }
        previous.append(contentsOf: [1, 2, 3])
        withUnsafeBytes(of: RedisEntry.checksum(previous).bigEndian) { previous.append(contentsOf: $0) }
        let old = try #require(RedisEntry.decode(previous, expecting: url))
        #expect(old.data == Data([1, 2, 3]) && old.info.placeholder == nil && old.info.etag == "\"e\"")
        // A placeholder field too short to be a hash is a miss.
        let bad = RedisEntry.encode(url: url, data: Data([1]), info: CacheEntryInfo())
        #expect(RedisEntry.decode(bad, expecting: url)?.info.placeholder == nil)
    }
}
