@testable import CacheRedis
import Foundation
import PipelineCore
import PipelineTestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

@Suite("Shared cache tier on Redis Cluster", .serialized)
struct ClusterTests {
    /// Distinct bytes per URL, so a mix-up between keys shows.
    static func bytes(_ index: Int) -> Data { Data("picture \(index) ".utf8) + Data(repeating: UInt8(index & 0xFF), count: 200 + index) }
    static let info = CacheEntryInfo(etag: "\"v1\"", lastModified: nil, freshUntil: Date().addingTimeInterval(600))
    static func url(_ index: Int) -> URL { URL(string: "http://127.0.0.1:1/cluster/\(index).png")! }

    static func tier(_ cluster: RedisCluster, seeds: Int = 1) throws -> RedisCache {
        // A generous timeout: this is about routing, and a starved machine must not turn a slow
        // answer into a miss. One seed: the others are found from the slot map.
        try RedisCache(configuration: .init(timeout: .seconds(2), breakerCooldown: .seconds(30),
                                            clusterSeeds: Array(cluster.endpoints.prefix(seeds)), authentication: .secret(testSecret)))
    }

    @Test func slotsAreCRC16OfTheHashTagAsRedisComputesThem() throws {
        #expect(ClusterSlot.crc16(Array("123456789".utf8)) == 0x31C3)  // the spec's check value
        #expect(ClusterSlot.of(Data("{user1000}.following".utf8)) == ClusterSlot.of(Data("{user1000}.followers".utf8)))
        let moved = RedisRouter.Redirect("MOVED 3999 127.0.0.1:6381")
        #expect(moved?.asking == false && moved?.slot == 3999 && moved?.host == "127.0.0.1" && moved?.port == 6381)
        #expect(RedisRouter.Redirect("ASK 3999 127.0.0.1:6381")?.asking == true)
        #expect(RedisRouter.Redirect("MOVED 99999 127.0.0.1:6381") == nil)
        #expect(RedisRouter.Redirect("ERR nope") == nil)
        // The Running a fleet article's configuration, as printed (nothing connects until the first operation).
        let tier = try RedisCache(configuration: .init(clusterSeeds: [
            .init(host: "10.0.0.5", port: 6379), .init(host: "10.0.0.6", port: 6379)], authentication: .secret(testSecret)))
        #expect(tier.configuration.clusterSeeds.count == 2 && tier.statistics == RedisCache.Statistics())
    }

    @Test func entriesSpreadOverTheNodesComeBackIntactAndMultiGetAgrees() async throws {
        try await RedisCluster.with { cluster in
            let tier = try Self.tier(cluster)
            let raw = try cluster.connection(0)
            // Our slot for a key is the one Redis computes, and a URL's entry and lease share it.
            for index in 0..<20 {
                let key = tier.entryKey(Self.url(index))
                guard case .integer(let slot) = try raw.command([arg("CLUSTER"), arg("KEYSLOT"), key]) else {
                    Issue.record("no KEYSLOT")
                    return
                }
                #expect(ClusterSlot.of(key) == Int(slot))
                #expect(ClusterSlot.of(tier.leaseKey(Self.url(index))) == Int(slot))
            }
            // The spec's hash-tag edge cases, against the server's own answer.
            for text in ["foo{}{bar}", "foo{{bar}}zap", "foo{bar}{zap}", "{", "}{", "a{b", "plain"] {
                let key = Data(text.utf8)
                #expect(try raw.command([arg("CLUSTER"), arg("KEYSLOT"), key]) == .integer(Int64(ClusterSlot.of(key))), "\(text)")
            }
            for index in 0..<30 { await tier.storeData(Self.bytes(index), info: Self.info, for: Self.url(index)) }
            var perNode = [Int](repeating: 0, count: cluster.nodes.count)
            for index in 0..<cluster.nodes.count {
                if case .integer(let keys) = try cluster.connection(index).command([arg("DBSIZE")]) { perNode[index] = Int(keys) }
            }
            #expect(perNode.allSatisfy { $0 > 0 } && perNode.reduce(0, +) == 30, "keys per node: \(perNode)")
            var single: [URL: CachedData] = [:]
            for index in 0..<30 {
                let entry = await tier.cachedData(for: Self.url(index))
                #expect(entry?.data == Self.bytes(index) && entry?.info.etag == "\"v1\"", "entry \(index)")
                single[Self.url(index)] = entry
            }
            let urls = (0..<34).map(Self.url)  // four that were never stored
            let pipelinesBefore = tier.statistics.pipelines
            let batch = await tier.cachedData(for: urls + urls.prefix(3))  // duplicates are fine
            #expect(tier.statistics.pipelines - pipelinesBefore == cluster.nodes.count, "one pipeline per node")
            #expect(batch.mapValues(\.data) == single.mapValues(\.data))
            #expect(batch.mapValues(\.info) == single.mapValues(\.info))
            #expect(batch.count == 30)
            #expect(tier.statistics.failures == 0 && tier.statistics.redirections == 0)
            #expect(await tier.cachedData(for: []).isEmpty)
            // A waiting replica's poll (entry and lease, one slot) is one pipeline to one node.
            #expect(await tier.acquireLease(for: Self.url(40), token: "t", duration: .seconds(30)))
            let before = tier.statistics.pipelines
            let waiting = await tier.entryAndLease(for: Self.url(40))
            #expect(waiting.entry == nil && waiting.leased)
            let done = await tier.entryAndLease(for: Self.url(3))
            #expect(done.entry?.data == Self.bytes(3) && !done.leased)
            #expect(tier.statistics.pipelines - before == 2)
        }
    }

