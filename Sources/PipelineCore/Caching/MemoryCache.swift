import Synchronization

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// A synchronous, thread-safe LRU cache bounded by total cost (bytes), optionally by count, and
/// optionally by an entry lifetime (``ttl``).
///
/// Lookups take one lock, one hash lookup and two link updates: cheap enough for a UI thread
/// (the `MemoryCacheBenchmark` executable reports nanoseconds per hit). An entry costlier than
/// ``entryCostLimit`` is not stored, so one huge picture cannot flush everything else.
public final class MemoryCache<Key: Hashable & Sendable, Value: Sendable>: Sendable {
    /// The most total cost kept, in bytes.
    public let costLimit: Int
    /// The most entries kept, or `nil` for no count limit.
    public let countLimit: Int?
    /// The most one entry may cost and still be stored, in bytes.
    public let entryCostLimit: Int
    /// How long an entry is returned after it was stored, in seconds, or `nil` for as long as
    /// the limits keep it (Nuke's `ImageCache.ttl`). Default `nil`: a picture in memory is as
    /// current as its disk entry was when it was decoded, and the pipeline drops decoded copies
    /// itself when a revalidation brings new bytes. An expired entry is never returned; it is
    /// removed when looked up, and every insert and trim removes all expired entries, so none
    /// holds memory for long. Storing a key again starts its lifetime again; a hit does not.
    public let ttl: TimeInterval?

    @usableFromInline let state: Mutex<LRUList<Key, Value>>
    /// The clock ``ttl`` counts by.
    @usableFromInline let now: @Sendable () -> Date

    /// Creates a cache.
    /// - Parameters:
    ///   - costLimit: total budget in bytes. Default ``defaultCostLimit(cgroupRoot:physicalMemory:)``.
    ///   - countLimit: maximum entry count; default `nil` (bytes alone bound the cache).
    ///   - entryCostFraction: an entry costing more than this fraction of `costLimit` is not
    ///     stored. Default 0.1 (as Nuke).
    ///   - ttl: seconds an entry is returned after it was stored (``ttl``); default `nil`, no limit.
    ///   - now: the clock `ttl` counts by. Default `Date.init`; a test passes the clock it moves
    ///     (the one it gives ``ImagePipeline/Configuration/now``).
    public init(costLimit: Int = MemoryCache.defaultCostLimit(), countLimit: Int? = nil,
                entryCostFraction: Double = 0.1, ttl: TimeInterval? = nil,
                now: @escaping @Sendable () -> Date = { Date() }) {
        self.costLimit = max(0, costLimit)
        self.countLimit = countLimit.map { max(0, $0) }
        self.entryCostLimit = Self.fraction(min(1, max(0, entryCostFraction)), of: self.costLimit)
        self.ttl = ttl.map { max(0, $0) }
        self.now = now
        self.state = Mutex(LRUList())
    }

    /// 20% of the memory this process may use, at most 512 MiB: the budget Nuke uses on phones,
    /// which also keeps a server process from growing its cache without bound.
    ///
    /// "The memory this process may use" is the smaller of physical memory and the container's
    /// limit (``ContainerMemory/available(cgroupRoot:physicalMemory:)``): inside a 512 MiB pod on
    /// a 64 GiB host the budget is about 102 MiB, not 512 MiB.
    /// - Parameters:
    ///   - cgroupRoot: where the cgroup file system is mounted; a test passes a fake directory.
    ///   - physicalMemory: the machine's memory in bytes; default `ProcessInfo`'s.
    public static func defaultCostLimit(cgroupRoot: String = "/sys/fs/cgroup",
                                        physicalMemory: UInt64 = ProcessInfo.processInfo.physicalMemory) -> Int {
        let available = ContainerMemory.available(cgroupRoot: cgroupRoot, physicalMemory: physicalMemory)
        return Int(min(available / 5, 512 * 1024 * 1024))
    }

    /// The memory limit of this process's container in bytes, or `nil` when there is none:
    /// ``ContainerMemory/limit(cgroupRoot:)``, kept here for callers that knew it as the cache's.
    public static func containerMemoryLimit(cgroupRoot: String = "/sys/fs/cgroup") -> UInt64? {
        ContainerMemory.limit(cgroupRoot: cgroupRoot)
    }

    /// The value for `key`, marking it most recently used; `nil` on a miss or when it expired
    /// (``ttl``; then it is removed). Inlinable so callers in other modules get a specialised,
    /// generic-free lookup.
    @inlinable
    public func value(for key: Key) -> Value? {
        let time = currentTime()
        return state.withLock { $0.value(for: key, at: time) }
    }

