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
}
