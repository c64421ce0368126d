import Foundation
import LoaderHTTP
import PipelineCore
import PipelineTestSupport
import Testing

/// Slow hosts cannot starve a healthy one (issue 22, point 7): the slots kept for hosts with
/// nothing running (`connectionsReservedForNewHosts`) let a new host's request start while slow
/// hosts hold every other slot. Two fixture servers on their own ports are the slow hosts (the
/// loader's host key is scheme, host and port), a third the healthy one.
@Suite("HTTPDataLoader's fairness between hosts", .timeLimit(.minutes(2)))
struct HostFairnessTests {
    /// 5 slots, 1 kept for new hosts, 3 per host: two slow hosts' held requests take the 4
    /// general slots (and would have taken all 5), and a healthy host's request completes while
    /// they still hold them. Before, the slow hosts took every slot and the healthy request
    /// waited for their answers (29 s in the issue's reproduction).
    @Test func aHealthyHostLoadsWhileSlowHostsHoldEveryGeneralSlot() async throws {
        try await withFixtureServer { slowA in
            try await withFixtureServer { slowB in
                try await withFixtureServer { healthy in
                    let loader = HTTPDataLoader(configuration: .init(maxConnectionsPerHost: 3, maxTotalConnections: 5, idleTimeout: 150, lowSpeedLimit: 0,
                                                                     totalTimeout: 150, maxRetries: 0,
                                                                     connectionsReservedForNewHosts: 1, maxQueueTime: 150))
                    var slow: [Task<DataLoadResult, any Error>] = []
                    for server in [slowA, slowB] {
                        for index in 0..<3 {
                            slow.append(Task { try await loader.load(DataLoadRequest(url: server.url("/hold/slow?i=\(index)"))) })
                        }
                    }
                    // The general slots are full: 4 transfers sent, 2 requests waiting.
                    #expect(try await eventually {
                        try await slowA.hits("/hold/slow") + slowB.hits("/hold/slow") == 4 && loader.queuedCount == 2
                    })
                    let result = try await loader.load(DataLoadRequest(url: healthy.url("/image/healthy")))
                    guard case .data(let data, _) = result else {
                        Issue.record("no data: \(result)")
                        return
                    }
                    #expect(!data.isEmpty)
                    // Loaded while the slow hosts still held their slots: none of theirs answered yet.
                    #expect(try await slowA.stats().statuses["/hold/slow"] == nil)
                    #expect(try await slowB.stats().statuses["/hold/slow"] == nil)
                    try await slowA.release("slow")
                    try await slowB.release("slow")
                    for task in slow { _ = try await task.value }
                }
            }
        }
    }
}