    @Test func aReshardedSlotIsFollowedThroughASKAndMOVED() async throws {
        try await RedisCluster.with { cluster in
            let tier = try Self.tier(cluster)
            let url = Self.url(7)
            await tier.storeData(Self.bytes(7), info: Self.info, for: url)
            let key = tier.entryKey(url)
            let slot = ClusterSlot.of(key)
            guard let source = try cluster.holder(of: key) else {
                Issue.record("the entry is on no node")
                return
            }
            let target = (source + 1) % cluster.nodes.count
            guard let sourceID = try cluster.nodeID(source), let targetID = try cluster.nodeID(target) else {
                Issue.record("no node IDs")
                return
            }
            let from = try cluster.connection(source), to = try cluster.connection(target)
            // Migration under way: the key already moved, the slot not yet (the source answers ASK).
            #expect(try to.command([arg("CLUSTER"), arg("SETSLOT"), arg(String(slot)), arg("IMPORTING"), arg(sourceID)]) == .status("OK"))
            #expect(try from.command([arg("CLUSTER"), arg("SETSLOT"), arg(String(slot)), arg("MIGRATING"), arg(targetID)]) == .status("OK"))
            let migrate = try from.command([arg("MIGRATE"), arg("127.0.0.1"), arg(String(cluster.nodes[target].port)), arg(""),
                                            arg("0"), arg("5000"), arg("KEYS"), key])
            #expect(migrate == .status("OK"))
            #expect(try cluster.holder(of: key) == nil)  // a plain EXISTS on the target is refused (MOVED) until ASKING
            let asked = await tier.cachedData(for: url)
            #expect(asked?.data == Self.bytes(7))
            #expect(tier.statistics.redirections == 1)
            // Migration done: every node assigns the slot to the target; the tier's map is stale.
            for index in cluster.nodes.indices {
                _ = try cluster.connection(index).command([arg("CLUSTER"), arg("SETSLOT"), arg(String(slot)), arg("NODE"), arg(targetID)])
            }
            #expect(try cluster.holder(of: key) == target)
            let moved = await tier.cachedData(for: url)
            #expect(moved?.data == Self.bytes(7))
            #expect(tier.statistics.redirections == 2)
            // The map learned the new owner: no more redirections, for single and multi-gets.
            #expect(await tier.cachedData(for: url)?.data == Self.bytes(7))
            #expect(await tier.cachedData(for: [url, Self.url(8)])[url]?.data == Self.bytes(7))
            #expect(tier.statistics.redirections == 2)
            #expect(tier.statistics.failures == 0)
        }
    }

