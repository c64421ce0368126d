import PipelineCore
import Synchronization

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Shared entries ``TieredDataCache/warm(_:)`` fetched for requests still to come, held in
/// memory rather than on the local disk: bytes reach the local level only once they decoded.
/// Each is taken by the first read of its URL; past the budget (bytes of pictures and URLs)
/// the oldest go first.
final class WarmedEntries: Sendable {
    private struct State {
        var entries: [URL: CachedData] = [:]
        /// Staging order, oldest first.
        var order: [URL] = []
        var bytes = 0

        mutating func remove(_ url: URL) -> CachedData? {
            guard let entry = entries.removeValue(forKey: url) else { return nil }
            order.removeAll { $0 == url }
            bytes -= WarmedEntries.cost(of: entry, for: url)
            return entry
        }
    }

    /// The most bytes held.
    let budget: Int
    private let state = Mutex(State())

    init(budget: Int) {
        self.budget = max(0, budget)
    }

    static func cost(of entry: CachedData, for url: URL) -> Int { entry.data.count + url.absoluteString.utf8.count }

    func contains(_ url: URL) -> Bool { state.withLock { $0.entries[url] != nil } }

    /// Holds `entry` for `url` (replacing any), making room by dropping the oldest; `false`
    /// when it alone is over the budget.
    func stage(_ entry: CachedData, for url: URL) -> Bool {
        let cost = Self.cost(of: entry, for: url)
        guard cost <= budget else { return false }
        state.withLock { state in
            _ = state.remove(url)
            while state.bytes + cost > budget, let oldest = state.order.first { _ = state.remove(oldest) }
            state.entries[url] = entry
            state.order.append(url)
            state.bytes += cost
        }
        return true
    }

    /// The entry held for `url`, no longer held.
    func take(_ url: URL) -> CachedData? { state.withLock { $0.remove(url) } }

    func removeAll() { state.withLock { $0 = State() } }
}
