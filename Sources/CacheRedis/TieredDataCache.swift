import Foundation
import PipelineCore

/// Two data caches as one: a fast local level (a process's ``DiskCache``) in front of a shared
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