    @Test func aNodeDownIsAMissForItsKeysOnlyAndNeverFailsARequest() async throws {
        try await withServers { _, origin in
            try await RedisCluster.with { cluster in
                // A long timeout: a live node must not time out on a starved machine, and the dead
                // one costs nothing (a loopback connect to a closed port is refused at once).
                let tier = try RedisCache(configuration: .init(timeout: .seconds(2), breakerCooldown: .seconds(30),
                                                               clusterSeeds: cluster.endpoints, authentication: .secret(testSecret)))
                for index in 0..<30 { await tier.storeData(Self.bytes(index), info: Self.info, for: Self.url(index)) }
                var holders: [Int: Int] = [:]
                for index in 0..<30 { holders[index] = try cluster.holder(of: tier.entryKey(Self.url(index))) }
                let dead = 1
                #expect(holders.values.contains(dead))
                await cluster.nodes[dead].stop()
                for round in 0..<2 {  // before the breaker opened and after
                    for index in 0..<30 {
                        let entry = await tier.cachedData(for: Self.url(index))
                        if holders[index] == dead {
                            #expect(entry == nil, "entry \(index), round \(round)")
                        } else {
                            #expect(entry?.data == Self.bytes(index), "entry \(index), round \(round)")
                        }
                    }
                    let batch = await tier.cachedData(for: (0..<30).map(Self.url))
                    #expect(Set(batch.keys) == Set((0..<30).filter { holders[$0] != dead }.map(Self.url)))
                }
                #expect(tier.statistics.failures > 0)
                #expect(tier.statistics.skipped > 0, "the dead node's breaker opened")

                // Whole pipelines on the cluster tier: every request succeeds, whichever node its URL maps to.
                let replica = try Replica(configuration: .init(timeout: .seconds(2), breakerCooldown: .seconds(30),
                                                               clusterSeeds: cluster.endpoints, authentication: .secret(testSecret)))
                defer { replica.remove() }
                for index in 0..<8 {
                    _ = try await replica.pipeline.image(for: ImageRequest(url: origin.url("/image/c\(index)?maxage=600")))
                }
                // Exactly the URLs whose slot a live node serves were published.
                let live = (dead + 1) % cluster.nodes.count
                let map = RedisRouter.parseSlots(try cluster.connection(live).command([arg("CLUSTER"), arg("SLOTS")]), askedHost: "127.0.0.1") ?? []
                let urls = (0..<8).map { origin.url("/image/c\($0)?maxage=600") }
                let expected = urls.filter { url in
                    let slot = ClusterSlot.of(replica.tier.entryKey(url))
                    return map.contains { $0.range.contains(slot) && $0.port != cluster.nodes[dead].port }
                }
                let stored = await replica.tier.cachedData(for: urls)
                #expect(Set(stored.keys) == Set(expected))
                let hits = try await origin.stats().hits
                for index in 0..<8 { #expect(hits["/image/c\(index)"] == 1, "c\(index)") }
            }
        }
    }

    /// A node whose connects hang (its port holds a full accept queue: the kernel drops every
    /// SYN) is a miss for its keys only. The live nodes' replies arrive while a batch waits out
    /// the dead node's connect; they are read after their own deadline passed, and are answers:
    /// they used to count as timeouts, and opened the live nodes' breakers too.
    @Test func aNodeWhoseConnectsHangDoesNotTimeOutTheLiveNodes() async throws {
        try await RedisCluster.with { cluster in
            let tier = try RedisCache(configuration: .init(timeout: .milliseconds(500), breakerThreshold: 1000,
                                                           clusterSeeds: cluster.endpoints, authentication: .secret(testSecret)))
            for index in 0..<30 { await tier.storeData(Self.bytes(index), info: Self.info, for: Self.url(index)) }
            var holders: [Int: Int] = [:]
            for index in 0..<30 { holders[index] = try cluster.holder(of: tier.entryKey(Self.url(index))) }
            let dead = 1, port = cluster.nodes[dead].port
            #expect(holders.values.contains(dead))
            await cluster.nodes[dead].stop()
            let listener = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            defer { close(listener) }
            var reuse: Int32 = 1
            setsockopt(listener, SOL_SOCKET, SO_REUSEADDR, &reuse, socklen_t(MemoryLayout<Int32>.size))
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_port = UInt16(port).bigEndian
            address.sin_addr.s_addr = inet_addr("127.0.0.1")
            let bound = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(listener, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
            }
            try #require(bound == 0 && listen(listener, 0) == 0)
            // One connection fills a backlog of 0; nothing ever accepts it.
            let filler = try RedisConnection(host: "127.0.0.1", port: port, timeout: .seconds(5))
            defer { withExtendedLifetime(filler) {} }
            let live = Set((0..<30).filter { holders[$0] != dead }.map(Self.url))
            for round in 0..<2 {
                let batch = await tier.cachedData(for: (0..<30).map(Self.url))
                #expect(Set(batch.keys) == live, "round \(round): \(tier.statistics)")
            }
        }
    }
}
