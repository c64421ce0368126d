import Foundation
import ImageServer
import ImageServerHTTP
import PipelineTestSupport
import Synchronization
import Testing

/// The requests a handler saw, for the test to read afterwards.
final class RequestLog: Sendable {
    private let requests = Mutex<[ServerRequest]>([])
    var all: [ServerRequest] { requests.withLock { $0 } }
    func add(_ request: ServerRequest) { requests.withLock { $0.append(request) } }

    /// A server (patient unless `configuration` says otherwise) that records each request here
    /// and answers `response`.
    func server(_ configuration: HTTPServer.Configuration = HTTPServer.Configuration(requestTimeout: HTTPServerTests.patient),
                answering response: ServerResponse = .text(200, "ok")) throws -> HTTPServer {
        try HTTPServer(configuration: configuration) { request in
            self.add(request)
            return response
        }
    }
}

/// The suites run one test at a time: the descriptor count of one must not see the hundred
/// connections of another.
@Suite(.serialized) struct HTTPServerTests {
    /// A request deadline no starved test machine reaches (a fresh-clone run kept a trivial
    /// handler waiting over 10 s for a cooperative thread): tests of the deadline set their own.
    static let patient = Duration.seconds(120)
}

extension HTTPServerTests {
    @Suite struct HTTPServerExchangeTests {
        @Test func roundTripsStatusHeadersAndBodyAndTheRequest() async throws {
            let seen = RequestLog()
            let server = try seen.server(answering: ServerResponse(status: 201, headers: ["Content-Type": "image/webp", "X-Custom": "one two"], body: Data("picture bytes".utf8)))
            let outcome = try await curl(["-i", "-H", "Accept: image/avif,image/webp", "http://127.0.0.1:\(server.port)/a/b?x=1&y=%2F"])
            await server.shutdown()
            let response = try #require(RawResponse(Array(outcome.output)))
            #expect(response.status == 201)
            #expect(response.headers["content-type"] == "image/webp")
            #expect(response.headers["x-custom"] == "one two")
            #expect(response.headers["content-length"] == "13")
            #expect(response.headers["date"] != nil)
            #expect(String(decoding: response.body, as: UTF8.self) == "picture bytes")
            let request = try #require(seen.all.first)
            #expect(request.method == "GET")
            #expect(request.path == "/a/b")
            #expect(request.query == "x=1&y=%2F")
            #expect(request.headers["accept"] == "image/avif,image/webp")
            #expect(request.headers["Host"] == "127.0.0.1:\(server.port)")
            #expect(request.remoteAddress == "127.0.0.1")
        }

