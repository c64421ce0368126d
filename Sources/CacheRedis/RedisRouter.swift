import Synchronization

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// One command and the key it touches (which decides the cluster node that serves it).
struct RoutedCommand: Sendable {
    let key: Data
    let arguments: [Data]
}

/// One Redis server: its idle connections and its own circuit breaker, so that one node down
/// in a cluster never stops the others from answering.
final class RedisNode: Sendable {
    let host: String
    let port: Int
    private let idle = Mutex<[RedisConnection]>([])
    private let breaker: Mutex<Breaker>
    private let maxIdle: Int
    private let timeout: Duration

    init(host: String, port: Int, timeout: Duration, maxIdle: Int, breaker: Breaker) {
        self.host = host
        self.port = port
        self.timeout = timeout
        self.maxIdle = maxIdle
        self.breaker = Mutex(breaker)
    }

    var address: String { "\(host):\(port)" }

    func allows() -> Bool { breaker.withLock { $0.allows(ContinuousClock.now) } }
    func record(success: Bool) { breaker.withLock { $0.record(success: success, at: ContinuousClock.now) } }

    /// A pooled connection, or a new one connected within the timeout.
    func checkOut() throws(RedisFailure) -> RedisConnection {
        if let pooled = idle.withLock({ $0.popLast() }) { return pooled }
        return try RedisConnection(host: host, port: port, timeout: timeout)
    }

    /// Returns a healthy connection to the pool (a broken one is dropped, which frees it).
    func checkIn(_ connection: RedisConnection) {
        guard !connection.isBroken else { return }
        idle.withLock { pool in
            if pool.count < maxIdle { pool.append(connection) }
        }
    }
}

/// The Redis Cluster key slot: CRC16 (XMODEM: polynomial 0x1021, initial value 0) of the key,
/// or of its hash tag (the bytes between the first `{` and the next `}`, when not empty),
/// modulo 16384, as the Redis Cluster specification defines it.
enum ClusterSlot {
    static let count = 16384

    static func of(_ key: Data) -> Int {
        let bytes = [UInt8](key)
        var hashed = bytes[...]
        if let open = bytes.firstIndex(of: UInt8(ascii: "{")),
           let close = bytes[(open + 1)...].firstIndex(of: UInt8(ascii: "}")), close > open + 1 {
            hashed = bytes[(open + 1)..<close]
        }
        return Int(crc16(hashed)) % count
    }

    static func crc16<C: Collection>(_ bytes: C) -> UInt16 where C.Element == UInt8 {
        var crc: UInt16 = 0
        for byte in bytes {
            crc ^= UInt16(byte) << 8
            for _ in 0..<8 { crc = crc & 0x8000 != 0 ? (crc << 1) ^ 0x1021 : crc << 1 }
        }
        return crc
    }
}

/// Sends commands to the node that serves their key: the one server, or in a cluster the
/// master of the key's slot (from `CLUSTER SLOTS`), following `MOVED` and `ASK` redirections
/// a bounded number of times. Blocking: call it on a worker thread.
final class RedisRouter: Sendable {
    /// What the router saw, for ``RedisCache/Statistics``.
    struct Counters {
        var failures = 0
        /// Failures that were a deadline passing (connect or command).
        var timeouts = 0
        var skipped = 0
        var redirections = 0
        var refreshes = 0
        var pipelines = 0
    }

    private struct Topology {
        var nodes: [String: RedisNode] = [:]
        /// The master of each slot, when known.
        var slots: [RedisNode?] = []
        var loaded = false
        var refreshing = false
        var lastRefresh: ContinuousClock.Instant?
        var wantsRefresh = false
    }

    let isCluster: Bool
    private let seeds: [RedisNode]
    private let topology: Mutex<Topology>
    private let counters = Mutex(Counters())
    private let maxRedirections: Int
    private let minimumRefreshInterval: Duration
    /// The whole deadline of each node's pipeline (and of `CLUSTER SLOTS`).
    private let timeout: Duration
    private let makeNode: @Sendable (String, Int) -> RedisNode

    init(configuration: RedisCache.Configuration) {
        let timeout = configuration.timeout
        self.timeout = timeout
        let maxIdle = max(1, configuration.maxConnections)
        let breaker = Breaker(threshold: max(1, configuration.breakerThreshold), cooldown: configuration.breakerCooldown)
        makeNode = { host, port in RedisNode(host: host, port: port, timeout: timeout, maxIdle: maxIdle, breaker: breaker) }
        isCluster = !configuration.clusterSeeds.isEmpty
        let endpoints = isCluster ? configuration.clusterSeeds : [.init(host: configuration.host, port: configuration.port)]
        var topology = Topology()
        var seeds: [RedisNode] = []
        for endpoint in endpoints {
            let node = makeNode(endpoint.host, endpoint.port)
            guard topology.nodes[node.address] == nil else { continue }
            topology.nodes[node.address] = node
            seeds.append(node)
        }
        self.seeds = seeds
        self.topology = Mutex(topology)
        maxRedirections = max(0, configuration.maxRedirections)
        minimumRefreshInterval = configuration.slotRefreshInterval
    }

