import Foundation
@testable import LoaderHTTP
import PipelineCore
import PipelineTestSupport
import Testing

/// Slow hosts cannot starve a healthy one (issue 22, point 7): the slots kept for hosts with
/// nothing running (`connectionsReservedForNewHosts`) let a new host's request start while slow
/// hosts hold every other slot. Two fixture servers on their own ports are the slow hosts (the
/// loader's host key is scheme, host and port), a third the healthy one.
@Suite("HTTPDataLoader's fairness between hosts", .timeLimit(.minutes(2)))
struct HostFairnessTests {
    /// A loader of two slots, one per host, none kept for new hosts, whose transfers give their
    /// slots up after 0.2 s.
    func longTransferLoader(maxLongTransfers: Int) -> HTTPDataLoader {
        HTTPDataLoader(configuration: .init(maxConnectionsPerHost: 1, maxTotalConnections: 2, idleTimeout: 150, lowSpeedLimit: 0,
                                            totalTimeout: 150, maxRetries: 0, connectionsReservedForNewHosts: 0, maxQueueTime: 150,
                                            longTransferTime: 0.2, maxLongTransfers: maxLongTransfers))
    }

    /// `healthy`'s picture loads through `loader` while the `slow` servers still hold their
    /// requests: none of theirs answered yet.
    func expectLoads(_ healthy: FixtureServer, with loader: HTTPDataLoader, whileHeldBy slow: [FixtureServer]) async throws {
        let result = try await loader.load(DataLoadRequest(url: healthy.url("/image/healthy")))
        guard case .data(let data, _) = result else {
            Issue.record("no data: \(result)")
            return
        }
        #expect(!data.isEmpty)
        for server in slow { #expect(try await server.stats().statuses["/hold/slow"] == nil) }
    }

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
                    try await expectLoads(healthy, with: loader, whileHeldBy: [slowA, slowB])
                    try await slowA.release("slow")
                    try await slowB.release("slow")
                    for task in slow { _ = try await task.value }
                }
            }
        }
    }

    /// A queue full of one slow host's requests makes room for another host's by dropping the
    /// slow host's newest (which fails as overloaded): a flood of requests to slow hosts cannot
    /// keep a healthy host's request out of the queue. Before, the healthy request was refused
    /// as overloaded (the load benchmark's healthy host got no answer at all).
    @Test func aFullQueueDropsFromTheLongestHostForAnother() async throws {
        try await withFixtureServer { slow in
            try await withFixtureServer { healthy in
                let loader = HTTPDataLoader(configuration: .init(maxConnectionsPerHost: 1, maxTotalConnections: 2, idleTimeout: 150,
                                                                 lowSpeedLimit: 0, totalTimeout: 150, maxRetries: 0,
                                                                 connectionsReservedForNewHosts: 0, maxQueuedRequests: 3,
                                                                 maxQueueTime: 150))
                let held = Task { try await loader.load(DataLoadRequest(url: slow.url("/hold/slow?i=held"))) }
                #expect(try await eventually { try await slow.hits("/hold/slow") == 1 })
                var waiting: [Task<DataLoadResult, any Error>] = []
                for index in 0..<3 {
                    waiting.append(Task { try await loader.load(DataLoadRequest(url: slow.url("/image/slow\(index)"))) })
                    #expect(await eventually { loader.queuedCount == index + 1 })
                }
                // A healthy host's request: the queue is full of the slow host's.
                let result = try await loader.load(DataLoadRequest(url: healthy.url("/image/healthy")))
                guard case .data(let data, _) = result else {
                    Issue.record("no data: \(result)")
                    return
                }
                #expect(!data.isEmpty)
                let error = await #expect(throws: ImagePipelineError.self) { _ = try await waiting[2].value }
                guard case .overloaded(let url, .queuedRequests, let detail)? = error else {
                    Issue.record("not overloaded: \(String(describing: error))")
                    return
                }
                #expect(url.path == "/image/slow2" && detail.contains("fewer requests waiting"))
                try await slow.release("slow")
                _ = try await held.value
                for task in waiting.prefix(2) { _ = try await task.value }
            }
        }
    }

    /// However many slow hosts hold every slot (issue 41, finding 6: 24 slow ports, or thousands of
    /// requests over 64, made a healthy request fail after its 30 s in the queue), a new host's
    /// request starts once the earliest of them has run `longTransferTime`: that transfer gives
    /// its slot up and goes on as a long transfer. Two slots, none reserved: before, the healthy
    /// request waited for the slow hosts' answers.
    @Test func aLongTransferGivesItsSlotToANewHost() async throws {
        try await withFixtureServer { slowA in
            try await withFixtureServer { slowB in
                try await withFixtureServer { healthy in
                    let loader = longTransferLoader(maxLongTransfers: 4)
                    let slow = [slowA, slowB].map { server in
                        Task { try await loader.load(DataLoadRequest(url: server.url("/hold/slow"))) }
                    }
                    #expect(try await eventually { try await slowA.hits("/hold/slow") + slowB.hits("/hold/slow") == 2 })
                    try await expectLoads(healthy, with: loader, whileHeldBy: [slowA, slowB])
                    // The slow transfers went on, and end with their answers.
                    try await slowA.release("slow")
                    try await slowB.release("slow")
                    for task in slow {
                        guard case .data(let body, _) = try await task.value else {
                            Issue.record("a long transfer did not end with its answer")
                            continue
                        }
                        #expect(!body.isEmpty)
                    }
                }
            }
        }
    }

    /// With `maxLongTransfers` reached, the earliest started long transfer (here the transfer
    /// giving its slot up itself, none being allowed) ends as overloaded, naming the limit.
    @Test func pastMaxLongTransfersTheEarliestEnds() async throws {
        try await withFixtureServer { slowA in
            try await withFixtureServer { slowB in
                try await withFixtureServer { healthy in
                    let loader = longTransferLoader(maxLongTransfers: 0)
                    let first = Task { try await loader.load(DataLoadRequest(url: slowA.url("/hold/slow?first"))) }
                    #expect(try await eventually { try await slowA.hits("/hold/slow") == 1 })
                    let second = Task { try await loader.load(DataLoadRequest(url: slowB.url("/hold/slow?second"))) }
                    #expect(try await eventually { try await slowB.hits("/hold/slow") == 1 })
                    let result = try await loader.load(DataLoadRequest(url: healthy.url("/image/healthy")))
                    guard case .data = result else {
                        Issue.record("no data: \(result)")
                        return
                    }
                    let error = await #expect(throws: ImagePipelineError.self) { _ = try await first.value }
                    guard case .overloaded(let url, .longTransfers, let detail)? = error else {
                        Issue.record("not overloaded: \(String(describing: error))")
                        return
                    }
                    #expect(url.query == "first" && detail.contains("maxLongTransfers"))
                    try await slowB.release("slow")
                    guard case .data = try await second.value else {
                        Issue.record("the later transfer did not keep its slot")
                        return
                    }
                    try await slowA.release("slow")
                }
            }
        }
    }

    /// Spellings of one host and port that libcurl connects to alike are one host to the
    /// per-host limits (finding 6: spellings of one server counted as many hosts).
    @Test func spellingsOfOneHostAreOneOrigin() throws {
        func origin(_ text: String) throws -> Origin { CurlURL.connectionOrigin(of: try #require(URL(string: text))) }
        let plain = try origin("http://127.0.0.1:8080/a")
        for spelling in ["http://127.1:8080/b", "http://0x7f.0.0.1:8080/", "http://2130706433:8080/", "http://0177.0.0.1:8080/",
                         "HTTP://127.0.0.1.:8080/", "http://[::ffff:127.0.0.1]:8080/", "http://%31%32%37.0.0.1:8080/"] {
            #expect(try origin(spelling) == plain, "\(spelling)")
        }
        let name = try origin("http://localhost/")
        for spelling in ["http://LOCALHOST/", "http://LocalHost.:80/", "http://%6cocalhost/", "http://\u{FF4C}\u{FF4F}\u{FF43}\u{FF41}\u{FF4C}host/"] {
            guard let url = URL(string: spelling) else { continue }  // Foundation may refuse some spellings outright
            #expect(CurlURL.connectionOrigin(of: url) == name, "\(spelling)")
        }
        #expect(try origin("http://[0:0:0:0:0:0:0:1]:8080/") == origin("http://[::1]:8080/"))
        #expect(try origin("http://127.0.0.1:8081/") != plain)
        #expect(try origin("https://127.0.0.1:8080/") != plain)
    }
}
