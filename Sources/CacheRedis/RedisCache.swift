import Foundation
import PipelineCore
import Synchronization

/// A shared data-cache tier on Redis: compressed bytes with their validators and freshness,
/// shared by every pipeline (process, replica) that points at the same server.
///
/// Use it as the second level behind each process's own ``DiskCache`` (``TieredDataCache``)
/// and wrap the network loader in ``SharedTierLoader`` so that across replicas one origin
/// fetch happens per URL.
///
/// Redis down, slow or full never fails a request: every command has a millisecond timeout,
/// any failure is a miss (or a skipped write), and after ``Configuration/breakerThreshold``
/// failures in a row a circuit breaker stops asking Redis for ``Configuration/breakerCooldown``.
/// The blocking hiredis calls run on a ``WorkerPool`` of their own, never on the cooperative pool.
///
/// Keys: `<prefix>e:<url>` holds an entry (see the README's "Running a fleet"), `<prefix>l:<url>`
/// a fetch lease. Each entry expires (Redis `PX`) at its freshness plus ``Configuration/staleWindow``.
public final class RedisCache: DataCaching, Sendable {
    /// How to reach Redis and how much to trust it.
    public struct Configuration: Sendable {
        /// Server host (an IP address avoids a resolver call on every reconnect).
        public var host: String
        /// Server port.
        public var port: Int
        /// Prepended to every key, so that several applications (or layout versions) share a server.
        public var keyPrefix: String
        /// Connect and per-command timeout. Default 50 ms.
        public var timeout: Duration
        /// Entries with more bytes than this are not stored. Default 4 MiB.
        public var maxEntryBytes: Int
        /// How long after its freshness ends an entry is kept for revalidation, in seconds
        /// (the stale-while-revalidate window). Also the lifetime of an entry without freshness.
        /// Default one day.
        public var staleWindow: TimeInterval
        /// Connections (and worker threads) at most. Default 4.
        public var maxConnections: Int
        /// Consecutive failures that open the circuit breaker. Default 3.
        public var breakerThreshold: Int
        /// How long an open breaker skips Redis before trying again. Default 5 s.
        public var breakerCooldown: Duration

        /// Creates a configuration for the server at `host`:`port`.
        public init(host: String = "127.0.0.1", port: Int = 6379, keyPrefix: String = "imgpipe:v1:",
                    timeout: Duration = .milliseconds(50), maxEntryBytes: Int = 4 << 20,
                    staleWindow: TimeInterval = 86_400, maxConnections: Int = 4,
                    breakerThreshold: Int = 3, breakerCooldown: Duration = .seconds(5)) {
            self.host = host
            self.port = port
            self.keyPrefix = keyPrefix
            self.timeout = timeout
            self.maxEntryBytes = maxEntryBytes
            self.staleWindow = staleWindow
            self.maxConnections = maxConnections
            self.breakerThreshold = breakerThreshold
            self.breakerCooldown = breakerCooldown
        }
    }

    /// Counters for diagnostics and tests.
    public struct Statistics: Sendable, Equatable {
        /// Lookups answered with a valid entry.
        public var hits = 0
        /// Lookups that found nothing.
        public var misses = 0
        /// Values found but rejected (bad checksum, wrong URL, unparsable).
        public var corrupt = 0
        /// Commands that failed (connection refused, timeout, error reply).
        public var failures = 0
        /// Operations skipped because the breaker was open.
        public var skipped = 0
    }

    /// The configuration in use.
    public let configuration: Configuration
    private let workers: WorkerPool
    private let idle = Mutex<[RedisConnection]>([])
    /// Fetch leases this process holds, by URL: given back when the entry is stored or abandoned.
    private let heldLeases = Mutex<[URL: String]>([:])
    private let breaker: Mutex<Breaker>
    private let stats = Mutex(Statistics())
    private let now: @Sendable () -> Date

    /// Creates the tier. Nothing connects until the first operation.
    /// - Parameter now: the clock for TTLs; tests pass their own.
    public init(configuration: Configuration, now: @escaping @Sendable () -> Date = Date.init) {
        self.configuration = configuration
        self.workers = WorkerPool(maxConcurrent: max(1, configuration.maxConnections), name: "RedisCache", idleTimeout: 1)
        self.breaker = Mutex(Breaker(threshold: max(1, configuration.breakerThreshold), cooldown: configuration.breakerCooldown))
        self.now = now
    }

    /// What happened so far.
    public var statistics: Statistics { stats.withLock { $0 } }

    // MARK: DataCaching

    /// The entry for `url` from Redis, or `nil` on a miss, a damaged value or any failure.
    public func cachedData(for url: URL) async -> CachedData? {
        guard let reply = await run([[arg("GET"), entryKey(url)]])?.first else { return nil }
        guard case .string(let value) = reply else {
            stats.withLock { $0.misses += 1 }
            return nil
        }
        guard let entry = RedisEntry.decode(value, expecting: url) else {
            stats.withLock { $0.corrupt += 1 }
            return nil
        }
        stats.withLock { $0.hits += 1 }
        return entry
    }

