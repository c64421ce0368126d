import Foundation
import LoaderHTTP
import PipelineCore
import PipelineTestSupport
import Testing

/// The loader's queue of requests waiting for a connection slot is bounded by count, by bytes
/// and by time, and a request over a bound fails at once with the core's typed `overloaded`,
/// naming the URL and the bound (issue 22, point 3). Real libcurl against the fixture server,
/// whose `/hold` answers only when released: the slots stay taken for as long as the test says.
@Suite("HTTPDataLoader's bounded queue", .timeLimit(.minutes(2)))
struct QueueBoundsTests {
    /// One slot, held; the queue takes `maxQueuedRequests` waiters, and the next request fails
    /// at once. Before the bound, every request queued, however many (40,000 held 1.1 GB).
    @Test func aRequestOverTheQueuedCountFailsAtOnceAsOverloaded() async throws {
        try await withFixtureServer { server in
            let loader = HTTPDataLoader(configuration: .init(maxConnectionsPerHost: 1, maxTotalConnections: 1, maxRetries: 0,
                                                             maxQueuedRequests: 2))
            var tasks = [Task { try await loader.load(DataLoadRequest(url: server.url("/hold/q"))) }]
            #expect(try await eventually { try await server.hits("/hold/q") == 1 })
            for index in 0..<2 {
                tasks.append(Task { try await loader.load(DataLoadRequest(url: server.url("/image/w\(index)"))) })
                #expect(await eventually { loader.queuedCount == index + 1 })
            }
            let refused = server.url("/image/over")
            let error = await #expect(throws: ImagePipelineError.self) { _ = try await loader.load(DataLoadRequest(url: refused)) }
            guard case .overloaded(let url, let limit, _)? = error else {
                Issue.record("not overloaded: \(String(describing: error))")
                return
            }
            #expect(url == refused && limit == .queuedRequests)
            #expect(error?.description.contains("/image/over") == true && error?.description.contains("maxQueuedRequests") == true)
            #expect(try await server.hits("/image/over") == 0)
            try await server.release("q")
            for task in tasks { _ = try await task.value }  // the queued ones still load
        }
    }

    /// A visible request finding the queue full pushes out the newest waiting prefetch, which
    /// fails as overloaded; the older prefetch and the visible request still load.
    @Test func aVisibleRequestPushesTheNewestPrefetchOutOfAFullQueue() async throws {
        try await withFixtureServer { server in
            let loader = HTTPDataLoader(configuration: .init(maxConnectionsPerHost: 1, maxTotalConnections: 1, maxRetries: 0,
                                                             maxQueuedRequests: 2))
            let held = Task { try await loader.load(DataLoadRequest(url: server.url("/hold/v"))) }
            #expect(try await eventually { try await server.hits("/hold/v") == 1 })
            var prefetches: [Task<DataLoadResult, any Error>] = []
            for index in 0..<2 {
                let request = DataLoadRequest(url: server.url("/image/prefetch\(index)"), priority: PriorityHandle(.prefetch))
                prefetches.append(Task { try await loader.load(request) })
                #expect(await eventually { loader.queuedCount == index + 1 })
            }
            let visible = Task { try await loader.load(DataLoadRequest(url: server.url("/image/visible"), priority: PriorityHandle(.visible))) }
            let error = await #expect(throws: ImagePipelineError.self) { _ = try await prefetches[1].value }
            guard case .overloaded(let url, .queuedRequests, let detail)? = error else {
                Issue.record("not overloaded: \(String(describing: error))")
                return
            }
            #expect(url.path == "/image/prefetch1" && detail.contains("pushed out by a visible request"))
            try await server.release("v")
            _ = try await held.value
            _ = try await visible.value
            _ = try await prefetches[0].value
            #expect(try await server.stats().log == ["/hold/v", "/image/visible", "/image/prefetch0"])
        }
    }

    /// The bytes bound counts each waiting request's URL and headers: one long header is over
    /// a small byte budget while short requests still queue.
    @Test func aRequestOverTheQueuedBytesFailsAtOnceAsOverloaded() async throws {
        try await withFixtureServer { server in
            let budget = HTTPDataLoader.Configuration.queuedRequestBaseBytes * 3
            let loader = HTTPDataLoader(configuration: .init(maxConnectionsPerHost: 1, maxTotalConnections: 1, maxRetries: 0,
                                                             maxQueuedBytes: budget))
            let held = Task { try await loader.load(DataLoadRequest(url: server.url("/hold/b"))) }
            #expect(try await eventually { try await server.hits("/hold/b") == 1 })
            let short = Task { try await loader.load(DataLoadRequest(url: server.url("/image/short"))) }
            #expect(await eventually { loader.queuedCount == 1 })
            var request = DataLoadRequest(url: server.url("/image/long"))
            request.headers = ["X-Padding": String(repeating: "p", count: budget)]
            let error = await #expect(throws: ImagePipelineError.self) { _ = try await loader.load(request) }
            guard case .overloaded(_, let limit, let detail)? = error else {
                Issue.record("not overloaded: \(String(describing: error))")
                return
            }
            #expect(limit == .queuedBytes && detail.contains("maxQueuedBytes"))
            try await server.release("b")
            _ = try await held.value
            _ = try await short.value
        }
    }

