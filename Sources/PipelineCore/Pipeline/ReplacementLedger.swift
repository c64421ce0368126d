import Foundation

/// When stored bytes were replaced (a revalidation brought new ones) or removed, per cache
/// identity: the one place that answers "were the bytes this result was made from replaced
/// meanwhile?", so a decode of old bytes still running never puts them back in memory or on
/// disk as a rendition.
///
/// Every replacement advances a counter; a work reads ``current`` when it reads its bytes and
/// asks ``isCurrent(_:since:)`` before it keeps what it made. Bounded: the last 1,000
/// identities are remembered (an older replacement cannot matter to a work that started after
/// it, and one that started before it and still runs is very unlikely). Only used on the
/// pipeline actor.
final class ReplacementLedger {
    /// The count of replacements so far.
    private(set) var current: UInt64 = 0
    private let replacedAt = MemoryCache<URL, UInt64>(costLimit: Int.max, countLimit: 1000, entryCostFraction: 1)
    /// The count when every cache was last emptied.
    private var allReplacedAt: UInt64 = 0

    /// The stored bytes of `url` were replaced or removed now.
    func replace(_ url: URL) {
        current += 1
        replacedAt.insert(current, for: url, cost: 1)
    }

    /// Every cache was emptied now.
    func replaceAll() {
        current += 1
        allReplacedAt = current
    }

    /// Whether what was made from `url`'s bytes read at `generation` (a reading of ``current``)
    /// may still be kept: the bytes were not replaced since. `nil` stands for bytes fresh from
    /// the origin, which are the newest there are: nothing replaced them.
    func isCurrent(_ url: URL, since generation: UInt64?) -> Bool {
        guard let generation else { return true }
        return max(replacedAt.value(for: url) ?? 0, allReplacedAt) <= generation
    }
}
