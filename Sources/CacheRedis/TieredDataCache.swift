import Foundation
import PipelineCore

/// Two data caches as one: a fast local level (a process's `DiskCache`) in front of a shared
/// level (``RedisCache``). Reads try the local level first and the shared one after a miss or a
/// stale local entry, copying a shared hit into the local level; writes and removals go to both.
public struct TieredDataCache: DataCaching {
    /// The first level, asked first.
    public let local: any DataCaching
    /// The second level, shared by many pipelines.
    public let shared: any DataCaching
    private let now: @Sendable () -> Date

    /// Creates the composition. `now` decides whether a local entry is stale.
    public init(local: any DataCaching, shared: any DataCaching, now: @escaping @Sendable () -> Date = Date.init) {
        self.local = local
        self.shared = shared
        self.now = now
    }

    /// The local entry when fresh; else the shared entry when it is fresher (copied into the
    /// local level); else whichever exists.
    public func cachedData(for url: URL) async -> CachedData? {
        let nearby = await local.cachedData(for: url)
        if let nearby, nearby.info.isFresh(at: now()) { return nearby }
        guard let remote = await shared.cachedData(for: url) else { return nearby }
        if let nearby, !remote.info.isFresh(at: now()), nearby.info.freshUntil ?? .distantPast >= remote.info.freshUntil ?? .distantPast {
            return nearby
        }
        await local.storeData(remote.data, info: remote.info, for: url)
        return remote
    }

    /// Copies into the local level the shared entries of `urls` whose local entry is missing or
    /// stale (and older than the shared one), before a batch of requests (a prefetch of a page
    /// of pictures) asks for them one by one: with a ``RedisCache`` as the shared level that is
    /// one multi-get, one round trip per Redis node, instead of one lookup per URL. The local
    /// level is asked for digests only (no bytes read). Returns how many entries were copied.
    @discardableResult
    public func warm(_ urls: [URL]) async -> Int {
        var wanted: [URL] = []
        var nearbyInfo: [URL: CacheEntryInfo] = [:]
        for url in Set(urls) {
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
        var copied = 0
        for (url, remote) in found {
            if let nearby = nearbyInfo[url], !remote.info.isFresh(at: now()),
               nearby.freshUntil ?? .distantPast >= remote.info.freshUntil ?? .distantPast { continue }
            await local.storeData(remote.data, info: remote.info, for: url)
            copied += 1
        }
        return copied
    }

    /// Stores in both levels.
    public func storeData(_ data: Data, info: CacheEntryInfo, for url: URL) async {
        async let first: Void = local.storeData(data, info: info, for: url)
        async let second: Void = shared.storeData(data, info: info, for: url)
        _ = await (first, second)
    }

    /// Updates both levels.
    public func updateInfo(_ info: CacheEntryInfo, for url: URL) async {
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
        async let first: Void = local.removeData(for: url)
        async let second: Void = shared.removeData(for: url)
        _ = await (first, second)
    }

    /// Empties the local level only: the shared level serves other pipelines too, and its
    /// entries expire by their TTL.
    public func removeAll() async {
        await local.removeAll()
    }
}
