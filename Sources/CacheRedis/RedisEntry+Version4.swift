import PipelineCore

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

extension RedisEntry {
    /// The `"IPR4"` layout, read so that values stored before `"IPR5"` still serve; nothing
    /// writes it. The same MAC, time, URL and bytes as ``RedisEntry``; in place of the info
    /// field, the info in a layout of its own (integers big-endian): ETag and Last-Modified (u32
    /// length + UTF-8, `0xFFFFFFFF` for none), fresh-until in Unix milliseconds (i64,
    /// `Int64.min` for none), a rendition's record (u32 length + `RenditionRecord.serialized`,
    /// `0xFFFFFFFF` for none), the placeholder (u32 length + `ThumbHash.bytes`, `0xFFFFFFFF` for
    /// none). It had no heuristic-lifetime flag: such values read as stated lifetimes.
    enum Version4 {
        static let magic = Data("IPR4".utf8)

        /// The info fields of a version-4 value, read from `reader`; `nil` when cut short or
        /// when a record or placeholder does not parse.
        static func info(_ reader: inout Reader) -> CacheEntryInfo? {
            guard let etag = reader.optionalString(), let lastModified = reader.optionalString(),
                  let freshBits = reader.integer(UInt64.self), let record = reader.optionalBytes(),
                  let placeholderBytes = reader.optionalBytes() else { return nil }
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
            return CacheEntryInfo(etag: etag, lastModified: lastModified, freshUntil: fresh == Int64.min ? nil : date(fresh),
                                  rendition: rendition, placeholder: placeholder)
        }
    }
}
