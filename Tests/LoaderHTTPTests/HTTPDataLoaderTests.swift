import Foundation
import LoaderHTTP
import PipelineCore
import PipelineTestSupport
import Synchronization
import Testing

@Suite("HTTPDataLoader against the fixture server", .timeLimit(.minutes(2)))
struct HTTPDataLoaderTests {
    @Test func loadsBytesWithTheirMetadata() async throws {
        try await withFixtureServer { server in
            let result = try await HTTPDataLoader().load(DataLoadRequest(url: server.url("/image/a?size=3000&maxage=120")))
            guard case .data(let data, let metadata) = result else { Issue.record("not data"); return }
            #expect(data.count == 3000)
            #expect(data.prefix(4) == Data("TIMG".utf8))
            #expect(metadata.etag == "\"a-3000\"")
            #expect(metadata.lastModified == "Sat, 01 Jan 2022 00:00:00 GMT")
            #expect((90...120).contains(metadata.freshFor ?? -1), "fresh for \(String(describing: metadata.freshFor)) s")  // less the age by `Date`
            #expect(metadata.contentType == "image/x-test")
            #expect(metadata.contentLength == 3000)
        }
    }

    @Test func matchingValidatorGivesNotModifiedWithNewFreshness() async throws {
        try await withFixtureServer { server in
            let loader = HTTPDataLoader()
            for validator in [CacheValidator(etag: "\"v-2000\"", lastModified: nil),
                              CacheValidator(etag: nil, lastModified: "Sat, 01 Jan 2022 00:00:00 GMT")] {
                let result = try await loader.load(DataLoadRequest(url: server.url("/image/v?maxage304=900"), validator: validator))
                guard case .notModified(let metadata) = result else { Issue.record("expected 304"); return }
                // Less the apparent age by the server's `Date` (1 s resolution) and a slow, loaded machine.
                #expect((870...900).contains(metadata.freshFor ?? -1), "fresh for \(String(describing: metadata.freshFor)) s")
            }
            let changed = try await loader.load(DataLoadRequest(url: server.url("/image/v"),
                                                                validator: CacheValidator(etag: "\"old\"", lastModified: nil)))
            guard case .data(let data, _) = changed else { Issue.record("expected new bytes"); return }
            #expect(data.count == 2000)
            #expect(try await server.stats().statuses["/image/v"] == [304, 304, 200])
        }
    }

    @Test func transientFailuresAreRetriedUntilTheyPass() async throws {
        try await withFixtureServer { server in
            let loader = HTTPDataLoader(configuration: strictLimits)
            for path in ["/flaky/a?fail=2&status=503", "/flaky/b?fail=1&status=0", "/flaky/c?fail=2&status=429"] {
                guard case .data = try await loader.load(DataLoadRequest(url: server.url(path))) else {
                    Issue.record("no data for \(path)"); continue
                }
            }
            let hits = try await server.stats().hits
            #expect(hits["/flaky/a"] == 3)
            #expect(hits["/flaky/b"] == 2)
            #expect(hits["/flaky/c"] == 3)
        }
    }

    @Test func retryWaitsForRetryAfter() async throws {
        try await withFixtureServer { server in
            let loader = HTTPDataLoader(configuration: strictLimits)
            let start = Date()
            _ = try await loader.load(DataLoadRequest(url: server.url("/flaky/r?fail=1&status=429&retry_after=1")))
            #expect(Date().timeIntervalSince(start) >= 0.95)
            #expect(try await server.hits("/flaky/r") == 2)
        }
    }

    @Test func authHookAddsHeadersBeforeEveryAttempt() async throws {
        try await withFixtureServer { server in
            let calls = Counter()
            var configuration = strictLimits
            configuration.authorization = { _, headers in
                await Task.yield()  // a suspension, as if it fetched a token
                calls.increment()
                headers["Authorization"] = "Bearer secret"
            }
            let loader = HTTPDataLoader(configuration: configuration)
            let pipeline = makePipeline(loader: loader, decoders: fixtureDecoders, negativeCacheLifetime: 0)
            _ = try await pipeline.image(for: ImageRequest(url: server.url("/auth/a?token=secret")))
            #expect(calls.current == 1)
            let refused = await pipelineError { _ = try await loader.load(DataLoadRequest(url: server.url("/auth/b?token=other"))) }
            #expect(refused == .http(.badStatus(code: 401)))
            #expect(calls.current == 2)  // 401 is not retried
        }
    }

