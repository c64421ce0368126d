import Foundation

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

    /// The URL with the `w` query item set to the covering bucket (replacing any existing one).
    public func fetchURL(for request: ImageRequest) -> URL {
        guard case .pixels(let size) = request.targetSize,
              let scheme = request.url.scheme?.lowercased(), scheme == "http" || scheme == "https",
              let width = bucket(forWidth: size.width),
              var components = URLComponents(url: request.url, resolvingAgainstBaseURL: false)
        else { return request.url }
        var items = (components.queryItems ?? []).filter { $0.name != queryName }
        items.append(URLQueryItem(name: queryName, value: String(width)))
        components.queryItems = items
        return components.url ?? request.url
    }
}