    /// `true` when `key` has a value that has not expired (an expired one is removed); does not
    /// change the order.
    @inlinable
    public func contains(_ key: Key) -> Bool {
        let time = currentTime()
        return state.withLock { $0.contains(key, at: time) }
    }

    /// The time expiries compare with, in seconds since the reference date; without a ``ttl``
    /// the clock is not read (no entry expires).
    @inlinable
    func currentTime() -> Double {
        ttl == nil ? -Double.infinity : now().timeIntervalSinceReferenceDate
    }

    /// Stores `value` for `key` at `cost` bytes, evicting least recently used entries to stay in
    /// the limits. Does nothing (and removes any old value) when `cost` exceeds ``entryCostLimit``.
    /// Expired entries (``ttl``) go first.
    public func insert(_ value: Value, for key: Key, cost: Int) {
        let time = currentTime()
        let expiry = ttl.map { time + $0 } ?? Double.infinity
        state.withLock { list in
            list.removeExpired(at: time)
            guard cost <= entryCostLimit else {
                list.remove(key)
                return
            }
            list.insert(value, for: key, cost: max(0, cost), expiry: expiry)
            list.evict(toCost: costLimit, count: countLimit ?? Int.max)
        }
    }

    /// Removes the value for `key`.
    public func removeValue(for key: Key) {
        state.withLock { _ = $0.remove(key) }
    }

    /// Removes the entries whose key matches `predicate` (e.g. every size of one URL whose
    /// bytes changed). The predicate runs under the cache's lock: keep it cheap.
    /// - Complexity: O(n) in the number of entries.
    public func removeValues(where predicate: (Key) -> Bool) {
        state.withLock { list in
            for key in list.keysByRecency() where predicate(key) { list.remove(key) }
        }
    }

    /// Removes every entry.
    public func removeAll() {
        state.withLock { $0 = LRUList() }
    }

    /// Evicts least recently used entries until the total cost is at most `fraction` of
    /// ``costLimit``: call with 0.5 on a memory warning, 0 to empty. Clamped to 0…1.
    public func trim(toFraction fraction: Double) {
        trim(toCost: Self.fraction(min(1, max(0, fraction)), of: costLimit))
    }

    /// Evicts least recently used entries until the total cost is at most `cost` bytes; returns
    /// the bytes freed. Under memory pressure, `trim(toCost: totalCost / 2)` halves what is held
    /// whatever the limit. Expired entries (``ttl``) go first, whatever `cost`.
    @discardableResult
    public func trim(toCost cost: Int) -> Int {
        let time = currentTime()
        return state.withLock { list in
            let before = list.totalCost
            list.removeExpired(at: time)
            list.evict(toCost: max(0, cost), count: countLimit ?? Int.max)
            return before - list.totalCost
        }
    }

    /// `fraction` (0…1) of `total`, without trapping: `Double(Int.max)` rounds up past `Int.max`.
    private static func fraction(_ fraction: Double, of total: Int) -> Int {
        let value = Double(total) * fraction
        return value >= Double(Int.max) ? Int.max : Int(value)
    }

    /// The total cost of the entries, in bytes (expired ones until they are removed).
    public var totalCost: Int { state.withLock { $0.totalCost } }

    /// The number of entries (expired ones until they are removed).
    public var count: Int { state.withLock { $0.count } }

    /// The keys from most to least recently used (for tests and diagnostics). O(n).
    public var keysByRecency: [Key] { state.withLock { $0.keysByRecency() } }
}

/// A doubly linked LRU list stored in arrays (indices, not references) behind one dictionary:
/// no per-entry allocation and no reference counting on the hot path. Each entry has an expiry
/// (seconds since the reference date; infinity without a TTL).
@usableFromInline
struct LRUList<Key: Hashable, Value>: ~Copyable {
    @usableFromInline
    struct Node {
        @usableFromInline var key: Key?
        @usableFromInline var value: Value?
        @usableFromInline var cost: Int
        @usableFromInline var expiry: Double
        @usableFromInline var prev: Int
        @usableFromInline var next: Int
    }