    @Test func requestHeadersAreSent() async throws {
        try await withFixtureServer { server in
            let pipeline = makePipeline(loader: HTTPDataLoader(configuration: strictLimits), decoders: fixtureDecoders, negativeCacheLifetime: 0)
            let url = server.url("/header/h?name=X-Client&value=grid")
            let missing = await pipelineError { _ = try await pipeline.image(for: ImageRequest(url: url)) }
            #expect(missing == .http(.badStatus(code: 400)))
            let response = try await pipeline.image(for: ImageRequest(url: url, headers: ["X-Client": "grid"]))
            #expect(response.source == .network)
        }
    }

    @Test func progressReportsBytesAndExpectedLength() async throws {
        try await withFixtureServer { server in
            let last = Mutex<(Int64, Int64?)>((0, nil))
            let calls = Counter()
            let request = DataLoadRequest(url: server.url("/slow/p?chunks=5&interval_ms=30&chunk=1000")) { received, expected in
                calls.increment()
                last.withLock { $0 = (received, expected) }
            }
            _ = try await HTTPDataLoader().load(request)
            #expect(calls.current >= 2)
            #expect(last.withLock { $0.0 } == 5000)
            #expect(last.withLock { $0.1 } == 5000)
        }
    }

    @Test func sequentialLoadsReuseOneConnection() async throws {
        try await withFixtureServer { server in
            let loader = HTTPDataLoader()
            for index in 0..<5 { _ = try await loader.load(DataLoadRequest(url: server.url("/image/\(index)"))) }
            #expect(Set(try await server.stats().ports).count == 1)
        }
    }

    /// Regression: the pending queue asked a waiting job's priority twice while promoting raised
    /// prefetches; a raise landing between the two reads started the job twice and resumed its
    /// continuation twice (a crash found by the FlingGrid example). Every load must finish once.
    @Test func raisingPrioritiesWhileJobsWaitStartsEachJobOnce() async throws {
        try await withFixtureServer { server in
            let loader = HTTPDataLoader(configuration: .init(maxConnectionsPerHost: 1))
            let handles = (0..<60).map { _ in PriorityHandle(.prefetch) }
            // One raise after each load that finishes: the raises land while the other jobs wait.
            let (finished, finish) = AsyncStream<Void>.makeStream()
            let raiser = Task.detached {
                var loads = finished.makeAsyncIterator()
                for handle in handles.shuffled() {
                    handle.raise(to: .visible)
                    _ = await loads.next()
                }
            }
            try await withThrowingTaskGroup(of: Int.self) { group in
                for (index, handle) in handles.enumerated() {
                    group.addTask {
                        let request = DataLoadRequest(url: server.url("/image/p\(index)?size=64"), priority: handle)
                        defer { finish.yield() }
                        guard case .data(let data, _) = try await loader.load(request) else { return 0 }
                        return data.count
                    }
                }
                var sizes: [Int] = []
                for try await size in group { sizes.append(size) }
                #expect(sizes.count == 60 && sizes.allSatisfy { $0 == 64 })
            }
            await raiser.value
            let stats = try await server.stats()
            #expect((0..<60).allSatisfy { stats.hits["/image/p\($0)"] == 1 })
        }
    }

    /// Nine transfers to one host under a limit of three: the first three are held by the
    /// server until all nine were handed to the loader, so the limit is what keeps the other six
    /// out (a 60-ms delay instead let a starved test process hand them over too far apart to
    /// overlap, and the test saw two at once).
    @Test func perHostLimitCapsConcurrentTransfers() async throws {
        try await withFixtureServer { server in
            let loader = HTTPDataLoader(configuration: .init(maxConnectionsPerHost: 3))
            let handedOver = Counter()
            try await withThrowingTaskGroup(of: Void.self) { group in
                for index in 0..<9 {
                    group.addTask {
                        handedOver.increment()
                        _ = try await loader.load(DataLoadRequest(url: server.url("/hold/cap?i=\(index)")))
                    }
                }
                try await server.awaitHits("/hold/cap", count: 3)
                #expect(await eventually { handedOver.current == 9 })
                #expect(try await server.stats().max_active == 3, "three held, the other six kept back by the limit")
                try await server.release("cap")
                try await group.waitForAll()
            }
            let stats = try await server.stats()
            #expect(stats.hits["/hold/cap"] == 9)
            #expect(stats.max_active == 3)
            #expect(Set(stats.ports).count == 3)
        }
    }

