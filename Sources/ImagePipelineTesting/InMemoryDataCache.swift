import Foundation
import PipelineCore
import Synchronization

/// A `DataCaching` in a dictionary, counting stores and info updates: the disk-cache slot's
/// behaviour in the pipeline, without files.
public final class InMemoryDataCache: DataCaching {
    private struct State {
        var entries: [URL: CachedData] = [:]
        var stores = 0
        var infoUpdates = 0
    }

    private let state = Mutex(State())

    /// An empty cache.
    public init() {}

    /// The entry for `url`.
    public func cachedData(for url: URL) async -> CachedData? { state.withLock { $0.entries[url] } }

    /// Stores an entry.
    public func storeData(_ data: Data, info: CacheEntryInfo, for url: URL) async {
        state.withLock {
            $0.entries[url] = CachedData(data: data, info: info)
            $0.stores += 1
        }
    }

    /// Replaces an entry's info, keeping its bytes.
    public func updateInfo(_ info: CacheEntryInfo, for url: URL) async {
        state.withLock {
            $0.entries[url]?.info = info
            $0.infoUpdates += 1
        }
    }

    /// Removes an entry.
    public func removeData(for url: URL) async { _ = state.withLock { $0.entries.removeValue(forKey: url) } }

    /// Puts an entry in directly (test set-up).
    public func seed(_ data: Data, info: CacheEntryInfo, for url: URL) {
        state.withLock { $0.entries[url] = CachedData(data: data, info: info) }
    }

    /// The info stored for `url`.
    public func info(for url: URL) -> CacheEntryInfo? { state.withLock { $0.entries[url]?.info } }
    /// How many times ``storeData(_:info:for:)`` ran.
    public var storeCount: Int { state.withLock { $0.stores } }
    /// How many times ``updateInfo(_:for:)`` ran.
    public var infoUpdateCount: Int { state.withLock { $0.infoUpdates } }
}
