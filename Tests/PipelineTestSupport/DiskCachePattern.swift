import Foundation
import PipelineCore

/// Bodies whose every byte follows from a key and a version, so a test can tell whether bytes
/// read from a disk cache are exactly what some writer stored (crash and multi-writer tests).
public enum DiskCachePattern {
    /// The URL of key `key`.
    public static func url(_ key: Int) -> URL { URL(string: "test://crash/\(key)")! }

    /// The body for `key` at `version`: 12 bytes naming both, then byte `i` is
    /// `(i + key·7 + version)·31` (mod 256); 16–400 KiB. Cut from one table, so even a debug
    /// build makes it at memcpy speed and a writer spends its time writing.
    public static func body(key: Int, version: Int) -> Data {
        let length = 16_384 + (version &* 7919 &+ key &* 104_729) % 393_216
        let shift = (key &* 7 &+ version) & 0xFF
        var data = Data(capacity: length)
        withUnsafeBytes(of: UInt64(version).littleEndian) { data.append(contentsOf: $0) }
        withUnsafeBytes(of: UInt32(key).littleEndian) { data.append(contentsOf: $0) }
        data.append(table[(shift + 12)..<(shift + length)])
        return data
    }

    /// `table[j] = j·31 (mod 256)`, long enough for any body and shift.
    private static let table: Data = Data((0..<(256 + 409_600)).map { UInt8(truncatingIfNeeded: $0 &* 31) })

    /// The ETag a writer gives `version`.
    public static func etag(_ version: Int) -> String { "\"v\(version)\"" }

    /// Whether `entry` read for `key` is exactly a body some writer stored for that key, and
    /// its ETag (from the header or an info sidecar) belongs to the same version.
    public static func isExact(_ entry: CachedData, key: Int) -> Bool {
        let data = entry.data
        guard data.count >= 12 else { return false }
        let version = data.prefix(8).enumerated().reduce(0) { $0 | Int($1.element) << (8 * $1.offset) }
        let storedKey = data.dropFirst(8).prefix(4).enumerated().reduce(0) { $0 | Int($1.element) << (8 * $1.offset) }
        guard storedKey == key, version >= 0, version < 1 << 40 else { return false }
        return data == body(key: key, version: version) && entry.info.etag == etag(version)
    }
}