    /// Every slot is held by a server that never answers (within the test); a waiting request
    /// fails at its queue deadline, on time, though no slot frees and nothing else wakes the
    /// engine. Before, time in the queue counted toward nothing: it waited for the slot.
    @Test func aWaitingRequestFailsAtItsQueueDeadlineWhileNoSlotFrees() async throws {
        try await withFixtureServer { server in
            let loader = HTTPDataLoader(configuration: .init(maxConnectionsPerHost: 2, maxTotalConnections: 2, lowSpeedLimit: 0,
                                                             totalTimeout: 100, maxRetries: 0, connectionsReservedForNewHosts: 0,
                                                             maxQueueTime: 1))
            let held = (0..<2).map { index in Task { try await loader.load(DataLoadRequest(url: server.url("/hold/never?i=\(index)"))) } }
            #expect(try await eventually { try await server.hits("/hold/never") == 2 })
            let started = Date()
            let waiting = server.url("/image/waiting")
            let error = await #expect(throws: ImagePipelineError.self) { _ = try await loader.load(DataLoadRequest(url: waiting)) }
            let waited = Date().timeIntervalSince(started)
            guard case .overloaded(let url, let limit, let detail)? = error else {
                Issue.record("not overloaded: \(String(describing: error))")
                return
            }
            #expect(url == waiting && limit == .queueTime && detail.contains("maxQueueTime"))
            // At its deadline, not at the slots' 60 s: the engine woke for it.
            #expect(waited >= 1 && waited < 30)
            #expect(try await server.hits("/image/waiting") == 0)
            #expect(try await server.stats().statuses["/hold/never"] == nil)  // the slots were still held
            try await server.release("never")
            for task in held { _ = try await task.value }
        }
    }

    /// A caller of `ImagePipeline` sees the loader's `overloaded` as such (inside `loadingFailed`,
    /// through `underlyingError`), told apart from an origin's failure without knowing the
    /// loader, with a message that names the URL and the bound; and it is not remembered as a
    /// permanent failure: the same URL loads once the queue has room.
    @Test func aPipelineCallerSeesOverloadedAndItIsNotNegativelyCached() async throws {
        try await withFixtureServer { server in
            let loader = HTTPDataLoader(configuration: .init(maxConnectionsPerHost: 1, maxTotalConnections: 1, maxRetries: 0,
                                                             maxQueuedRequests: 1))
            let pipeline = ImagePipeline(configuration: .init(decoders: fixtureDecoders, loaders: LoaderRegistry().registering(loader)))
            let held = Task { try await loader.load(DataLoadRequest(url: server.url("/hold/p"))) }
            #expect(try await eventually { try await server.hits("/hold/p") == 1 })
            let waiting = Task { try await loader.load(DataLoadRequest(url: server.url("/image/waiting"))) }
            #expect(await eventually { loader.queuedCount == 1 })
            let url = server.url("/image/through-pipeline")
            let error = await #expect(throws: ImagePipelineError.self) { _ = try await pipeline.image(for: ImageRequest(url: url)) }
            guard case .overloaded(url, .queuedRequests, _)? = error?.underlyingError as? ImagePipelineError else {
                Issue.record("not overloaded: \(String(describing: error))")
                return
            }
            #expect(error?.isPermanent == false)
            let text = error?.description ?? ""
            #expect(text.contains("/image/through-pipeline") && text.contains("overloaded (queued requests)"))
            try await server.release("p")
            _ = try await held.value
            _ = try await waiting.value
            _ = try await pipeline.image(for: ImageRequest(url: url))  // asked again, not answered from the negative cache
        }
    }

    /// A cancelled waiting request leaves the queue at once (its count drops before any slot frees).
    @Test func aCancelledWaitingRequestLeavesTheQueueAtOnce() async throws {
        try await withFixtureServer { server in
            let loader = HTTPDataLoader(configuration: .init(maxConnectionsPerHost: 1, maxTotalConnections: 1, maxRetries: 0))
            let held = Task { try await loader.load(DataLoadRequest(url: server.url("/hold/c"))) }
            #expect(try await eventually { try await server.hits("/hold/c") == 1 })
            let waiting = Task { try await loader.load(DataLoadRequest(url: server.url("/image/cancelled"))) }
            #expect(await eventually { loader.queuedCount == 1 })
            waiting.cancel()
            await #expect(throws: CancellationError.self) { _ = try await waiting.value }
            #expect(loader.queuedCount == 0)
            try await server.release("c")
            _ = try await held.value
        }
    }

    /// A limit set out of range after `init` is clamped when the loader is made, as `init`
    /// clamps it: reserved slots below a total lowered later (else every host got one
    /// connection, even alone), at least one queued request.
    @Test func limitsSetAfterInitAreClampedWhenTheLoaderIsMade() {
        var configuration = HTTPDataLoader.Configuration()
        #expect(configuration.connectionsReservedForNewHosts == 4)
        configuration.maxTotalConnections = 4
        configuration.maxQueuedRequests = 0
        configuration.maxDownloadMemory = -5
        let loader = HTTPDataLoader(configuration: configuration)
        #expect(loader.configuration.connectionsReservedForNewHosts == 3)
        #expect(loader.configuration.maxQueuedRequests == 1 && loader.configuration.maxDownloadMemory == 1)
        #expect(HTTPDataLoader.Configuration(maxTotalConnections: 0).maxTotalConnections == 1)
    }
}