    /// The issue's measurement: the time from `cancel()` to the server seeing the socket close
    /// while it streams a slow body (the server waits on the socket between chunks).
    @Test func cancellingStopsTheTransferPromptly() async throws {
        try await withFixtureServer { server in
            let received = Atomic<Int64>(0)
            // 12,000 chunks 10 ms apart: two minutes of body, which a cancelled transfer must not reach.
            let request = DataLoadRequest(url: server.url("/slow/c?chunks=12000&interval_ms=10&chunk=1000")) { bytes, _ in
                received.store(bytes, ordering: .relaxed)
            }
            let loader = HTTPDataLoader()
            let task = Task { try await loader.load(request) }
            #expect(await eventually { received.load(ordering: .relaxed) >= 5000 })
            let cancelledAt = Date().timeIntervalSince1970
            task.cancel()
            await #expect(throws: CancellationError.self) { _ = try await task.value }
            let returned = Date().timeIntervalSince1970 - cancelledAt
            #expect(try await eventually { try await server.stats().disconnects["/slow/c"] != nil })
            let stats = try await server.stats()
            let stopped = try #require(stats.disconnects["/slow/c"]) - cancelledAt
            print("cancel → task returned: \(Int(returned * 1000)) ms; cancel → server saw the socket close: \(Int(stopped * 1000)) ms")
            // Alone this is 0–10 ms and a few KB. On a starved machine the server streams on until
            // the socket closes (the 500-chunk body once sent over 400 KB of its 500 KB before a CI
            // run's cancel took effect), so the bytes are bounded against the end of a body far
            // longer than the 30 s allowed: half of its 12,000,000 bytes.
            #expect(stopped < 30)
            #expect(try #require(stats.sent["/slow/c"]) < 6_000_000)
        }
    }

    /// Under one connection, waiting requests start visible first, in arrival order, and a
    /// prefetch whose priority is raised while it waits counts as visible.
    @Test func visibleRequestsStartBeforePrefetchesAndRaisedPrioritiesCount() async throws {
        try await withFixtureServer { server in
            let loader = HTTPDataLoader(configuration: .init(maxConnectionsPerHost: 1))
            var tasks: [Task<DataLoadResult, any Error>] = []
            func enqueue(_ path: String, _ priority: PriorityHandle) async throws {
                let expected = loader.queuedCount + 1
                tasks.append(Task { try await loader.load(DataLoadRequest(url: server.url(path), priority: priority)) })
                #expect(await eventually { loader.queuedCount == expected })
            }
            tasks.append(Task { try await loader.load(DataLoadRequest(url: server.url("/hold/blocker"))) })
            #expect(try await eventually { try await server.hits("/hold/blocker") == 1 })
            let raised = PriorityHandle(.prefetch)
            for index in 0..<3 { try await enqueue("/image/p\(index)", PriorityHandle(.prefetch)) }
            try await enqueue("/image/raised", raised)
            for index in 0..<2 { try await enqueue("/image/v\(index)", PriorityHandle(.visible)) }
            raised.raise(to: .visible)
            try await server.release("blocker")
            for task in tasks { _ = try await task.value }
            #expect(try await server.stats().log == ["/hold/blocker", "/image/raised", "/image/v0", "/image/v1",
                                               "/image/p0", "/image/p1", "/image/p2"])
        }
    }
}

