import Synchronization

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// When stored bytes were replaced (a revalidation brought new ones) or removed, per cache
/// identity: the one place that answers "were the bytes this result was made from replaced
/// meanwhile?", so a decode of old bytes still running never puts them back in memory or on
/// disk as a rendition. Replacing an identity's bytes also drops the decoded copies of the old
/// ones from the memory cache.
///
/// Every replacement advances a counter; a work reads ``current`` when it reads its bytes and
/// asks ``isCurrent(_:since:)`` before it keeps what it made. The stage that replaces bytes
/// (a revalidation, a decode that proved new bytes) writes it; the image stage reads it before
/// it keeps a result. Bounded: the last 1,000 identities are remembered (an older replacement
/// cannot matter to a work that started after it, and one that started before it and still
/// runs is very unlikely). Thread-safe.
final class ReplacementLedger: Sendable {
    private struct State {
        /// The count of replacements so far.
        var current: UInt64 = 0
        /// The count when every cache was last emptied.
        var allReplacedAt: UInt64 = 0
    }
    private let state = Mutex(State())
    private let replacedAt = MemoryCache<URL, UInt64>(costLimit: Int.max, countLimit: 1000, entryCostFraction: 1)
    private let memoryCache: MemoryCache<ImageKey, ImageContainer>

    init(memoryCache: MemoryCache<ImageKey, ImageContainer>) {
        self.memoryCache = memoryCache
    }

    /// The count of replacements so far.
    var current: UInt64 { state.withLock { $0.current } }

    /// The stored bytes of `url` were replaced or removed now: decoded copies of the old bytes
    /// must not answer again, nor be kept by a decode of them still running.
    func replace(_ url: URL) {
        state.withLock { state in
            state.current += 1
            replacedAt.insert(state.current, for: url, cost: 1)
        }
        memoryCache.removeValues { $0.cacheURL == url }
    }

    /// Every cache was emptied now.
    func replaceAll() {
        state.withLock { state in
            state.current += 1
            state.allReplacedAt = state.current
        }
    }

    /// Whether what was made from `url`'s bytes read at `generation` (a reading of ``current``)
    /// may still be kept: the bytes were not replaced since. `nil` stands for bytes fresh from
    /// the origin, which are the newest there are: nothing replaced them.
    func isCurrent(_ url: URL, since generation: UInt64?) -> Bool {
        guard let generation else { return true }
        let allReplacedAt = state.withLock { $0.allReplacedAt }
        return max(replacedAt.value(for: url) ?? 0, allReplacedAt) <= generation
    }
}
