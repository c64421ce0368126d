#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// A fetch URL's identity in the caches: what the memory key (``ImageKey/cacheURL``), the disk
/// cache and the download table are keyed by. It is the fetch URL itself, unless
/// ``ImageRequest/cacheKey`` or ``ImagePipeline/Configuration/cacheKey`` gives another.
///
/// What uses the identity, and why:
/// - the memory key and the disk-cache entry: the point of a cache key;
/// - joining downloads in flight: two tokens for one picture give the same bytes, so the second
///   joins the first's download (made with the first caller's URL);
/// - the undecodable-bytes memory (per key): the same bytes whatever the token;
/// - but not the not-found memory, which is kept per URL fetched: a 404 is what the origin said
///   about that URL, and some origins answer 404 for a bad or expired signature, so a request
///   with a fresh token deserves a try.
enum CacheIdentity {
    /// The identity of `request` fetched from `fetchURL`. A request-level key keeps the URL
    /// builder's variant apart (two width buckets of one key are two entries):
    /// `cacheKey = "https://cdn.example/a.jpg"` at 300 px with ``WidthBucketURLBuilder`` is
    /// `https://cdn.example/a.jpg?w=320`; `cacheKey = "photo 42"` is `imgpipe-key:photo%2042?w=320`.
    static func url(for request: ImageRequest, fetchURL: URL, configuration: ImagePipeline.Configuration) -> URL {
        if let key = request.cacheKey {
            return identityURL(key, variant: variantSuffix(for: request, urlBuilder: configuration.urlBuilder)) ?? fetchURL
        }
        if let map = configuration.cacheKey, let identity = map(fetchURL) {
            return identityURL(identity, variant: nil) ?? fetchURL
        }
        return fetchURL
    }

    /// What the URL builder adds to `request`'s URL for its size (`?w=320`), found by building
    /// the fetch URL of a placeholder URL of the same scheme; `nil` when it adds nothing.
    private static func variantSuffix(for request: ImageRequest, urlBuilder: any FetchURLBuilding) -> String? {
        var probe = request
        let scheme = request.url.scheme?.lowercased() ?? "https"
        let known = scheme == "https" ? Self.httpsPlaceholder : scheme == "http" ? Self.httpPlaceholder : nil
        guard let placeholder = known ?? URL(string: "\(scheme)://imgpipe.invalid/") else { return nil }
        probe.url = placeholder
        let built = urlBuilder.fetchURL(for: probe).absoluteString
        let base = placeholder.absoluteString
        guard built != base else { return nil }
        return built.utf8.starts(with: base.utf8) ? String(decoding: built.utf8.dropFirst(base.utf8.count), as: UTF8.self) : built
    }

    /// `text` percent-encoded for a URL path; plain ids (letters, digits, `-._~/:@`) as they are.
    private static func encoded(_ text: String) -> String? {
        let plain = text.utf8.allSatisfy { byte in
            switch byte {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
                 UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"),
                 UInt8(ascii: "~"), UInt8(ascii: "/"), UInt8(ascii: ":"), UInt8(ascii: "@"):
                return true
            default:
                return false
            }
        }
        return plain ? text : text.percentEncoded(allowing: .urlPathAllowed)
    }

    private static let httpsPlaceholder = URL(string: "https://imgpipe.invalid/")
    private static let httpPlaceholder = URL(string: "http://imgpipe.invalid/")

    /// The URL standing for identity `text` (itself when it is an absolute URL, else
    /// `imgpipe-key:<percent-encoded text>`), with `variant` appended: as is when it is a query
    /// and the URL has none, else as an encoded fragment.
    private static func identityURL(_ text: String, variant: String?) -> URL? {
        // Only text with a colon can be an absolute URL: skip the parse for plain ids.
        let parsed = text.contains(":") ? URL(string: text).flatMap { $0.scheme == nil ? nil : $0 } : nil
        guard let variant else {
            return parsed ?? encoded(text).flatMap { URL(string: "imgpipe-key:" + $0) }
        }
        if let parsed, parsed.query == nil, parsed.fragment == nil, variant.hasPrefix("?"),
           let url = URL(string: parsed.absoluteString + variant) {
            return url
        }
        guard let base = encoded(text) else { return nil }
        if variant.hasPrefix("?"), !variant.contains("#"), let url = URL(string: "imgpipe-key:" + base + variant) {
            return url
        }
        let suffix = variant.percentEncoded(allowing: .urlPathAllowed)
        return URL(string: "imgpipe-key:" + base + "#" + suffix)
    }
}
