import Foundation

/// Picks the URL that is actually downloaded for a request, e.g. a CDN rendition.
///
/// The result keys the download table and the disk cache, so requests that map to one
/// fetch URL share one download.
public protocol FetchURLBuilding: Sendable {
    /// The URL to fetch for `request`.
    func fetchURL(for request: ImageRequest) -> URL
}

/// Fetches every request from its own URL: for sources without a resizing CDN.
public struct IdentityURLBuilder: FetchURLBuilding {
    /// Creates the builder.
    public init() {}
    /// Returns `request.url` unchanged.
    public func fetchURL(for request: ImageRequest) -> URL { request.url }
}