        @Test func headSendsTheHeadersWithoutTheBody() async throws {
            let seen = RequestLog()
            let server = try seen.server(answering: ServerResponse(status: 200, headers: ["Content-Type": "image/png"], body: Data(repeating: 7, count: 1000)))
            let connection = try RawConnection(port: server.port)
            connection.send("HEAD /thumb HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            let bytes = await connection.readToEnd()
            connection.close()
            await server.shutdown()
            let response = try #require(RawResponse(bytes))
            #expect(response.status == 200)
            #expect(response.headers["content-length"] == "1000")
            #expect(response.body.isEmpty)
            #expect(seen.all.map(\.method) == ["HEAD"])
        }

        @Test func headWithAnEmptyBodyAnnouncesTheLengthTheHandlerStates() async throws {
            let server = try HTTPServer(configuration: HTTPServer.Configuration(requestTimeout: HTTPServerTests.patient)) { request in
                request.method == "HEAD"
                    ? ServerResponse(status: 200, headers: ["Content-Type": "image/avif", "Content-Length": "4321"])
                    : ServerResponse(status: 200, body: Data(repeating: 1, count: 4321))
            }
            let connection = try RawConnection(port: server.port)
            connection.send("HEAD /thumb HTTP/1.1\r\nHost: x\r\n\r\nHEAD /again HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            let bytes = await connection.readToEnd()
            connection.close()
            await server.shutdown()
            let text = String(decoding: bytes, as: UTF8.self)
            #expect(text.components(separatedBy: "HTTP/1.1 200").count == 3)  // both answered, on one connection
            #expect(text.components(separatedBy: "Content-Length: 4321\r\n").count == 3)
            #expect(text.hasSuffix("\r\n\r\n"))  // no body
        }

        @Test func thePathAndQueryArriveByteForByte() async throws {
            let seen = RequestLog()
            let server = try seen.server()
            let path = "/sig/rs:fit:300:0/plain/http%3A%2F%2Fexample.com%2Fa%20b%2Bc.jpg@webp"
            let query = "u=a+b&v=%2F%3A&w"
            let connection = try RawConnection(port: server.port)
            connection.send("GET \(path)?\(query) HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            let response = RawResponse(await connection.readToEnd())
            connection.close()
            await server.shutdown()
            #expect(response?.status == 200)
            #expect(seen.all.first?.path == path)
            #expect(seen.all.first?.query == query)
        }

        @Test func anyMethodReachesTheHandlerButABodyIsRefused() async throws {
            let seen = RequestLog()
            let server = try seen.server(answering: .text(405, "Method Not Allowed"))
            let deleted = try await curl(["-o", "/dev/null", "-w", "%{http_code}", "-X", "DELETE", "http://127.0.0.1:\(server.port)/x"])
            let posted = try await curl(["-o", "/dev/null", "-w", "%{http_code}", "--data-binary", "payload", "http://127.0.0.1:\(server.port)/y"])
            let chunked = try await curl(["-o", "/dev/null", "-w", "%{http_code}", "-H", "Transfer-Encoding: chunked", "--data-binary", "payload",
                                          "http://127.0.0.1:\(server.port)/z"])
            await server.shutdown()
            #expect(deleted.stdout == "405")
            #expect(posted.stdout == "413")
            #expect(chunked.stdout == "413")
            #expect(seen.all.map(\.method) == ["DELETE"])
        }

        @Test func twoRequestsShareOneKeptAliveConnection() async throws {
            let server = try HTTPServer(configuration: HTTPServer.Configuration(requestTimeout: HTTPServerTests.patient)) { request in .text(200, request.path) }
            let outcome = try await curl(["-w", "%{num_connects} ", "http://127.0.0.1:\(server.port)/one", "http://127.0.0.1:\(server.port)/two"])
            await server.shutdown()
            #expect(outcome.stdout == "/one\n1 /two\n0 ")
        }

        @Test func pipelinedRequestsAreAnsweredInOrder() async throws {
            let server = try HTTPServer(configuration: HTTPServer.Configuration(requestTimeout: HTTPServerTests.patient)) { request in
                if request.path == "/first" { await Task.yield() }
                return .text(200, request.path)
            }
            let connection = try RawConnection(port: server.port)
            connection.send("GET /first HTTP/1.1\r\nHost: x\r\n\r\nGET /second HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            let bytes = await connection.readToEnd()
            connection.close()
            await server.shutdown()
            let text = String(decoding: bytes, as: UTF8.self)
            let first = try #require(text.range(of: "\r\n\r\n/first\n")), second = try #require(text.range(of: "\r\n\r\n/second\n"))
            #expect(first.lowerBound < second.lowerBound)
        }

        @Test func servesTwoHundredConcurrentRequests() async throws {
            let distinct = Mutex<Set<String>>([])
            let server = try HTTPServer(configuration: HTTPServer.Configuration(requestTimeout: HTTPServerTests.patient)) { request in
                distinct.withLock { _ = $0.insert(request.path) }
                await Task.yield()
                return .text(200, request.path)
            }
            let outcome = try await curl(["-Z", "--parallel-max", "100", "-o", "/dev/null", "-w", "%{http_code}\n",
                                          "http://127.0.0.1:\(server.port)/n/[1-200]"])
            await server.shutdown()
            let codes = outcome.stdout.split(separator: "\n")
            #expect(codes.count == 200)
            #expect(codes.allSatisfy { $0 == "200" })
            #expect(distinct.withLock { $0.count } == 200)
        }

        @Test func anOverLongURLOrHeaderIsRefusedWithoutReachingTheHandler() async throws {
            let seen = RequestLog()
            let server = try seen.server(HTTPServer.Configuration(requestTimeout: HTTPServerTests.patient, connectionMemoryLimit: 16 * 1024))
            let longPath = "/" + String(repeating: "a", count: 64 * 1024)
            let url = try RawConnection(port: server.port)
            url.send("GET \(longPath) HTTP/1.1\r\nHost: x\r\n\r\n")
            let urlResponse = RawResponse(await url.readToEnd())
            url.close()
            let header = try RawConnection(port: server.port)
            header.send("GET /ok HTTP/1.1\r\nHost: x\r\nX-Big: \(String(repeating: "b", count: 64 * 1024))\r\n\r\n")
            let headerResponse = RawResponse(await header.readToEnd())
            header.close()
            // Still serving afterwards.
            let after = try await curl(["http://127.0.0.1:\(server.port)/after"])
            await server.shutdown()
            #expect(urlResponse?.status == 414)
            #expect(headerResponse?.status == 431)
            #expect(after.stdout == "ok\n")
            #expect(seen.all.map(\.path) == ["/after"])
        }
    }

    @Suite struct HTTPServerConnectionTests {
        @Test func anIdleConnectionIsClosedAfterTheIdleTimeout() async throws {
            let server = try HTTPServer(configuration: HTTPServer.Configuration(requestTimeout: HTTPServerTests.patient, idleTimeout: .seconds(1))) { _ in .text(200, "ok") }
            let connection = try RawConnection(port: server.port)
            connection.send("GET / HTTP/1.1\r\nHost: x\r\n\r\n")
            let first = await connection.readResponse()
            let began = ContinuousClock.now
            let rest = await connection.readToEnd()  // returns when the server closes (reads give up after 60 s)
            let idle = ContinuousClock.now - began
            connection.close()
            await server.shutdown()
            #expect(first?.status == 200)
            #expect(rest.isEmpty)
            #expect(idle >= .milliseconds(900) && idle < .seconds(30))
        }

        @Test func aHandlerSlowerThanTheIdleTimeoutStillAnswers() async throws {
            // A suspended connection is not idle: MHD restarts its idle clock on resume.
            let release = Latch()
            let server = try HTTPServer(configuration: HTTPServer.Configuration(requestTimeout: HTTPServerTests.patient, idleTimeout: .seconds(1))) { _ in
                await release.wait()
                return .text(200, "slow but fine")
            }
            let idle = try RawConnection(port: server.port)
            let busy = try RawConnection(port: server.port)
            busy.send("GET /slow HTTP/1.1\r\nHost: x\r\n\r\n")
            // The idle connection closing says the idle timeout has passed for the busy one too.
            #expect(await idle.readToEnd().isEmpty)
            idle.close()
            release.fire()
            let answer = await busy.readResponse()
            busy.close()
            await server.shutdown()
            #expect(answer?.status == 200)
        }

        @Test func aConnectionOverTheLimitWaitsForAFreeSlot() async throws {
            // MHD stops accepting at the limit, so a further connection waits in the kernel's backlog.
            let slotFreed = Latch()
            let thirdSawAFreeSlot = Mutex<Bool?>(nil)
            let server = try HTTPServer(configuration: HTTPServer.Configuration(requestTimeout: HTTPServerTests.patient, connectionLimit: 2)) { request in
                if request.path == "/third" { thirdSawAFreeSlot.withLock { $0 = slotFreed.isFired } }
                return .text(200, "ok")
            }
            let open = try (0..<2).map { _ in try RawConnection(port: server.port) }
            for connection in open {
                connection.send("GET / HTTP/1.1\r\nHost: x\r\n\r\n")
                #expect(await connection.readResponse()?.status == 200)
            }
            let third = try RawConnection(port: server.port)
            third.send("GET /third HTTP/1.1\r\nHost: x\r\n\r\n")
            // A round trip through MHD's loop on an open connection: room to accept the third, were
            // it allowed to.
            open[1].send("GET /probe HTTP/1.1\r\nHost: x\r\n\r\n")
            #expect(await open[1].readResponse()?.status == 200)
            slotFreed.fire()
            open[0].close()
            let answer = await third.readResponse()
            third.close()
            open[1].close()
            await server.shutdown()
            #expect(answer?.status == 200)
            #expect(thirdSawAFreeSlot.withLock { $0 } == true)
        }
    }

    @Suite struct HTTPServerDeadlineTests {
        @Test func aHandlerSlowerThanTheTimeoutGets504AndIsCancelled() async throws {
            let cancelled = Latch()
            let server = try HTTPServer(configuration: HTTPServer.Configuration(requestTimeout: .milliseconds(300))) { _ in
                await withTaskCancellationHandler { await cancelled.wait() } onCancel: { cancelled.fire() }
                return .text(200, "too late")
            }
            let outcome = try await curl(["-i", "http://127.0.0.1:\(server.port)/slow"])
            try await withDeadline { await cancelled.wait() }
            await server.shutdown()
            let response = try #require(RawResponse(Array(outcome.output)))
            #expect(response.status == 504)
            #expect(String(decoding: response.body, as: UTF8.self).split(separator: "\n").count == 1)
        }

        @Test func aClientThatHangsUpCancelsItsHandler() async throws {
            let (server, connection, cancelled) = try await heldRequest()
            connection.close()
            try await withDeadline { await cancelled.wait() }
            await server.shutdown()
            #expect(cancelled.isFired)
        }

        @Test func aClientThatEndsItsSideIsClosedWithoutAnAnswer() async throws {
            let (server, connection, cancelled) = try await heldRequest()
            connection.shutdownSending()
            let answer = await connection.readToEnd()
            connection.close()
            try await withDeadline { await cancelled.wait() }
            await server.shutdown()
            #expect(answer.isEmpty)
        }

        /// A server whose handler runs until cancelled, a connection whose request it holds now,
        /// and the latch its cancellation fires.
        private func heldRequest() async throws -> (HTTPServer, RawConnection, Latch) {
            let started = Latch(), cancelled = Latch()
            let server = try HTTPServer(configuration: HTTPServer.Configuration(requestTimeout: .seconds(600))) { _ in
                started.fire()
                await withTaskCancellationHandler { await cancelled.wait() } onCancel: { cancelled.fire() }
                return .text(200, "nobody listens")
            }
            let connection = try RawConnection(port: server.port)
            connection.send("GET /held HTTP/1.1\r\nHost: x\r\n\r\n")
            try await withDeadline { await started.wait() }
            return (server, connection, cancelled)
        }
    }

    @Suite struct HTTPServerShutdownTests {
        @Test func requestsInFlightFinishWithinTheGraceAndLaterOnesAreRefused() async throws {
            let arrived = AsyncStream<Void>.makeStream()
            let release = Latch()
            let server = try HTTPServer(configuration: HTTPServer.Configuration(requestTimeout: HTTPServerTests.patient)) { request in
                if request.path == "/warm" { return .text(200, "warm") }
                arrived.continuation.yield()
                await release.wait()
                return .text(200, "finished")
            }
            let port = server.port
            let kept = try RawConnection(port: port)
            defer { kept.close() }
            kept.send("GET /warm HTTP/1.1\r\nHost: x\r\n\r\n")
            #expect(await kept.readResponse()?.status == 200)
            async let first = curl(["-w", " %{http_code}", "http://127.0.0.1:\(port)/1"])
            async let second = curl(["-w", " %{http_code}", "http://127.0.0.1:\(port)/2"])
            var iterator = arrived.stream.makeAsyncIterator()
            _ = await iterator.next()
            _ = await iterator.next()
            let stopped = Task { await server.shutdown(gracePeriod: .seconds(60)) }
            // Once quiesced, a new connection is refused; the held requests still run.
            #expect(await eventually { (try? RawConnection(port: port)).map { $0.close() } == nil })
            // A kept-alive connection may still ask: it is answered 503 and closed.
            kept.send("GET /late HTTP/1.1\r\nHost: x\r\n\r\n")
            let late = RawResponse(await kept.readToEnd())
            #expect(late?.status == 503)
            #expect(late?.headers["connection"]?.lowercased() == "close")
            release.fire()
            let answers = try await [first.stdout, second.stdout]
            try await withDeadline { await stopped.value }
            #expect(answers == ["finished\n 200", "finished\n 200"])
            let refused = try await curl(["-o", "/dev/null", "-w", "%{http_code}", "http://127.0.0.1:\(port)/3"])
            #expect(refused.stdout == "000")
        }

        @Test func aHandlerThatNeverFinishesIsAnswered503AfterTheGrace() async throws {
            let started = Latch(), never = Latch()
            let server = try HTTPServer(configuration: HTTPServer.Configuration(requestTimeout: .seconds(600))) { _ in
                started.fire()
                await never.wait()
                return .text(200, "never")
            }
            async let answer = curl(["-w", " %{http_code}", "http://127.0.0.1:\(server.port)/stuck"])
            try await withDeadline { await started.wait() }
            let began = ContinuousClock.now
            try await withDeadline(30) { await server.shutdown(gracePeriod: .milliseconds(200)) }
            let took = ContinuousClock.now - began
            let outcome = try await answer
            never.fire()
            #expect(outcome.stdout.hasSuffix(" 503"))
            #expect(took >= .milliseconds(200))
            await server.shutdown()  // idempotent
        }

        @Test func startingAndStoppingFiftyTimesLeaksNoDescriptor() async throws {
            // Warm up once (curl, threads, lazily opened descriptors), then count. Suites of other
            // targets run beside this one and open sockets and epoll sets of their own, so the check
            // allows some noise: a server that leaked any of its five descriptors (listening socket,
            // MHD's epoll set and wake-up eventfd, the watcher's) would leak 50 of them here.
            let warm = try HTTPServer(configuration: HTTPServer.Configuration(requestTimeout: HTTPServerTests.patient)) { _ in .text(200, "ok") }
            _ = try await curl(["http://127.0.0.1:\(warm.port)/"])
            await warm.shutdown()
            let before = serverDescriptorCount()
            for _ in 0..<50 {
                let server = try HTTPServer(configuration: HTTPServer.Configuration(requestTimeout: HTTPServerTests.patient)) { _ in .text(200, "ok") }
                let connection = try RawConnection(port: server.port)
                connection.send("GET / HTTP/1.1\r\nHost: x\r\n\r\n")
                await server.shutdown(gracePeriod: .milliseconds(100))
                connection.close()
            }
            // A server dropped without shutdown stops in deinit.
            for _ in 0..<5 { _ = try HTTPServer(configuration: HTTPServer.Configuration(requestTimeout: HTTPServerTests.patient)) { _ in .text(200, "ok") } }
            #expect(serverDescriptorCount() - before < 25)
        }
    }

    @Suite struct HTTPServerListeningTests {
        @Test func reportsThePortItWasGivenAndTheOneItPicked() async throws {
            let picked = try HTTPServer(configuration: HTTPServer.Configuration(requestTimeout: HTTPServerTests.patient)) { _ in ServerResponse(status: 204) }
            #expect(picked.port > 0)
            let port = picked.port
            await picked.shutdown()
            let given = try HTTPServer(configuration: HTTPServer.Configuration(port: port)) { _ in ServerResponse(status: 204) }
            #expect(given.port == port)
            await given.shutdown()
        }

        @Test func aTakenPortIsATypedErrorNamingTheAddress() async throws {
            let messages = Mutex<[String]>([])
            let first = try HTTPServer(configuration: HTTPServer.Configuration(requestTimeout: HTTPServerTests.patient)) { _ in ServerResponse(status: 204) }
            let configuration = HTTPServer.Configuration(port: first.port) { line in messages.withLock { $0.append(line) } }
            // MHD's message reaches the configured sink and the error, never stderr.
            let othersLines: (Substring) -> Bool = { !$0.contains("Failed to bind") }
            let (result, stderr) = try capturingStandardError(givesBack: othersLines) {
                Result { try HTTPServer(configuration: configuration) { _ in ServerResponse(status: 204) } }
            }
            #expect(throws: HTTPServerError.cannotListen(address: "127.0.0.1:\(first.port)", reason: "Failed to bind to port \(first.port): Address already in use")) {
                try result.get()
            }
            #expect(messages.withLock { $0.contains { $0.contains("in use") } })
            #expect(!stderr.contains("Failed to bind"))
            #expect(throws: HTTPServerError.invalidHost("localhost")) {
                _ = try HTTPServer(configuration: HTTPServer.Configuration(host: "localhost")) { _ in ServerResponse(status: 204) }
            }
            await first.shutdown()
        }

        @Test(.enabled(if: ipv6LoopbackAvailable())) func listensOnIPv6Loopback() async throws {
            let server = try HTTPServer(configuration: HTTPServer.Configuration(host: "::1")) { request in
                .text(200, request.remoteAddress ?? "?")
            }
            let outcome = try await curl(["-g", "http://[::1]:\(server.port)/"])
            await server.shutdown()
            #expect(outcome.stdout == "::1\n")
        }
    }
}
