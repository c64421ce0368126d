import Foundation
import PipelineCore
import Testing

/// The one wire format of the entry info, which the disk and Redis caches both carry.
@Suite("Cache entry info: one wire format")
struct CacheEntryInfoEncodingTests {
    static let record = RenditionRecord(originTag: "48213-1c291ca3", originalSize: PixelSize(width: 6000, height: 4000),
                                        format: .jpeg, standalone: true)

    static func decoded(_ bytes: [UInt8]) -> CacheEntryInfo? {
        bytes.withUnsafeBytes { CacheEntryInfo(encoded: $0) }
    }

    @Test func everyFieldRoundTripsAloneAndTogether() throws {
        let hash = try #require(ThumbHash(base64: "1QcSHQRnh493V4dIh4eXh1h4kJUI"))
        let full = CacheEntryInfo(etag: "W/\"é\"", lastModified: "Sun, 06 Nov 1994 08:49:37 GMT",
                                  freshUntil: Date(timeIntervalSince1970: 1_700_000_123.456_789), lifetimeIsHeuristic: true,
                                  rendition: Self.record, placeholder: hash)
        let cases = [
            CacheEntryInfo(), full, CacheEntryInfo(etag: ""), CacheEntryInfo(lastModified: ""),
            CacheEntryInfo(freshUntil: .distantPast), CacheEntryInfo(freshUntil: Date(timeIntervalSince1970: 0)),
            CacheEntryInfo(lifetimeIsHeuristic: true), CacheEntryInfo(rendition: Self.record), CacheEntryInfo(placeholder: hash),
        ]
        for info in cases {
            let bytes = try #require(info.encoded())
            #expect(bytes.first == CacheEntryInfo.encodingVersion)
            #expect(Self.decoded(bytes) == info, "\(info)")
        }
    }

    /// Every prefix, a byte more, another version, an unknown flag and a present-flag without
    /// its field are not info.
    @Test func damagedBytesAreNotInfo() throws {
        let info = CacheEntryInfo(etag: "\"e\"", freshUntil: Date(timeIntervalSince1970: 1), rendition: Self.record)
        let bytes = try #require(info.encoded())
        for length in 0..<bytes.count { #expect(Self.decoded(Array(bytes.prefix(length))) == nil, "length \(length)") }
        #expect(Self.decoded(bytes + [0]) == nil)
        var version = bytes
        version[0] = 2
        #expect(Self.decoded(version) == nil)
        var flag = bytes
        flag[1] |= 64
        #expect(Self.decoded(flag) == nil)
        var absent = try #require(CacheEntryInfo(etag: "x").encoded())
        absent[1] = 0  // ETag bytes without the ETag flag
        #expect(Self.decoded(absent) == nil)
        var infinite = try #require(CacheEntryInfo(freshUntil: Date()).encoded())
        withUnsafeBytes(of: Double.infinity.bitPattern.littleEndian) { infinite.replaceSubrange(2..<10, with: $0) }
        #expect(Self.decoded(infinite) == nil)
        #expect(Self.decoded([1, 2] + [UInt8](repeating: 0, count: 16) + [0xFF]) == nil)
    }

    @Test func fieldsTooLongForTheFormatAreRefused() {
        #expect(CacheEntryInfo(etag: String(repeating: "e", count: 65_536)).encoded() == nil)
        #expect(CacheEntryInfo(lastModified: String(repeating: "m", count: 65_536)).encoded() == nil)
        #expect(CacheEntryInfo(etag: String(repeating: "e", count: 65_535)).encoded()?.count == 18 + 65_535)
    }
}
