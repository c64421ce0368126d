import PipelineCore

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Two data caches as one: a fast local level (a process's `DiskCache`) in front of a shared
/// level (``RedisCache``). Reads try the local level first and the shared one after a miss or a
/// stale local entry; writes and removals go to both.
///
/// A shared hit is not copied into the local level when it is read: it is answered marked
/// `promotesAfterDecode`, and the pipeline hands it back (`promoteData`) once the bytes
/// decoded, which copies it then. Bytes that do not decode (a damaged or planted value) never
/// reach the local disk, so cleaning Redis is enough to cure every replica.
public struct TieredDataCache: DataCaching {
    /// The first level, asked first.
    public let local: any DataCaching
    /// The second level, shared by many pipelines.
    public let shared: any DataCaching
    private let now: @Sendable () -> Date
    private let warmed: WarmedEntries

    /// Creates the composition. `now` decides whether a local entry is stale; `warmBudget`
    /// bounds the bytes ``warm(_:)`` holds in memory for requests still to come (default 16 MiB).
    public init(local: any DataCaching, shared: any DataCaching, warmBudget: Int = 16 << 20,
                now: @escaping @Sendable () -> Date = Date.init) {
        self.local = local
        self.shared = shared
        self.now = now
        self.warmed = WarmedEntries(budget: warmBudget)
    }

    /// The local entry when fresh; else the shared entry (one ``warm(_:)`` holds, or else read
    /// from the shared level) when it is fresher, marked to be promoted once it decoded; else
    /// whichever exists.
    public func cachedData(for url: URL) async -> CachedData? {
        let nearby = await local.cachedData(for: url)
        if let nearby, nearby.info.isFresh(at: now()) { return nearby }
        let found: CachedData?
        if let held = warmed.take(url) { found = held } else { found = await shared.cachedData(for: url) }
        guard var remote = found else { return nearby }
        if let nearby, !remote.info.isFresh(at: now()), Self.lasts(nearby.info, asLongAs: remote.info) { return nearby }
        remote.promotesAfterDecode = true
        return remote
    }

    /// Copies a shared entry the pipeline decoded into the local level, unless the local level
    /// got one at least as fresh meanwhile (a revalidation's new bytes).
    public func promoteData(_ data: Data, info: CacheEntryInfo, for url: URL) async {
        if let nearby = await local.cachedDigest(for: url)?.info, Self.lasts(nearby, asLongAs: info) { return }
        await local.storeData(data, info: info, for: url)
    }

    /// Fetches the shared entries of `urls` whose local entry is missing or stale (and older
    /// than the shared one), before a batch of requests (a prefetch of a page of pictures) asks
    /// for them one by one: with a ``RedisCache`` as the shared level that is one multi-get,
    /// one round trip per Redis node, instead of one lookup per URL. The entries are held in
    /// memory (at most `warmBudget` bytes, the oldest dropped first) until the first read of
    /// their URL, and reach the local level only once they decoded, as any shared hit. The
    /// local level is asked for digests only (no bytes read). Returns how many entries are held.
    @discardableResult
    public func warm(_ urls: [URL]) async -> Int {
        var wanted: [URL] = []
        var nearbyInfo: [URL: CacheEntryInfo] = [:]
        for url in Set(urls) where !warmed.contains(url) {
            let nearby = await local.cachedDigest(for: url)
            if let nearby, nearby.info.isFresh(at: now()) { continue }
            wanted.append(url)
            nearbyInfo[url] = nearby?.info
        }
        guard !wanted.isEmpty else { return 0 }
        var found: [URL: CachedData] = [:]
        if let redis = shared as? RedisCache {
            found = await redis.cachedData(for: wanted)
        } else {
            for url in wanted { found[url] = await shared.cachedData(for: url) }
        }
        var held = 0
        for (url, remote) in found {
            if let nearby = nearbyInfo[url], !remote.info.isFresh(at: now()), Self.lasts(nearby, asLongAs: remote.info) { continue }
            if warmed.stage(remote, for: url) { held += 1 }
        }
        return held
    }

    /// Whether `nearby` is fresh at least as long as `remote` (no freshness: the distant past).
    private static func lasts(_ nearby: CacheEntryInfo, asLongAs remote: CacheEntryInfo) -> Bool {
        nearby.freshUntil ?? .distantPast >= remote.freshUntil ?? .distantPast
    }

    /// Stores in both levels.
    public func storeData(_ data: Data, info: CacheEntryInfo, for url: URL) async {
        _ = warmed.take(url)
        async let first: Void = local.storeData(data, info: info, for: url)
        async let second: Void = shared.storeData(data, info: info, for: url)
        _ = await (first, second)
    }

    /// Updates both levels.
    public func updateInfo(_ info: CacheEntryInfo, for url: URL) async {
        _ = warmed.take(url)
        async let first: Void = local.updateInfo(info, for: url)
        async let second: Void = shared.updateInfo(info, for: url)
        _ = await (first, second)
    }

    /// Tells both levels (the shared one gives back a fetch lease this process holds).
    public func abandonStore(for url: URL) async {
        async let first: Void = local.abandonStore(for: url)
        async let second: Void = shared.abandonStore(for: url)
        _ = await (first, second)
    }

    /// Removes from both levels.
    public func removeData(for url: URL) async {
        _ = warmed.take(url)
        async let first: Void = local.removeData(for: url)
        async let second: Void = shared.removeData(for: url)
        _ = await (first, second)
    }

    /// Empties the local level (and what ``warm(_:)`` holds) only: the shared level serves
    /// other pipelines too, and its entries expire by their TTL.
    public func removeAll() async {
        warmed.removeAll()
        await local.removeAll()
    }
}
