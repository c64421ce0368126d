import Foundation

/// Permanent failures remembered for a while (a 404 per fetch URL, undecodable bytes per key),
/// bounded by count: the least recently used entry goes first, so a server that sees many
/// distinct missing URLs keeps at most `limit` of them.
final class NegativeCache<Key: Hashable & Sendable>: Sendable {
    private struct Entry: Sendable {
        let until: Date
        let error: ImagePipelineError
    }

    private let entries: MemoryCache<Key, Entry>

    /// A cache of at most `limit` failures.
    init(limit: Int) {
        entries = MemoryCache(costLimit: Int.max, countLimit: max(0, limit), entryCostFraction: 1)
    }

    /// The failure remembered for `key` while it still holds at `now`; an expired one is removed.
    func error(for key: Key, now: Date) -> ImagePipelineError? {
        guard let entry = entries.value(for: key) else { return nil }
        if entry.until > now { return entry.error }
        entries.removeValue(for: key)
        return nil
    }

    /// Remembers `error` for `key` until `until`.
    func insert(_ error: ImagePipelineError, until: Date, for key: Key) {
        entries.insert(Entry(until: until, error: error), for: key, cost: 1)
    }

    /// Forgets `key`'s failure.
    func removeValue(for key: Key) { entries.removeValue(for: key) }

    /// Forgets every failure.
    func removeAll() { entries.removeAll() }

    /// How many failures are remembered.
    var count: Int { entries.count }
}