    @usableFromInline var index: [Key: Int] = [:]
    @usableFromInline var nodes: [Node] = []
    @usableFromInline var freeSlots: [Int] = []
    @usableFromInline var head = -1  // most recently used
    @usableFromInline var tail = -1  // least recently used
    @usableFromInline var totalCost = 0
    /// The entries that expire, in the order they were stored, which is the order they expire
    /// in (``MemoryCache/ttl`` is one lifetime for all): a slot and the expiry it was given
    /// then. A pair whose slot has since been replaced, removed or reused is skipped.
    var expiries: [(slot: Int, expiry: Double)] = []
    /// Where ``expiries`` starts: the pairs before it are done.
    var expiriesStart = 0

    @usableFromInline init() {}

    @usableFromInline var count: Int { index.count }

    /// Whether `key` has an entry that has not expired at `now`; an expired one is removed.
    @inlinable mutating func contains(_ key: Key, at now: Double) -> Bool {
        guard let slot = index[key] else { return false }
        guard nodes[slot].expiry > now else {
            remove(key)
            return false
        }
        return true
    }

    /// The value of `key`, moved to the front, unless it has expired at `now` (then removed).
    @inlinable mutating func value(for key: Key, at now: Double) -> Value? {
        guard let slot = index[key] else { return nil }
        guard nodes[slot].expiry > now else {
            remove(key)
            return nil
        }
        moveToFront(slot)
        return nodes[slot].value
    }

    mutating func insert(_ value: Value, for key: Key, cost: Int, expiry: Double = .infinity) {
        if let slot = index[key] {
            totalCost += cost - nodes[slot].cost
            nodes[slot].value = value
            nodes[slot].cost = cost
            nodes[slot].expiry = expiry
            moveToFront(slot)
            if expiry.isFinite { expiries.append((slot, expiry)) }
            return
        }
        let node = Node(key: key, value: value, cost: cost, expiry: expiry, prev: -1, next: head)
        let slot: Int
        if let reused = freeSlots.popLast() {
            slot = reused
            nodes[slot] = node
        } else {
            slot = nodes.count
            nodes.append(node)
        }
        if head >= 0 { nodes[head].prev = slot }
        head = slot
        if tail < 0 { tail = slot }
        index[key] = slot
        totalCost += cost
        if expiry.isFinite { expiries.append((slot, expiry)) }
    }

    @usableFromInline @discardableResult
    mutating func remove(_ key: Key) -> Value? {
        guard let slot = index.removeValue(forKey: key) else { return nil }
        return release(slot)
    }

    /// Removes every entry expired at `now`, oldest first from ``expiries``.
    /// - Complexity: O(1) amortised: each stored expiry is looked at once.
    mutating func removeExpired(at now: Double) {
        while expiriesStart < expiries.count, expiries[expiriesStart].expiry <= now {
            let (slot, expiry) = expiries[expiriesStart]
            expiriesStart += 1
            if let key = nodes[slot].key, nodes[slot].expiry == expiry { remove(key) }
        }
        if expiriesStart == expiries.count {
            expiries.removeAll(keepingCapacity: true)
            expiriesStart = 0
        } else if expiriesStart > 1024, expiriesStart * 2 > expiries.count {
            expiries.removeFirst(expiriesStart)
            expiriesStart = 0
        }
    }

    mutating func evict(toCost costLimit: Int, count countLimit: Int) {
        while tail >= 0, totalCost > costLimit || index.count > countLimit {
            if let key = nodes[tail].key { index.removeValue(forKey: key) }
            release(tail)
        }
    }

    func keysByRecency() -> [Key] {
        var keys: [Key] = []
        var slot = head
        while slot >= 0 {
            if let key = nodes[slot].key { keys.append(key) }
            slot = nodes[slot].next
        }
        return keys
    }

    @discardableResult
    private mutating func release(_ slot: Int) -> Value? {
        unlink(slot)
        let value = nodes[slot].value
        totalCost -= nodes[slot].cost
        nodes[slot] = Node(key: nil, value: nil, cost: 0, expiry: .infinity, prev: -1, next: -1)
        freeSlots.append(slot)
        return value
    }

    @inlinable mutating func unlink(_ slot: Int) {
        let prev = nodes[slot].prev, next = nodes[slot].next
        if prev >= 0 { nodes[prev].next = next } else { head = next }
        if next >= 0 { nodes[next].prev = prev } else { tail = prev }
        nodes[slot].prev = -1
        nodes[slot].next = -1
    }

    @inlinable mutating func moveToFront(_ slot: Int) {
        guard slot != head else { return }
        unlink(slot)
        nodes[slot].next = head
        if head >= 0 { nodes[head].prev = slot }
        head = slot
        if tail < 0 { tail = slot }
    }
}
