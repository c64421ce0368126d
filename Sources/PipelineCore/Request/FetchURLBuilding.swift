#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Picks the URL that is actually downloaded for a request, e.g. a CDN rendition.
///
/// The result keys the download table and the disk cache, so requests that map to one
/// fetch URL share one download.
public protocol FetchURLBuilding: Sendable {
    /// The URL to fetch for `request`.
    func fetchURL(for request: ImageRequest) -> URL

    /// Requests for `request`'s URL that lead to the other fetch URLs this builder may pick
    /// (one per width bucket), so ``ImagePipeline/removeCachedImage(for:allSizes:)`` can find
    /// every disk entry of the picture. Default: none beyond the request itself and its
    /// original size.
    func variantRequests(for request: ImageRequest) -> [ImageRequest]
}

extension FetchURLBuilding {
    /// No variants: the default for builders that keep one fetch URL per picture.
    public func variantRequests(for request: ImageRequest) -> [ImageRequest] { [] }
}

/// Fetches every request from its own URL: for sources without a resizing CDN.
public struct IdentityURLBuilder: FetchURLBuilding {
    /// Creates the builder.
    public init() {}
    /// Returns `request.url` unchanged.
    public func fetchURL(for request: ImageRequest) -> URL { request.url }
}