    var counts: Counters { counters.withLock { $0 } }

    /// Sends `commands` (grouped per node, each group pipelined, every node's group written
    /// before any reply is read: one round trip for all of them) and returns each reply, or
    /// `nil` for a command whose node failed, was skipped by its breaker, answered an error,
    /// or redirected more than the configured number of times.
    func execute(_ commands: [RoutedCommand]) -> [RedisReply?] {
        var results = [RedisReply?](repeating: nil, count: commands.count)
        if isCluster { refreshIfNeeded(force: false) }
        var pending = commands.indices.map { Pending(index: $0, node: node(for: commands[$0].key), asking: false) }
        var hop = 0
        while !pending.isEmpty {
            var redirected: [Pending] = []
            var groups: [ObjectIdentifier: (node: RedisNode, items: [Pending])] = [:]
            var order: [ObjectIdentifier] = []
            for item in pending {
                let id = ObjectIdentifier(item.node)
                if groups[id] == nil {
                    groups[id] = (item.node, [])
                    order.append(id)
                }
                groups[id]?.items.append(item)
            }
            // Write every node's pipeline, then read: the nodes work in parallel.
            var inFlight: [(node: RedisNode, connection: RedisConnection, items: [Pending], deadline: ContinuousClock.Instant)] = []
            for id in order {
                guard let (node, items) = groups[id] else { continue }
                guard node.allows() else {
                    counters.withLock { $0.skipped += 1 }
                    continue
                }
                let connection: RedisConnection
                do { connection = try node.checkOut() } catch {
                    failed(node, error)
                    continue
                }
                // The pipeline's whole deadline: written and every reply read within the timeout.
                let deadline = ContinuousClock.now.advanced(by: timeout)
                var wire: [[Data]] = []
                for item in items {
                    if item.asking { wire.append([arg("ASKING")]) }
                    wire.append(commands[item.index].arguments)
                }
                do {
                    try connection.append(wire)
                    try connection.flush(until: deadline)
                    inFlight.append((node, connection, items, deadline))
                    counters.withLock { $0.pipelines += 1 }
                } catch {
                    failed(node, error)
                }
            }
            for (node, connection, items, deadline) in inFlight {
                let wireCount = items.count + items.count(where: \.asking)
                let replies: [RedisReply]
                do { replies = try connection.replies(wireCount, until: deadline) } catch {
                    failed(node, error)  // the connection is dropped (freed) with its stream out of step
                    continue
                }
                node.checkIn(connection)
                var position = 0
                var errors = false
                for item in items {
                    if item.asking { position += 1 }  // ASKING's +OK
                    let reply = replies[position]
                    position += 1
                    if case .error(let message) = reply {
                        if isCluster, let redirect = Redirect(message) {
                            let target = self.node(at: redirect.host, redirect.port)
                            if !redirect.asking { moved(slot: redirect.slot, to: target) }
                            counters.withLock { $0.redirections += 1 }
                            redirected.append(Pending(index: item.index, node: target, asking: redirect.asking))
                        } else {
                            errors = true
                        }
                        continue
                    }
                    results[item.index] = reply
                }
                node.record(success: !errors)
                if errors { counters.withLock { $0.failures += 1 } }
            }
            hop += 1
            if isCluster, topology.withLock({ $0.wantsRefresh }) { refreshIfNeeded(force: true) }
            pending = hop <= maxRedirections ? redirected : []
        }
        return results
    }

    private struct Pending {
        let index: Int
        let node: RedisNode
        let asking: Bool
    }

    /// A `MOVED <slot> <host>:<port>` or `ASK <slot> <host>:<port>` error reply.
    struct Redirect: Equatable {
        let asking: Bool
        let slot: Int
        let host: String
        let port: Int

        init?(_ message: String) {
            let parts = message.split(separator: " ")
            guard parts.count == 3, parts[0] == "MOVED" || parts[0] == "ASK",
                  let slot = Int(parts[1]), (0..<ClusterSlot.count).contains(slot),
                  let colon = parts[2].lastIndex(of: ":"), let port = Int(parts[2][parts[2].index(after: colon)...]),
                  (1...65535).contains(port)
            else { return nil }
            asking = parts[0] == "ASK"
            self.slot = slot
            host = String(parts[2][..<colon])
            self.port = port
            guard !host.isEmpty else { return nil }
        }
    }

