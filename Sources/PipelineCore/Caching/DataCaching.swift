#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// What a disk cache knows about a stored entry besides its bytes.
public struct CacheEntryInfo: Hashable, Sendable {
    /// `ETag` of the stored response.
    public var etag: String?
    /// `Last-Modified` of the stored response.
    public var lastModified: String?
    /// Until when the entry is fresh; `nil` when the response gave no lifetime (then it is
    /// treated as stale: usable, but revalidated).
    public var freshUntil: Date?
    /// ``freshUntil`` came from a heuristic lifetime (``ResponseMetadata/lifetimeIsHeuristic``):
    /// the stored response stated none. A cache stores it with the rest of the info (a cache
    /// that cannot says `false`: a bare 304 then leaves the entry stale, the careful side).
    public var lifetimeIsHeuristic: Bool
    /// For a rendition's entry, what it was made from (the pipeline writes and reads it);
    /// `nil` for original bytes. A cache stores it with the rest of the info.
    public var rendition: RenditionRecord?
    /// The picture's placeholder hash, computed when the pipeline decoded these bytes (or the
    /// rendition's picture): what ``ImagePipeline/placeholder(for:)`` answers from this info
    /// alone. `nil` until a decode made one. A cache stores it with the rest of the info.
    public var placeholder: ThumbHash?

    /// Creates entry info.
    public init(etag: String? = nil, lastModified: String? = nil, freshUntil: Date? = nil, lifetimeIsHeuristic: Bool = false,
                rendition: RenditionRecord? = nil, placeholder: ThumbHash? = nil) {
        self.etag = etag
        self.lastModified = lastModified
        self.freshUntil = freshUntil
        self.lifetimeIsHeuristic = lifetimeIsHeuristic
        self.rendition = rendition
        self.placeholder = placeholder
    }

    /// The info for a response received at `receivedAt`, its lifetime counted from then and
    /// chosen by `freshness` (default ``FreshnessPolicy/http``: the response's own).
    public init(_ metadata: ResponseMetadata, receivedAt: Date, freshness: FreshnessPolicy = .http) {
        self.init(etag: metadata.etag, lastModified: metadata.lastModified,
                  freshUntil: freshness.lifetime(of: metadata).map { receivedAt.addingTimeInterval($0) },
                  lifetimeIsHeuristic: metadata.lifetimeIsHeuristic)
    }

    /// Whether the entry may be served without asking the origin at `now`.
    public func isFresh(at now: Date) -> Bool {
        guard let freshUntil else { return false }
        return now < freshUntil
    }

    /// Validators for revalidating the entry.
    public var validator: CacheValidator? {
        CacheValidator(etag: etag, lastModified: lastModified, allowsHeuristicLifetime: lifetimeIsHeuristic)
    }
}

/// A stored entry: the compressed bytes exactly as loaded, and their info.
public struct CachedData: Sendable {
    /// The compressed bytes.
    public var data: Data
    /// Validators and freshness.
    public var info: CacheEntryInfo
    /// The cache answered from a level behind its nearest one (a shared tier behind a local
    /// disk) and has not copied the bytes nearer: they are not known to decode. The pipeline
    /// hands them back through ``DataCaching/promoteData(_:info:for:)`` once they decoded,
    /// as it stores a loader's bytes only then. Default `false`.
    public var promotesAfterDecode: Bool

    /// Creates a stored entry.
    public init(data: Data, info: CacheEntryInfo, promotesAfterDecode: Bool = false) {
        self.data = data
        self.info = info
        self.promotesAfterDecode = promotesAfterDecode
    }
}

/// The pipeline's disk-cache slot: compressed bytes keyed by fetch URL.
///
/// Implementations do their file work off the pipeline actor and off the cooperative pool,
/// and treat a damaged entry as a miss. The pipeline calls these from its own tasks.
public protocol DataCaching: Sendable {
    /// The entry for `url`, fresh or stale, or `nil`.
    func cachedData(for url: URL) async -> CachedData?
    /// The length, CRC-32 and info of `url`'s entry, or `nil`. Has a default (reads the entry);
    /// a cache that keeps both in a header answers without reading the bytes.
    func cachedDigest(for url: URL) async -> CachedDigest?
    /// Stores `data` for `url` with `info`, replacing any entry. Callers skip `no-store` responses.
    func storeData(_ data: Data, info: CacheEntryInfo, for url: URL) async
    /// Replaces the info of an existing entry without rewriting its bytes (after a 304).
    func updateInfo(_ info: CacheEntryInfo, for url: URL) async
    /// Removes the entry for `url`, if any.
    func removeData(for url: URL) async
    /// Tells the cache that bytes a loader just returned for `url` did not decode, so the
    /// pipeline will not store them. A cache that coordinates loads across processes (a shared
    /// tier's fetch lease) lets the others go ahead now instead of waiting for an entry that
    /// will not come. The default does nothing.
    func abandonStore(for url: URL) async
    /// Removes every entry (``ImagePipeline/removeAll()``). The default removes nothing: a
    /// cache that others share may choose to keep its entries.
    func removeAll() async
    /// Bytes ``cachedData(for:)`` answered with ``CachedData/promotesAfterDecode`` decoded
    /// (with `info`, which may now carry the picture's placeholder): a cache of several levels
    /// copies them into its nearest one now, never before. The pipeline calls it at most once
    /// per answer, and only where it would store a loader's bytes. The default does nothing.
    func promoteData(_ data: Data, info: CacheEntryInfo, for url: URL) async
}

extension DataCaching {
    /// Does nothing: a cache without coordination has nothing to give back.
    public func abandonStore(for url: URL) async {}

    /// Removes nothing (see ``DataCaching/removeAll()``).
    public func removeAll() async {}

    /// Does nothing: a cache of one level never answers with bytes to promote.
    public func promoteData(_ data: Data, info: CacheEntryInfo, for url: URL) async {}
}