    /// Stores the entry with a TTL of its freshness plus the stale window; an entry larger than
    /// ``Configuration/maxEntryBytes`` is not stored (and any older one is removed).
    public func storeData(_ data: Data, info: CacheEntryInfo, for url: URL) async {
        guard data.count <= configuration.maxEntryBytes else {
            await removeData(for: url)
            await releaseHeldLease(for: url)
            return
        }
        let value = RedisEntry.encode(url: url, data: data, info: info)
        _ = await run([[arg("SET"), entryKey(url), value, arg("PX"), arg(String(ttlMilliseconds(info)))]])
        await releaseHeldLease(for: url)
    }

    /// Gives back the fetch lease this process holds for `url`, if any: the bytes did not
    /// decode and will not be stored, so another replica may fetch now.
    public func abandonStore(for url: URL) async {
        await releaseHeldLease(for: url)
    }

    /// Rewrites the entry's info (Redis has no partial update of a value: read, re-encode, write).
    public func updateInfo(_ info: CacheEntryInfo, for url: URL) async {
        guard let entry = await cachedData(for: url) else { return }
        await storeData(entry.data, info: info, for: url)
    }

    /// Removes the entry.
    public func removeData(for url: URL) async {
        _ = await run([[arg("DEL"), entryKey(url)]])
    }

    // MARK: Leases

    /// Tries to take the fetch lease for `url` for `duration`: `true` when this caller should
    /// fetch from the origin (it got the lease, or Redis cannot tell), `false` when another
    /// holder is fetching it now.
    public func acquireLease(for url: URL, token: String, duration: Duration) async -> Bool {
        let milliseconds = max(1, Int(duration.components.seconds * 1000 + duration.components.attoseconds / 1_000_000_000_000_000))
        guard let reply = await run([[arg("SET"), leaseKey(url), Data(token.utf8), arg("NX"), arg("PX"), arg(String(milliseconds))]])?.first
        else { return true }
        guard reply != .null else { return false }
        heldLeases.withLock { $0[url] = token }
        return true
    }

    /// Gives back the lease this process took for `url` (if it still has one).
    func releaseHeldLease(for url: URL) async {
        guard let token = heldLeases.withLock({ $0.removeValue(forKey: url) }) else { return }
        await releaseLease(for: url, token: token)
    }

    /// Whether some holder has the fetch lease for `url` now (`false` when Redis cannot tell).
    public func isLeased(_ url: URL) async -> Bool {
        guard let reply = await run([[arg("EXISTS"), leaseKey(url)]])?.first else { return false }
        return reply == .integer(1)
    }

    /// Gives the lease back if `token` still holds it.
    public func releaseLease(for url: URL, token: String) async {
        heldLeases.withLock { if $0[url] == token { $0[url] = nil } }
        let script = "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) else return 0 end"
        _ = await run([[arg("EVAL"), Data(script.utf8), arg("1"), leaseKey(url), Data(token.utf8)]])
    }

    // MARK: Plumbing

    func entryKey(_ url: URL) -> Data { Data((configuration.keyPrefix + "e:" + url.absoluteString).utf8) }
    func leaseKey(_ url: URL) -> Data { Data((configuration.keyPrefix + "l:" + url.absoluteString).utf8) }

    func ttlMilliseconds(_ info: CacheEntryInfo) -> Int64 {
        let remaining = info.freshUntil.map { max(0, $0.timeIntervalSince(now())) } ?? 0
        let seconds = min(remaining + max(0, configuration.staleWindow), 365 * 86_400)
        return max(1000, Int64(seconds * 1000))
    }

    /// Sends `commands` pipelined on a pooled connection off the cooperative pool; `nil` when
    /// the breaker is open or anything failed (an error reply counts as a failure).
    func run(_ commands: [[Data]]) async -> [RedisReply]? {
        guard breaker.withLock({ $0.allows(ContinuousClock.now) }) else {
            stats.withLock { $0.skipped += 1 }
            return nil
        }
        let replies = try? await workers.run(priority: PriorityHandle(.visible)) { [self] in
            blockingRun(commands)
        }
        let failed = replies?.contains { if case .error = $0 { true } else { false } } ?? true
        breaker.withLock { $0.record(success: !failed, at: ContinuousClock.now) }
        if failed { stats.withLock { $0.failures += 1 } }
        return failed ? nil : replies
    }

    private func blockingRun(_ commands: [[Data]]) -> [RedisReply]? {
        let pooled = idle.withLock { $0.popLast() }
        let connection: RedisConnection
        if let pooled {
            connection = pooled
        } else {
            guard let fresh = try? RedisConnection(host: configuration.host, port: configuration.port,
                                                   timeout: configuration.timeout) else { return nil }
            connection = fresh
        }
        let replies = try? connection.pipeline(commands)
        if replies != nil, !connection.isBroken {
            idle.withLock { pool in
                if pool.count < configuration.maxConnections { pool.append(connection) }
            }
        }
        return replies
    }
}

/// Closed until `threshold` failures in a row, then open for `cooldown`, then half-open: one
/// success closes it, one failure opens it again.
struct Breaker {
    let threshold: Int
    let cooldown: Duration
    var failures = 0
    var openUntil: ContinuousClock.Instant?

    func allows(_ now: ContinuousClock.Instant) -> Bool {
        guard let openUntil else { return true }
        return now >= openUntil
    }

    mutating func record(success: Bool, at now: ContinuousClock.Instant) {
        if success {
            failures = 0
            openUntil = nil
        } else {
            failures += 1
            if failures >= threshold { openUntil = now.advanced(by: cooldown) }
        }
    }
}

/// A command argument from text.
func arg(_ text: String) -> Data { Data(text.utf8) }
