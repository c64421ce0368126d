import PipelineCore
import Synchronization

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// A shared data-cache tier on Redis: compressed bytes with their validators and freshness,
/// shared by every pipeline (process, replica) that points at the same server.
///
/// Use it as the second level behind each process's own `DiskCache` (``TieredDataCache``)
/// and wrap the network loader in ``SharedTierLoader`` so that across replicas one origin
/// fetch happens per URL.
///
/// Redis down, slow or full never fails a request: every connect and every pipeline of commands
/// has a whole deadline (``Configuration/timeout``), any failure is a miss (or a skipped write),
/// and after ``Configuration/breakerThreshold`` failures in a row a circuit breaker stops asking
/// Redis for ``Configuration/breakerCooldown``. The hiredis calls run on a `WorkerPool` of their
/// own, never on the cooperative pool.
///
/// Values are authenticated (``Configuration/authentication``): anyone who can write to Redis
/// could otherwise plant a picture for any URL, which every replica would serve. A value whose
/// HMAC-SHA-256 does not verify, under the fleet's secret and for the URL asked, is a miss
/// counted in ``Statistics/unauthenticated``, never served nor copied to a local disk; and no
/// value is fresh longer than ``Configuration/maxFreshness`` after it was stored.
///
/// One server or a Redis Cluster, by configuration: with ``Configuration/clusterSeeds`` set, each
/// key goes to the master of its slot (the map comes from `CLUSTER SLOTS`; `MOVED` and `ASK`
/// redirections are followed), every node has its own connection pool and circuit breaker, and
/// a node that is down is a miss for its keys only.
///
/// Keys: `<prefix>e:{<tag>}<url>` holds an entry (an authenticated record of the URL, info and bytes),
/// `<prefix>l:{<tag>}<url>` a fetch lease; `<tag>` is a hash of the URL, so a URL's entry and
/// lease share a cluster slot (and node). Each entry expires (Redis `PX`) at its freshness (at
/// most ``Configuration/maxFreshness``) plus ``Configuration/staleWindow``.
public final class RedisCache: DataCaching, Sendable {
    /// How to reach Redis and how much to trust it.
    public struct Configuration: Sendable {
        /// A server address.
        public struct Endpoint: Sendable, Hashable {
            /// Host (an IP address avoids a resolver call on every reconnect).
            public var host: String
            /// Port.
            public var port: Int

            /// Creates an address.
            public init(host: String, port: Int) {
                self.host = host
                self.port = port
            }
        }

        /// Server host (an IP address avoids a resolver call on every reconnect).
        public var host: String
        /// Server port.
        public var port: Int
        /// Prepended to every key, so that several applications (or layout versions) share a server.
        /// Must not contain `{`: the keys carry their own cluster hash tag. Default `"imgpipe:v2:"`.
        public var keyPrefix: String
        /// The whole deadline of a connect (the TCP handshake), and of each pipeline of commands
        /// (one per server per round trip: written, and every reply read). The socket is
        /// non-blocking and every wait is a `poll` for the time left, so a server that trickles
        /// its reply a byte at a time fails at the deadline (it once stalled a request for
        /// 102 s under a per-`recv` timeout). Expiry is a failure (``Statistics/timeouts``, in
        /// ``Statistics/failures``) that counts toward the breaker and drops the connection,
        /// whose replies are out of step. A command that needs a new connection may take twice
        /// this; a host name's resolution is outside it (give an IP address). Default 50 ms.
        public var timeout: Duration
        /// The largest entry, in bytes of the picture: a larger one is not stored, and a larger
        /// value found in Redis (planted, or written by a writer with a higher limit) is a miss
        /// (``Statistics/oversized``) that is never copied anywhere. A read asks for at most this
        /// many bytes plus the entry's URL plus 64 KiB (validators and records), so an oversized value
        /// costs that much to read, never its whole length. Default 4 MiB.
        public var maxEntryBytes: Int
        /// How long after its freshness ends an entry is kept for revalidation, in seconds
        /// (the stale-while-revalidate window). Also the lifetime of an entry without freshness.
        /// Default one day.
        public var staleWindow: TimeInterval
        /// Idle connections kept per server (cluster node), and worker threads at most. Default 4.
        public var maxConnections: Int
        /// Consecutive failures that open the circuit breaker. Default 3.
        public var breakerThreshold: Int
        /// How long an open breaker skips Redis before trying again. Default 5 s.
        public var breakerCooldown: Duration
        /// Seed nodes of a Redis Cluster. Empty (the default): the one server at ``host``:``port``.
        /// Not empty: cluster mode; any reachable seed gives the slot map, and every master is
        /// found from it.
        public var clusterSeeds: [Endpoint]
        /// `MOVED`/`ASK` redirections followed per command before it counts as a miss. Default 3.
        public var maxRedirections: Int
        /// The slot map is reloaded at most this often (after a `MOVED` or a failed node). Default 1 s.
        public var slotRefreshInterval: Duration
        /// How values are authenticated. Required: left `nil` (as `init` leaves it unless told),
        /// ``RedisCache/init(configuration:now:)`` throws ``ConfigurationError/noAuthentication``,
        /// so a tier never runs unauthenticated by omission. Every member of a fleet must use the
        /// same setting and secret: a value written under another is a miss.
        public var authentication: Authentication?
        /// The most freshness a value read from Redis may claim past the time it was stored (and
        /// past now, if it says it was stored later), in seconds: a longer freshness is cut to
        /// it, and so is what the local disk copy of it claims. It bounds how long a value
        /// (planted, or an origin's `max-age` of years) is served without asking the origin;
        /// once stale, the local copy is revalidated with its validators. Writes also cap the
        /// Redis TTL with it (plus ``staleWindow``). Default 7 days.
        public var maxFreshness: TimeInterval