    private func failed(_ node: RedisNode, _ failure: RedisFailure) {
        node.record(success: false)
        counters.withLock {
            $0.failures += 1
            if case .timeout = failure { $0.timeouts += 1 }
        }
        // In a cluster a failed master may have been replaced by its replica: look again.
        if isCluster { topology.withLock { $0.wantsRefresh = true } }
    }

    /// The node serving `key`: the one server; in a cluster, the slot's master when known,
    /// else a seed (which answers `MOVED` to the right one).
    private func node(for key: Data) -> RedisNode {
        guard isCluster else { return seeds[0] }
        let slot = ClusterSlot.of(key)
        return topology.withLock { $0.slots.isEmpty ? nil : $0.slots[slot] } ?? seeds[slot % seeds.count]
    }

    private func node(at host: String, _ port: Int) -> RedisNode {
        topology.withLock { topology in
            let address = "\(host):\(port)"
            if let known = topology.nodes[address] { return known }
            let node = makeNode(host, port)
            topology.nodes[address] = node
            return node
        }
    }

    private func moved(slot: Int, to node: RedisNode) {
        topology.withLock { topology in
            if topology.slots.count != ClusterSlot.count { topology.slots = Array(repeating: nil, count: ClusterSlot.count) }
            topology.slots[slot] = node
            topology.wantsRefresh = true
        }
    }

    /// Reloads the slot map with `CLUSTER SLOTS` from the first node that answers, when it was
    /// never loaded (`force` false) or was found out of date (`force` true); at most once per
    /// refresh interval, and by one thread at a time (the others route with the old map).
    private func refreshIfNeeded(force: Bool) {
        let now = ContinuousClock.now
        let candidates: [RedisNode]? = topology.withLock { topology in
            guard force || !topology.loaded, !topology.refreshing else { return nil }
            if let last = topology.lastRefresh, now - last < minimumRefreshInterval { return nil }
            topology.refreshing = true
            topology.lastRefresh = now
            topology.wantsRefresh = false
            // Nodes of the current map first (they know the newest layout), then the seeds that
            // are not among them (each node is asked once: a dead one costs a connect timeout).
            let known = topology.nodes.values.sorted { $0.address < $1.address }
            return known + seeds.filter { seed in !known.contains { $0.address == seed.address } }
        }
        guard let candidates else { return }
        var map: [(range: ClosedRange<Int>, host: String, port: Int)]?
        for node in candidates where node.allows() {
            let reply: RedisReply
            let connection: RedisConnection
            do {
                connection = try node.checkOut()
                reply = try connection.command([arg("CLUSTER"), arg("SLOTS")], timeout: timeout)
            } catch {
                failed(node, error)
                continue
            }
            node.checkIn(connection)
            if let parsed = Self.parseSlots(reply, askedHost: node.host), !parsed.isEmpty {
                map = parsed
                break
            }
        }
        counters.withLock { $0.refreshes += 1 }
        let nodes = map.map { $0.map { ($0.range, node(at: $0.host, $0.port)) } }
        topology.withLock { topology in
            topology.refreshing = false
            guard let nodes else { return }
            var slots = [RedisNode?](repeating: nil, count: ClusterSlot.count)
            for (range, node) in nodes {
                for slot in range { slots[slot] = node }
            }
            topology.slots = slots
            topology.loaded = true
        }
    }

    /// The slot ranges and their masters from a `CLUSTER SLOTS` reply: each element is
    /// `[start, end, [host, port, id, ...], replicas...]`. An empty host means the node asked;
    /// `?` (unknown endpoint) and malformed elements are skipped.
    static func parseSlots(_ reply: RedisReply, askedHost: String) -> [(range: ClosedRange<Int>, host: String, port: Int)]? {
        guard case .array(let ranges) = reply else { return nil }
        var result: [(range: ClosedRange<Int>, host: String, port: Int)] = []
        for case .array(let element) in ranges {
            guard element.count >= 3, case .integer(let start) = element[0], case .integer(let end) = element[1],
                  0 <= start, start <= end, end < ClusterSlot.count,
                  case .array(let master) = element[2], master.count >= 2,
                  case .string(let hostBytes) = master[0], case .integer(let port) = master[1], (1...65535).contains(port)
            else { continue }
            var host = String(decoding: hostBytes, as: UTF8.self)
            if host.isEmpty { host = askedHost }
            guard host != "?" else { continue }
            result.append((Int(start)...Int(end), host, Int(port)))
        }
        return result
    }
}
