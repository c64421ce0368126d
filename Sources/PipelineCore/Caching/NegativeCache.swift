#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Permanent failures remembered for a while (a 404 per fetch URL, undecodable bytes per key),
/// bounded by count and by bytes: the least recently used entry goes first, so a server that
/// sees many distinct missing URLs keeps at most `limit` of them, and distinct failures of
/// long URLs (5 MB `data:` URLs) at most `byteLimit` bytes of them.
///
/// An entry costs its key, the stored error (its URLs and messages: `MemoryCost.of(_:)`) and
/// ``MemoryCost/failureEntryOverhead``; one that alone costs more than `byteLimit`, or whose
/// key's URL alone does, is not remembered (and such a key is never hashed to be looked up).
/// A key whose URL is over ``hashedURLLength`` bytes is kept as the SHA-256 of the URL's text
/// and the rest of the key: two such URLs share an entry only if their SHA-256 collide, which
/// SHA-256's collision resistance makes impossible in practice, so a failure never answers for
/// another URL. A short key is kept as it is (never equal to a hashed one).
/// Expired entries are removed on every insert (amortised O(1), oldest first), not only when
/// looked up.
final class NegativeCache<Key: NegativeCacheKey>: Sendable {
    private struct Entry: Sendable {
        let until: Date
        let error: ImagePipelineError
    }

    /// A key as stored: as it is, or, for a long URL, its URL's digest and the rest of the key
    /// (its URL replaced by ``standIn``).
    struct StoredKey: Hashable, Sendable {
        let digest: [UInt8]?
        let key: Key
    }

    /// URLs longer than this, in UTF-8 bytes, are kept as their SHA-256.
    static var hashedURLLength: Int { 1024 }

    /// The bytes of a SHA-256 digest.
    private static var digestLength: Int { 32 }

    /// What stands for a hashed URL inside the stored key.
    private static var standIn: URL { URL(fileURLWithPath: "/") }

    private let entries: MemoryCache<StoredKey, Entry>

    /// A cache of at most `limit` failures and `byteLimit` bytes; entries live `lifetime`
    /// seconds by `now` (the clock the lookups pass).
    init(limit: Int, byteLimit: Int, lifetime: TimeInterval, now: @escaping @Sendable () -> Date) {
        entries = MemoryCache(costLimit: max(0, byteLimit), countLimit: max(0, limit), entryCostFraction: 1,
                              ttl: max(0, lifetime), now: now)
    }

    /// A cache with the configuration's limits (``ImagePipeline/Configuration/negativeCacheLimit``,
    /// ``ImagePipeline/Configuration/negativeCacheByteLimit``), lifetime and clock.
    convenience init(_ configuration: ImagePipeline.Configuration) {
        self.init(limit: configuration.negativeCacheLimit, byteLimit: configuration.negativeCacheByteLimit,
                  lifetime: configuration.negativeCacheLifetime, now: configuration.now)
    }

    /// The failure remembered for `key` while it still holds at `now`. An expired one answers
    /// nothing and is left for the inserts to sweep: a lookup runs at the pipeline's door, off
    /// the actor, and removing here could remove a fresh failure a stage stored meanwhile.
    func error(for key: Key, now: Date) -> ImagePipelineError? {
        guard entries.count > 0 else { return nil }
        let urlBytes = MemoryCost.of(key.url)
        guard mayBeStored(urlBytes) else { return nil }
        let stored = storedKey(key, urlBytes: urlBytes)
        guard let entry = entries.value(for: stored) else { return nil }
        return entry.until > now ? entry.error : nil
    }

    /// Remembers `error` for `key` until `until`, unless it alone would cost more than the byte
    /// budget.
    func insert(_ error: ImagePipelineError, until: Date, for key: Key) {
        let urlBytes = MemoryCost.of(key.url)
        let keyBytes = (urlBytes > Self.hashedURLLength ? Self.digestLength : urlBytes) + key.extraBytes
        let cost = MemoryCost.failureEntryOverhead + keyBytes + MemoryCost.of(error)
        // Too costly to keep: not even hashed (a 5 MB URL would take long). An older failure of
        // the key, if any, stays until it expires.
        guard cost <= entries.entryCostLimit, mayBeStored(urlBytes) else { return }
        entries.insert(Entry(until: until, error: error), for: storedKey(key, urlBytes: urlBytes), cost: cost)
    }

    /// Forgets `key`'s failure.
    func removeValue(for key: Key) {
        guard entries.count > 0 else { return }
        let urlBytes = MemoryCost.of(key.url)
        guard mayBeStored(urlBytes) else { return }
        entries.removeValue(for: storedKey(key, urlBytes: urlBytes))
    }

    /// Forgets every failure.
    func removeAll() { entries.removeAll() }

    /// How many failures are remembered.
    var count: Int { entries.count }

    /// The bytes the remembered failures are counted at.
    var bytes: Int { entries.totalCost }

    /// Whether a key whose URL has `urlBytes` may be stored: not when the URL alone is over the
    /// byte budget, so a lookup never hashes a URL longer than the budget.
    private func mayBeStored(_ urlBytes: Int) -> Bool { urlBytes + MemoryCost.failureEntryOverhead <= entries.entryCostLimit }

    /// The stored form of `key`, whose URL has `urlBytes` (callers look up only when some entry
    /// is stored, so a long URL is hashed only then).
    private func storedKey(_ key: Key, urlBytes: Int) -> StoredKey {
        guard urlBytes > Self.hashedURLLength else { return StoredKey(digest: nil, key: key) }
        return StoredKey(digest: SHA256.hash(key.url.absoluteString.utf8), key: key.replacingURL(with: Self.standIn))
    }
}

/// A key of the negative cache: the URL in it (which may be long), and the key with another.
protocol NegativeCacheKey: Hashable, Sendable {
    /// The URL the key names.
    var url: URL { get }
    /// The bytes the key holds besides its URL's text.
    var extraBytes: Int { get }
    /// The key, naming `url` instead.
    func replacingURL(with url: URL) -> Self
}

extension URL: NegativeCacheKey {
    var url: URL { self }
    var extraBytes: Int { 0 }
    func replacingURL(with url: URL) -> URL { url }
}

extension ImageKey: NegativeCacheKey {
    var url: URL { cacheURL }
    var extraBytes: Int { MemoryCost.identifiers(of: self) }
    func replacingURL(with url: URL) -> ImageKey {
        var key = self
        key.cacheURL = url
        return key
    }
}
