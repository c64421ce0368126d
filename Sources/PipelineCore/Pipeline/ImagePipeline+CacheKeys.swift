import Foundation

// Cache identities (custom cache keys) and removal from the caches.
//
// What uses the identity, and why:
// - the memory key (``ImageKey/fetchURL``) and the disk-cache entry: the point of a cache key;
// - joining downloads in flight: two tokens for one picture give the same bytes, so the second
//   joins the first's download (made with the first caller's URL);
// - the undecodable-bytes memory (per key): the same bytes whatever the token;
// - but not the not-found memory, which is kept per URL fetched: a 404 is what the origin said
//   about that URL, and some origins answer 404 for a bad or expired signature, so a request
//   with a fresh token deserves a try.
extension ImagePipeline {
    /// The identity of `request`'s fetch URL in the caches: the fetch URL itself, unless
    /// ``ImageRequest/cacheKey`` or ``Configuration/cacheKey`` gives another. A request-level
    /// key keeps the URL builder's variant apart (two width buckets of one key are two entries):
    /// `cacheKey = "https://cdn.example/a.jpg"` at 300 px with ``WidthBucketURLBuilder`` is
    /// `https://cdn.example/a.jpg?w=320`; `cacheKey = "photo 42"` is `imgpipe-key:photo%2042?w=320`.
    public nonisolated func cacheURL(for request: ImageRequest) -> URL {
        cacheURL(for: request, fetchURL: fetchURL(for: request))
    }

    /// ``cacheURL(for:)`` when the fetch URL is known already.
    nonisolated func cacheURL(for request: ImageRequest, fetchURL: URL) -> URL {
        if let key = request.cacheKey {
            return Self.identityURL(key, variant: variantSuffix(for: request)) ?? fetchURL
        }
        if let map = configuration.cacheKey, let identity = map(fetchURL) {
            return Self.identityURL(identity, variant: nil) ?? fetchURL
        }
        return fetchURL
    }

    /// What the URL builder adds to `request`'s URL for its size (`?w=320`), found by building
    /// the fetch URL of a placeholder URL of the same scheme; `nil` when it adds nothing.
    private nonisolated func variantSuffix(for request: ImageRequest) -> String? {
        var probe = request
        let scheme = request.url.scheme?.lowercased() ?? "https"
        let known = scheme == "https" ? Self.httpsPlaceholder : scheme == "http" ? Self.httpPlaceholder : nil
        guard let placeholder = known ?? URL(string: "\(scheme)://imgpipe.invalid/") else { return nil }
        probe.url = placeholder
        let built = configuration.urlBuilder.fetchURL(for: probe).absoluteString
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
        return plain ? text : text.addingPercentEncoding(withAllowedCharacters: .urlPathAllowed)
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
        guard let suffix = variant.addingPercentEncoding(withAllowedCharacters: .urlPathAllowed) else { return nil }
        return URL(string: "imgpipe-key:" + base + "#" + suffix)
    }

    /// Removes `request`'s picture from the caches: from memory every size and processor list of
    /// its URL (`allSizes`, the default; compared through the URL builder, so other width
    /// buckets go too) or only `request`'s own entry; from the disk cache the original bytes of
    /// every fetch URL the builder may pick for it (``FetchURLBuilding/variantRequests(for:)``)
    /// and the renditions of the memory entries removed (renditions of sizes no longer in
    /// memory stay until evicted: one tagged with an original answers only for that original,
    /// a standalone one (``DiskCachePolicy/renditions``, ``DiskCachePolicy/automatic``) until
    /// it is stale); and the failures
    /// remembered for it. A decode of the old bytes still running does not put them back in
    /// memory. Work in flight is not cancelled.
    public func removeCachedImage(for request: ImageRequest, allSizes: Bool = true) async {
        let ownKey = key(for: request)
        var removedKeys: [ImageKey] = []
        var identities: [URL: URL] = [cacheURL(for: request): fetchURL(for: request)]  // identity: fetch URL
        if allSizes {
            var probes = [request] + configuration.urlBuilder.variantRequests(for: request)
            var original = request
            original.targetSize = .original
            probes.append(original)
            for probe in probes { identities[cacheURL(for: probe)] = fetchURL(for: probe) }
            for key in memoryCache.keysByRecency where belongs(key, to: request) {
                removedKeys.append(key)
                var probe = request
                probe.targetSize = key.targetSize
                identities[key.fetchURL] = fetchURL(for: probe)
            }
            for identity in identities.keys { dropDecodedCopies(of: identity) }
        } else {
            removedKeys = memoryCache.contains(ownKey) ? [ownKey] : []
            replacements += 1
            replacedAt.insert(replacements, for: ownKey.fetchURL, cost: 1)
            memoryCache.removeValue(for: ownKey)
        }
        for key in removedKeys + [ownKey] { decodeFailures.removeValue(for: key) }
        for fetchURL in identities.values { failures.removeValue(for: fetchURL) }
        guard let disk = configuration.diskCache else { return }
        // Under the key the configured encoder writes them (a key without a rendition has none to remove).
        let encoding = configuration.renditionEncoder?.renditionIdentifier ?? ""
        let renditions = (removedKeys + [ownKey]).compactMap { $0.renditionURL(encoding: encoding) }
        let originals = allSizes ? Array(identities.keys) : [ownKey.fetchURL]
        for url in Set(originals + renditions) { await disk.removeData(for: url) }
    }

    /// Whether memory key `key` is one of `request`'s URL's entries: its identity is the one
    /// `request` would have at that key's size.
    private func belongs(_ key: ImageKey, to request: ImageRequest) -> Bool {
        var probe = request
        probe.targetSize = key.targetSize
        probe.contentMode = key.contentMode
        probe.processing = key.processing
        return cacheURL(for: probe) == key.fetchURL
    }

    /// Empties the memory cache and the disk cache (``DataCaching/removeAll()``) and forgets
    /// remembered failures. Decodes of old bytes still running do not put them back in memory.
    public func removeAll() async {
        replacements += 1
        allReplacedAt = replacements
        memoryCache.removeAll()
        removeAllFailures()
        await configuration.diskCache?.removeAll()
    }
}
