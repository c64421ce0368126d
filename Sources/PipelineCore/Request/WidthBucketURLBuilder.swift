#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Asks a resizing CDN for the smallest width bucket that covers the request.
///
/// A request for 150 px and one for 160 px both fetch `…?w=160`, so they share one download
/// and one disk entry. A request wider than the largest bucket, or for the original size,
/// fetches the URL as given (a bigger bucket would be blurry, so the original is the honest
/// answer). Only `http`/`https` URLs are rewritten; `file` and custom schemes pass through.
public struct WidthBucketURLBuilder: FetchURLBuilding {
    /// The bucket widths in pixels, ascending. Default 160, 320, 640, 1280.
    public let buckets: [Int]
    /// The query item that carries the width. Default `"w"`.
    public let queryName: String

    /// Creates a builder; `buckets` are sorted and de-duplicated, non-positive ones dropped.
    public init(buckets: [Int] = [160, 320, 640, 1280], queryName: String = "w") {
        self.buckets = Array(Set(buckets.filter { $0 > 0 })).sorted()
        self.queryName = queryName
    }

    /// The smallest bucket ≥ `width`, or `nil` when `width` is above every bucket.
    public func bucket(forWidth width: Int) -> Int? {
        buckets.first { $0 >= width }
    }

    /// One request per bucket (`request` at bucket × bucket pixels): every fetch URL this builder
    /// may pick for `request.url` besides the original.
    public func variantRequests(for request: ImageRequest) -> [ImageRequest] {
        buckets.map { width in
            var variant = request
            variant.targetSize = .pixels(PixelSize(width: width, height: width))
            return variant
        }
    }

    /// The URL with the `w` query item set to the covering bucket (replacing any existing one).
    ///
    /// Works on the URL string (dropping `w=` items, appending the bucket before any fragment)
    /// rather than through `URLComponents`: this runs on every `cachedImage(for:)` call, which
    /// a UI thread makes per cell, and the string path is several times cheaper.
    public func fetchURL(for request: ImageRequest) -> URL {
        guard case .pixels(let size) = request.targetSize,
              let scheme = request.url.scheme?.lowercased(), scheme == "http" || scheme == "https",
              let width = bucket(forWidth: size.width)
        else { return request.url }
        let text = request.url.absoluteString
        // The common case, no query and no fragment: the item appended in place, the text not
        // taken apart (the same text as below, with a third of the work).
        let plain = text.utf8.withContiguousStorageIfAvailable { bytes in
            !bytes.contains { $0 == UInt8(ascii: "?") || $0 == UInt8(ascii: "#") }
        }
        if plain == true {
            var fetch = text
            let number = String(width)
            fetch.reserveCapacity(text.utf8.count + queryName.utf8.count + number.utf8.count + 2)
            fetch += "?"
            fetch += queryName
            fetch += "="
            fetch += number
            return URL(string: fetch) ?? request.url
        }
        var bytes = Array(text.utf8)
        var fragment: ArraySlice<UInt8> = []
        if let hash = bytes.firstIndex(of: UInt8(ascii: "#")) {
            fragment = bytes[hash...]
            bytes.removeSubrange(hash...)
        }
        var result: [UInt8]
        var items: [ArraySlice<UInt8>] = []
        if let mark = bytes.firstIndex(of: UInt8(ascii: "?")) {
            result = Array(bytes[...mark])
            let name = Array(queryName.utf8)
            items = bytes[(mark + 1)...].split(separator: UInt8(ascii: "&")).filter { item in
                !(item.starts(with: name) && (item.count == name.count || item[item.startIndex + name.count] == UInt8(ascii: "=")))
            }
        } else {
            result = bytes + [UInt8(ascii: "?")]
        }
        for item in items {
            result += item
            result.append(UInt8(ascii: "&"))
        }
        result += Array("\(queryName)=\(width)".utf8)
        result += fragment
        return URL(string: String(decoding: result, as: UTF8.self)) ?? request.url
    }
}