        /// How the values in Redis are authenticated.
        public enum Authentication: Sendable, Equatable, CustomStringConvertible, CustomReflectable {
            /// HMAC-SHA-256 (RFC 2104) under a secret every member of the fleet shares, of at
            /// least ``RedisCache/Configuration/minimumSecretBytes`` random bytes (32 recommended).
            /// Keep it out of Redis and out of logs (``description`` shows its length only).
            case secret([UInt8])
            /// Values carry a MAC under an empty key: a checksum anyone can recompute, so anyone
            /// who can write to the server can plant a picture that every replica serves (with
            /// at most ``RedisCache/Configuration/maxFreshness``). Only for a server nothing else
            /// can write to (tests, one trusted host); it must be asked for by name.
            case unauthenticated

            /// `secret(<n> bytes)` or `unauthenticated`: never the secret.
            public var description: String {
                switch self {
                case .secret(let bytes): "secret(\(bytes.count) bytes)"
                case .unauthenticated: "unauthenticated"
                }
            }

            /// What `dump` and debuggers show: the ``description``, never the secret's bytes.
            public var customMirror: Mirror { Mirror(self, children: [], displayStyle: .enum) }
        }

        /// The shortest secret ``Authentication/secret(_:)`` accepts: 16 bytes.
        public static let minimumSecretBytes = 16

        /// Creates a configuration for the server at `host`:`port`.
        public init(host: String = "127.0.0.1", port: Int = 6379, keyPrefix: String = "imgpipe:v2:",
                    timeout: Duration = .milliseconds(50), maxEntryBytes: Int = 4 << 20,
                    staleWindow: TimeInterval = 86_400, maxConnections: Int = 4,
                    breakerThreshold: Int = 3, breakerCooldown: Duration = .seconds(5),
                    clusterSeeds: [Endpoint] = [], maxRedirections: Int = 3,
                    slotRefreshInterval: Duration = .seconds(1), authentication: Authentication? = nil,
                    maxFreshness: TimeInterval = 7 * 86_400) {
            self.host = host
            self.port = port
            self.keyPrefix = keyPrefix
            self.timeout = timeout
            self.maxEntryBytes = maxEntryBytes
            self.staleWindow = staleWindow
            self.maxConnections = maxConnections
            self.breakerThreshold = breakerThreshold
            self.breakerCooldown = breakerCooldown
            self.clusterSeeds = clusterSeeds
            self.maxRedirections = maxRedirections
            self.slotRefreshInterval = slotRefreshInterval
            self.authentication = authentication
            self.maxFreshness = maxFreshness
        }
    }

    /// Why ``RedisCache/init(configuration:now:)`` refused a configuration.
    public enum ConfigurationError: Error, Sendable, Equatable {
        /// ``Configuration/authentication`` is `nil`: give the fleet's secret, or
        /// `.unauthenticated` to run without one knowingly.
        case noAuthentication
        /// The secret is shorter than ``Configuration/minimumSecretBytes``.
        case secretTooShort(bytes: Int)
    }

