@testable import CacheRedis
import Foundation
import PipelineTestSupport

#if canImport(Glibc)
import Glibc
#endif

/// A real Redis Cluster of masters on 127.0.0.1: `redis-server --cluster-enabled yes`
/// processes on free ports with their node files in a temporary directory, joined by
/// `redis-cli --cluster create` (Debian `redis-tools`).
final class RedisCluster: Sendable {
    let nodes: [RedisServer]
    let directory: URL

    enum Failure: Error { case noRedisCLI, createFailed(String), notReady(String) }

    static var cli: String? {
        ["/usr/bin/redis-cli", "/usr/local/bin/redis-cli"].first { FileManager.default.isExecutableFile(atPath: $0) }
    }

    private init(nodes: [RedisServer], directory: URL) {
        self.nodes = nodes
        self.directory = directory
    }

    /// The node addresses, as seeds for ``RedisCache/Configuration``.
    var endpoints: [RedisCache.Configuration.Endpoint] { nodes.map { .init(host: "127.0.0.1", port: $0.port) } }

    /// Runs `body` with a fresh cluster of `count` masters, stopping every process and removing
    /// the directory on every path (a start that fails half-way too).
    static func with(count: Int = 3, _ body: (RedisCluster) async throws -> Void) async throws {
        guard RedisServer.executable != nil, let cli else {
            print("CacheRedisTests: cluster tests skipped, redis-server or redis-cli is not installed (scripts/bootstrap installs them)")
            return
        }
        try await withTemporaryDirectory(prefix: "RedisCluster") { directory in
            var nodes: [RedisServer] = []
            do {
                for index in 0..<count {
                    // No full coverage: with a master down (and no replica to take over) the other
                    // masters keep serving their slots instead of refusing everything. The bus port
                    // is chosen too: the default (port + 10000) is out of range for most free ports.
                    // A few attempts: another process may take a free port before the server binds it.
                    var attempt = 0
                    while true {
                        do {
                            nodes.append(try await RedisServer.start(arguments: [
                                "--cluster-enabled", "yes", "--cluster-port", String(try RedisServer.freePort()),
                                "--cluster-config-file", directory.appendingPathComponent("nodes-\(index)-\(attempt).conf").path,
                                "--cluster-node-timeout", "5000", "--cluster-require-full-coverage", "no", "--dir", directory.path,
                            ]))
                            break
                        } catch RedisServer.Failure.didNotStart where attempt < 2 {
                            attempt += 1
                        }
                    }
                }
                let cluster = RedisCluster(nodes: nodes, directory: directory)
                try await runCLI(cli, ["--cluster", "create"] + nodes.map { "127.0.0.1:\($0.port)" } + ["--cluster-replicas", "0", "--cluster-yes"])
                try await cluster.waitUntilReady()
                try await body(cluster)
            } catch {
                for node in nodes { await node.stop() }
                throw error
            }
            for node in nodes { await node.stop() }
        }
    }

    /// Waits until every node reports `cluster_state:ok` and knows all slots (20 s at most).
    private func waitUntilReady() async throws {
        var last = ""
        for node in nodes {
            let ready = await eventually(timeout: 20) {
                guard let connection = try? RedisConnection(host: "127.0.0.1", port: node.port, timeout: .seconds(2)),
                      case .string(let info) = try? connection.command([arg("CLUSTER"), arg("INFO")]) else { return false }
                last = String(decoding: info, as: UTF8.self)
                return last.contains("cluster_state:ok") && last.contains("cluster_slots_assigned:16384")
                    && last.contains("cluster_known_nodes:\(nodes.count)")
            }
            guard ready else { throw Failure.notReady(last) }
        }
    }

    /// A new connection to node `index`.
    func connection(_ index: Int) throws -> RedisConnection {
        try RedisConnection(host: "127.0.0.1", port: nodes[index].port, timeout: .seconds(5))
    }

    /// The node (index) that holds `key` now: the one that answers `EXISTS` with 1.
    func holder(of key: Data) throws -> Int? {
        for index in nodes.indices where try connection(index).command([arg("EXISTS"), key]) == .integer(1) {
            return index
        }
        return nil
    }

    /// Node `index`'s cluster node ID.
    func nodeID(_ index: Int) throws -> String? {
        guard case .string(let id) = try connection(index).command([arg("CLUSTER"), arg("MYID")]) else { return nil }
        return String(decoding: id, as: UTF8.self)
    }

    /// Runs redis-cli with a 20 s deadline (killed after it), on a thread of its own.
    private static func runCLI(_ cli: String, _ arguments: [String]) async throws {
        let result = try await ExternalTool.run(cli, arguments, timeout: 20)
        guard result.status == 0, !result.terminatedBySignal else {
            throw Failure.createFailed(result.stdout + result.stderr)
        }
    }
}