@Suite("HTTPDataLoader with hostile headers and extreme limits", .timeLimit(.minutes(2)))
struct HTTPDataLoaderHostileTests {
    /// Regression: a header line starting with "HTTP/" was parsed as a status line, so a long
    /// run of digits after it overflowed `status` (a trap on the engine thread: the process
    /// died), and "HTTP/2 404: x" turned a 200 into a 404.
    @Test func headerLinesThatLookLikeStatusLinesAreHeaders() async throws {
        try await withFixtureServer { server in
            let result = try await HTTPDataLoader().load(DataLoadRequest(url: server.url("/oddheader/a")))
            guard case .data(let data, _) = result else { Issue.record("not data"); return }
            #expect(data.count == 2000)
        }
    }

    /// Regression: timeouts too large for an `Int` of milliseconds or a `UInt64` of
    /// nanoseconds (`.infinity`, 1e300: "never") trapped when the transfer started.
    @Test func hugeOrInfiniteTimeoutsMeanNoTimeout() async throws {
        try await withFixtureServer { server in
            for seconds in [TimeInterval.infinity, 1e300, 1e12] {
                let loader = HTTPDataLoader(configuration: .init(connectTimeout: seconds, idleTimeout: seconds))
                guard case .data(let data, _) = try await loader.load(DataLoadRequest(url: server.url("/image/t\(Int(min(seconds, 9)))"))) else {
                    Issue.record("not data for \(seconds)"); continue
                }
                #expect(data.count == 2000)
            }
        }
    }

    /// Regression: curl hands trailers (header lines after a chunked body) to the header
    /// callback, which took them for a new response: "HTTP/1.1 500: x" replaced the status of a
    /// complete 200, and a trailing "Content-Type: text/html" failed it after the whole body.
    @Test func trailersAfterTheBodyDoNotChangeTheResponse() async throws {
        try await withFixtureServer { server in
            let loader = HTTPDataLoader(configuration: strictLimits)
            let path = "/chunked/t?size=3000&trailer=HTTP/1.1%20500:%20x&trailer=Content-Type:%20text/html"
            let result = try await loader.load(DataLoadRequest(url: server.url(path)))
            guard case .data(let data, let metadata) = result else { Issue.record("not data"); return }
            #expect(data.count == 3000)
            #expect(metadata.contentType == "image/x-test")
            #expect(try await server.stats().hits["/chunked/t"] == 1)
        }
    }

    /// curl asks for the encodings it can decode and decodes them: the bytes handed on are the
    /// picture's, and the length reported is theirs, not the compressed body's.
    @Test("gzip and deflate bodies arrive decoded", arguments: ["gzip", "deflate"])
    func compressedBodiesArriveDecoded(_ encoding: String) async throws {
        try await withFixtureServer { server in
            let loader = HTTPDataLoader()
            guard case .data(let plain, _) = try await loader.load(DataLoadRequest(url: server.url("/image/z"))),
                  case .data(let data, let metadata) = try await loader.load(DataLoadRequest(url: server.url("/encoded/z?encoding=\(encoding)")))
            else { Issue.record("not data"); return }
            #expect(data == plain)
            #expect(metadata.contentLength == Int64(plain.count))
            let accepted = try await server.stats().accept_encoding["/encoded/z"] ?? ""
            #expect(accepted.contains("gzip") && accepted.contains("deflate"), "Accept-Encoding: \(accepted)")
        }
    }

    /// 203 (a transforming proxy's 200) is a complete answer too.
    @Test func nonAuthoritative203IsAccepted() async throws {
        try await withFixtureServer { server in
            guard case .data(let data, _) = try await HTTPDataLoader().load(DataLoadRequest(url: server.url("/image/n?answer=203"))) else {
                Issue.record("not data"); return
            }
            #expect(data.count == 2000)
        }
    }

    /// The low-speed limit ends a trickle within a window or two and closes the connection.
    @Test func aTrickleIsCutOffAndItsConnectionClosed() async throws {
        try await withFixtureServer { server in
            let loader = HTTPDataLoader(configuration: lowSpeedLimits)
            let error = await pipelineError { _ = try await loader.load(DataLoadRequest(url: server.url("/trickle/t?interval_ms=50"))) }
            #expect(error == .http(.tooSlow(bytesPerSecond: 1000, seconds: 0.5)))
            let closed = try await eventually { try await server.stats().disconnects["/trickle/t"] != nil }
            #expect(closed)
        }
    }
}