    /// Counters for diagnostics and tests.
    public struct Statistics: Sendable, Equatable {
        /// Lookups answered with a valid entry.
        public var hits = 0
        /// Lookups that found nothing, or a value over ``Configuration/maxEntryBytes``.
        public var misses = 0
        /// Lookups that found a value over ``Configuration/maxEntryBytes`` (also counted in
        /// ``misses``): read no further than the limit, and not used.
        public var oversized = 0
        /// Values found but rejected: unauthenticated (below), or authenticated but unparsable.
        /// Each is a miss for the pipeline (the origin is asked), never copied anywhere.
        public var corrupt = 0
        /// Of ``corrupt``, the values whose code did not verify under the secret and for the URL
        /// asked (damaged, planted, written for another URL or under another secret), and values
        /// of an older, unauthenticated layout.
        public var unauthenticated = 0
        /// Commands that failed (connection refused, timeout, error reply).
        public var failures = 0
        /// Of ``failures``, connects and pipelines whose whole deadline
        /// (``Configuration/timeout``) passed.
        public var timeouts = 0
        /// Operations skipped because the breaker was open (per node in a cluster).
        public var skipped = 0
        /// `MOVED` and `ASK` redirections followed (cluster mode).
        public var redirections = 0
        /// Slot-map loads attempted (cluster mode).
        public var slotMapLoads = 0
        /// Pipelines sent: one per server (node) per round trip, whatever the number of commands.
        public var pipelines = 0
    }

    /// The configuration in use.
    public let configuration: Configuration
    private let workers: WorkerPool
    private let router: RedisRouter
    /// Fetch leases this process holds, by URL: given back when the entry is stored or abandoned.
    private let heldLeases = Mutex<[URL: String]>([:])
    private let stats = Mutex(Statistics())
    private let now: @Sendable () -> Date
    /// The HMAC keyed with the fleet's secret (an empty key when unauthenticated), copied per value.
    private let mac: HMACSHA256

    /// Creates the tier. Nothing connects until the first operation.
    /// - Parameters:
    ///   - configuration: the server or cluster, timeouts, limits and authentication.
    ///   - now: the clock for TTLs and freshness; tests pass their own.
    /// - Throws: ``ConfigurationError`` when ``Configuration/authentication`` is missing or its
    ///   secret too short: the tier refuses to start rather than trust whatever Redis holds.
    public init(configuration: Configuration, now: @escaping @Sendable () -> Date = Date.init) throws(ConfigurationError) {
        switch configuration.authentication {
        case nil: throw .noAuthentication
        case .secret(let secret):
            guard secret.count >= Configuration.minimumSecretBytes else { throw .secretTooShort(bytes: secret.count) }
            mac = HMACSHA256(key: secret)
        case .unauthenticated: mac = HMACSHA256(key: [])
        }
        self.configuration = configuration
        self.workers = WorkerPool(maxConcurrent: max(1, configuration.maxConnections), name: "RedisCache", idleTimeout: 1)
        self.router = RedisRouter(configuration: configuration)
        self.now = now
    }

    /// What happened so far.
    public var statistics: Statistics {
        var statistics = stats.withLock { $0 }
        let counts = router.counts
        statistics.failures = counts.failures
        statistics.timeouts = counts.timeouts
        statistics.skipped = counts.skipped
        statistics.redirections = counts.redirections
        statistics.slotMapLoads = counts.refreshes
        statistics.pipelines = counts.pipelines
        return statistics
    }

    // MARK: DataCaching

    /// The entry for `url` from Redis, or `nil` on a miss, a damaged value, a value over
    /// ``Configuration/maxEntryBytes`` (read no further than the limit) or any failure.
    public func cachedData(for url: URL) async -> CachedData? {
        await onWorker { [self] in
            guard let reply = router.execute([read(url)]).first ?? nil else { return nil }
            return entry(from: reply, for: url)
        } ?? nil
    }

    /// The entries of `urls` that Redis has, in one round trip per server (cluster node): the
    /// reads (`GETRANGE`, as for one URL) are pipelined per node and every node's pipeline is
    /// sent before any reply is read. A URL that is missing, damaged, oversized, or on a node
    /// that failed is absent from the result.
    public func cachedData(for urls: [URL]) async -> [URL: CachedData] {
        var unique: [URL] = []
        var seen = Set<URL>()
        for url in urls where seen.insert(url).inserted { unique.append(url) }
        guard !unique.isEmpty else { return [:] }
        return await onWorker { [self, unique] in
            var found: [URL: CachedData] = [:]
            for (url, reply) in zip(unique, router.execute(unique.map(read))) {
                if let reply, let entry = entry(from: reply, for: url) { found[url] = entry }
            }
            return found
        } ?? [:]
    }

    /// The bytes a read of `url`'s entry asks for at most: a value this long or shorter is
    /// whole; one byte more says it is over ``Configuration/maxEntryBytes``.
    private func readLimit(_ url: URL) -> Int {
        max(0, configuration.maxEntryBytes) + url.absoluteString.utf8.count + RedisEntry.metadataAllowance
    }

    /// `GETRANGE <key> 0 <limit>`: the value's first `limit + 1` bytes at most, so an oversized
    /// value is never read whole (hiredis knows a reply's length only after reading it). One
    /// command on one key: works on a cluster, needs no script. A missing key reads as empty.
    private func read(_ url: URL) -> RoutedCommand {
        let key = entryKey(url)
        return RoutedCommand(key: key, arguments: [arg("GETRANGE"), key, arg("0"), arg(String(readLimit(url)))])
    }

    private func entry(from reply: RedisReply, for url: URL) -> CachedData? {
        guard case .string(let value) = reply, !value.isEmpty else {
            stats.withLock { $0.misses += 1 }
            return nil
        }
        guard value.count <= readLimit(url) else { return oversized() }
        let entry: CachedData
        switch RedisEntry.decode(value, expecting: url, mac: mac, now: now(), maxFreshness: configuration.maxFreshness) {
        case .entry(let decoded): entry = decoded
        case .refused:
            stats.withLock {
                $0.corrupt += 1
                $0.unauthenticated += 1
            }
            return nil
        case .corrupt:
            stats.withLock { $0.corrupt += 1 }
            return nil
        }
        guard entry.data.count <= configuration.maxEntryBytes else { return oversized() }
        stats.withLock { $0.hits += 1 }
        return entry
    }

    private func oversized() -> CachedData? {
        stats.withLock {
            $0.misses += 1
            $0.oversized += 1
        }
        return nil
    }

    /// Stores the entry with a TTL of its freshness plus the stale window; an entry larger than
    /// ``Configuration/maxEntryBytes`` is not stored (and any older one is removed).
    public func storeData(_ data: Data, info: CacheEntryInfo, for url: URL) async {
        let key = entryKey(url), ttl = arg(String(ttlMilliseconds(info)))
        // `false`: too big, or validators too long to read back.
        let stored = data.count > configuration.maxEntryBytes ? false : await onWorker { [self] in
            guard let value = self.value(url, data: data, info: info), value.count <= readLimit(url) else { return false }
            _ = router.execute([RoutedCommand(key: key, arguments: [arg("SET"), key, value, arg("PX"), ttl])])
            return true
        }
        if stored == false { await removeData(for: url) }
        await releaseHeldLease(for: url)
    }

    /// The value stored for `url`: the entry, stored now, authenticated under the secret; `nil`
    /// when the info is too long to encode.
    func value(_ url: URL, data: Data, info: CacheEntryInfo, storedAt: Date? = nil) -> Data? {
        RedisEntry.encode(url: url, data: data, info: info, mac: mac, storedAt: storedAt ?? now())
    }

    /// Gives back the fetch lease this process holds for `url`, if any: the bytes did not
    /// decode and will not be stored, so another replica may fetch now.
    public func abandonStore(for url: URL) async {
        await releaseHeldLease(for: url)
    }

    /// Rewrites the entry's info (Redis has no partial update of a value: read, re-encode, write)
    /// when it holds the version `info` describes (the same `ETag` and `Last-Modified`): a 304
    /// confirms the version it was asked about. An entry of another version (an older picture
    /// whose replacement was never written to Redis) is removed instead of being relabelled,
    /// which would make every replica serve the old picture as the new one.
    public func updateInfo(_ info: CacheEntryInfo, for url: URL) async {
        guard let entry = await cachedData(for: url) else { return }
        guard entry.info.etag == info.etag, entry.info.lastModified == info.lastModified else {
            await removeData(for: url)
            return
        }
        await storeData(entry.data, info: info, for: url)
    }

    /// Removes the entry.
    public func removeData(for url: URL) async {
        _ = await run(key: entryKey(url), [arg("DEL"), entryKey(url)])
    }

    // MARK: Leases

    /// Tries to take the fetch lease for `url` for `duration`: `true` when this caller should
    /// fetch from the origin (it got the lease, or Redis cannot tell), `false` when another
    /// holder is fetching it now.
    public func acquireLease(for url: URL, token: String, duration: Duration) async -> Bool {
        let milliseconds = max(1, Int(duration.components.seconds * 1000 + duration.components.attoseconds / 1_000_000_000_000_000))
        guard let reply = await run(key: leaseKey(url), [arg("SET"), leaseKey(url), Data(token.utf8), arg("NX"), arg("PX"), arg(String(milliseconds))])
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
        guard let reply = await run(key: leaseKey(url), [arg("EXISTS"), leaseKey(url)]) else { return false }
        return reply == .integer(1)
    }

    /// The entry for `url` and whether its fetch lease is held, in one round trip (the two keys
    /// share a slot, so one node answers both, pipelined): what a replica waiting on another's
    /// fetch asks every poll. `(nil, false)` when Redis cannot tell.
    func entryAndLease(for url: URL) async -> (entry: CachedData?, leased: Bool) {
        let commands = [read(url), RoutedCommand(key: leaseKey(url), arguments: [arg("EXISTS"), leaseKey(url)])]
        return await onWorker { [self] in
            let replies = router.execute(commands)
            guard replies.count == 2 else { return (nil, false) }
            var found: CachedData?
            if let reply = replies[0] { found = entry(from: reply, for: url) }
            return (found, replies[1] == .integer(1))
        } ?? (nil, false)
    }

    /// Gives the lease back if `token` still holds it.
    public func releaseLease(for url: URL, token: String) async {
        heldLeases.withLock { if $0[url] == token { $0[url] = nil } }
        let script = "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) else return 0 end"
        _ = await run(key: leaseKey(url), [arg("EVAL"), Data(script.utf8), arg("1"), leaseKey(url), Data(token.utf8)])
    }

    // MARK: Plumbing

    func entryKey(_ url: URL) -> Data { key("e:", url) }
    func leaseKey(_ url: URL) -> Data { key("l:", url) }

    /// `<prefix><kind>{<tag>}<url>`: the tag (16 hex digits of the URL's FNV-1a 64 hash, never
    /// containing `}`) is what a cluster hashes, so the entry and lease of a URL share a slot,
    /// and URLs spread evenly over the slots whatever braces they contain.
    private func key(_ kind: String, _ url: URL) -> Data {
        let text = url.absoluteString
        let hash = RedisEntry.tagHash(text.utf8)
        let hex = String(hash, radix: 16)
        let tag = String(repeating: "0", count: 16 - hex.count) + hex
        return Data((configuration.keyPrefix + kind + "{" + tag + "}" + text).utf8)
    }

    func ttlMilliseconds(_ info: CacheEntryInfo) -> Int64 {
        let remaining = info.freshUntil.map { min(max(0, $0.timeIntervalSince(now())), max(0, configuration.maxFreshness)) } ?? 0
        let seconds = min(remaining + max(0, configuration.staleWindow), 365 * 86_400)
        return max(1000, Int64(seconds * 1000))
    }

    /// Sends one command to the node serving `key`; `nil` when its breaker is open or anything
    /// failed (an error reply counts as a failure).
    func run(key: Data, _ arguments: [Data]) async -> RedisReply? {
        await run([RoutedCommand(key: key, arguments: arguments)]).first ?? nil
    }

    /// Sends `commands` pipelined per node, off the cooperative pool; a `nil` reply is a command
    /// that failed or was skipped.
    func run(_ commands: [RoutedCommand]) async -> [RedisReply?] {
        let router = router
        return await onWorker { router.execute(commands) } ?? Array(repeating: nil, count: commands.count)
    }

    /// Runs `work` on the tier's worker pool: the hiredis I/O, and the values' codes, computed
    /// and checked there (HMAC-SHA-256 costs about 6 ms per MiB) rather than on the
    /// cooperative pool. `nil` when the pool did not run it (the task was cancelled).
    private func onWorker<T: Sendable>(_ work: @escaping @Sendable () -> T) async -> T? {
        try? await workers.run(priority: PriorityHandle(.visible), work)
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
