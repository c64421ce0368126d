import CacheDisk
import Foundation
import LoaderHTTP
#if canImport(Glibc)
import Glibc
#endif
import PipelineCore
import PipelineTestSupport
import Testing

/// One failure the fixture server can produce, the error the pipeline must report for it, and
/// how many requests the server must have seen per fetch (retries included).
struct FailureCase: Sendable, CustomTestStringConvertible {
    let path: String
    let counted: String
    let hits: Int
    let configuration: HTTPDataLoader.Configuration
    let matches: @Sendable (LoadFailure) -> Bool
    var testDescription: String { path }

    init(_ path: String, hits: Int = 1, counted: String? = nil, configuration: HTTPDataLoader.Configuration = strictLimits,
         _ matches: @escaping @Sendable (LoadFailure) -> Bool) {
        self.path = path
        self.hits = hits
        self.counted = counted ?? String(path.prefix { $0 != "?" })
        self.configuration = configuration
        self.matches = matches
    }
}

/// Small limits so failures come fast. The time limits are generous (a fixture server starved
/// by other suites and builders must not time out a case that expects another error); the
/// cases about time have configurations of their own, whose limits only a slower server can
/// exceed, never a faster one.
let strictLimits = HTTPDataLoader.Configuration(maxBodyBytes: 100_000, connectTimeout: 2, idleTimeout: 10,
                                                maxRetries: 2, retryBaseDelay: 0.01)

/// An idle timeout of 1 s, which a server that waits 3 s before answering exceeds.
let idleLimits = HTTPDataLoader.Configuration(connectTimeout: 2, idleTimeout: 1, maxRetries: 0)

/// A low-speed limit of 1000 bytes/s over half a second: the fixture server's trickles (a byte
/// or a header line every 50 ms) end after one window instead of the default ten seconds.
let lowSpeedLimits = HTTPDataLoader.Configuration(connectTimeout: 5, lowSpeedLimit: 1000, lowSpeedTime: 0.5, maxRetries: 0)

/// A total deadline of 1 s (and no low-speed limit) that a 4-second download cannot meet.
let deadlineLimits = HTTPDataLoader.Configuration(connectTimeout: 5, lowSpeedLimit: 0, totalTimeout: 1, maxRetries: 0)

@Suite("HTTP failures through the pipeline", .timeLimit(.minutes(2)))
struct LoaderErrorTests {
    static let cases: [FailureCase] = [
        FailureCase("/status/404") { if case .core(.notFound(let url, status: 404)) = $0 { url.path == "/status/404" } else { false } },
        FailureCase("/status/403") { $0 == .http(.badStatus(code: 403)) },
        FailureCase("/status/503", hits: 3) { $0 == .http(.badStatus(code: 503)) },
        FailureCase("/status/429?retry_after=0", hits: 3) { $0 == .http(.badStatus(code: 429)) },
        FailureCase("/reset/r", hits: 3) { if case .http(.network(.connection, _)) = $0 { true } else { false } },
        FailureCase("/truncated/t") { $0 == .core(.truncated(expected: 2000, received: 500)) },
        FailureCase("/huge/h") { $0 == .core(.tooLarge(limit: 100_000, actual: 10 * 1024 * 1024 * 1024)) },
        FailureCase("/chunked/c?size=300000") { $0 == .core(.tooLarge(limit: 100_000, actual: nil)) },
        FailureCase("/html/h") { if case .http(.notAPicture(contentType: "text/html")) = $0 { true } else { false } },
        FailureCase("/loop/l", hits: 6) { if case .http(.network(.tooManyRedirects, _)) = $0 { true } else { false } },
        FailureCase("/redirect/6") { if case .http(.network(.tooManyRedirects, _)) = $0 { true } else { false } },
        FailureCase("/delay/d?ms=3000", configuration: idleLimits) {
            $0 == .core(.timeout("no data for 1.0 s (idle timeout)"))
        },
        // Only a complete answer is a success: no partial, empty or other 2xx body.
        FailureCase("/partial/p") { $0 == .http(.badStatus(code: 206)) },
        FailureCase("/status/204") { $0 == .http(.badStatus(code: 204)) },
        FailureCase("/status/202") { $0 == .http(.badStatus(code: 202)) },
        FailureCase("/empty/e?length=0") { $0 == .http(.emptyBody) },
        FailureCase("/empty/n?length=none") { $0 == .http(.emptyBody) },
        FailureCase("/cutheaders/c", hits: 3) { $0 == .http(.incompleteHeaders) },  // a dropped connection: retried
        // A body curl cannot decode from its Content-Encoding is never handed on still encoded.
        FailureCase("/encoded/u?encoding=compress") { $0 == .http(.unsupportedEncoding("compress")) },
        FailureCase("/encoded/x?encoding=gzip,%20x-custom") { $0 == .http(.unsupportedEncoding("x-custom")) },
        // The body limit counts decoded bytes: a small gzip body that inflates past it (a bomb).
        FailureCase("/encoded/b?encoding=gzip&size=5000000") { $0 == .core(.tooLarge(limit: 100_000, actual: nil)) },
        FailureCase("/encoded/c?encoding=gzip&corrupt=1") { if case .http(.corruptEncoding) = $0 { true } else { false } },
        // Bytes that sniff as PNG but do not decode: the decoder's error, and nothing stored.
        FailureCase("/pngjunk/j") { if case .core(.corruptData(.png?, _)) = $0 { true } else { false } },
        // Slow answers end: a trickled body or trickled headers, and a transfer over its deadline.
        FailureCase("/trickle/t?interval_ms=50", configuration: lowSpeedLimits) {
            $0 == .http(.tooSlow(bytesPerSecond: 1000, seconds: 0.5))
        },
        FailureCase("/slowheaders/s?interval_ms=50", configuration: lowSpeedLimits) {
            $0 == .http(.tooSlow(bytesPerSecond: 1000, seconds: 0.5))
        },
        FailureCase("/slow/d?chunks=200&interval_ms=20&chunk=1000", configuration: deadlineLimits) {
            $0 == .core(.timeout("the transfer took longer than its total timeout of 1 s"))
        },
        // A header flood (endless 100 Continue answers, endless header lines) costs one request.
        FailureCase("/flood/c?kind=continue") { $0 == .http(.headersTooLarge(limit: 128 << 10)) },
        FailureCase("/flood/l?kind=lines") { $0 == .http(.headersTooLarge(limit: 128 << 10)) },
        FailureCase("/flood/o?kind=longline") { $0 == .http(.headersTooLarge(limit: 128 << 10)) },
        FailureCase("/goto/f?url=file:///etc/passwd") {
            $0 == .http(.network(.forbiddenRedirect,
                                 message: "a redirect to a file URL was refused (only http and https are followed): file:///etc/passwd"))
        },
    ]

    /// Every case twice through a pipeline over a real disk cache: the typed error each time,
    /// nothing stored, and the second fetch asks the origin again (no failure is remembered).
    @Test("each server failure becomes its typed error, is never stored, and is asked again", arguments: cases)
    func serverFailureIsTyped(_ failure: FailureCase) async throws {
        let server = try await SharedFixtureServer.instance.server()
        try await withDiskCache { disk, directory in
            let pipeline = makePipeline(loader: HTTPDataLoader(configuration: failure.configuration), decoders: fixtureDecoders, diskCache: disk, negativeCacheLifetime: 0)
            let url = server.url(failure.path)
            let before = try await server.hits(failure.counted)
            for fetch in 1...2 {
                let error = await pipelineError { _ = try await pipeline.image(for: ImageRequest(url: url)) }
                #expect(error.map(failure.matches) == true, "fetch \(fetch): got \(error.map { "\($0)" } ?? "no error")")
                #expect(await disk.cachedData(for: url) == nil, "fetch \(fetch) stored the body")
                // A request cut short (a time limit) may reach the server's count after the error.
                let expected = failure.hits * fetch
                _ = try await eventually(timeout: 30) { try await server.hits(failure.counted) - before >= expected }
                let hits = try await server.hits(failure.counted) - before
                #expect(hits == expected, "fetch \(fetch)")
            }
            #expect(entryFiles(in: directory) == [])
        }
    }

    @Test func redirectChainWithinTheLimitIsFollowed() async throws {
        try await withFixtureServer { server in
            let pipeline = makePipeline(loader: HTTPDataLoader(configuration: strictLimits), decoders: fixtureDecoders, negativeCacheLifetime: 0)
            let response = try await pipeline.image(for: ImageRequest(url: server.url("/redirect/5")))
            #expect(response.bitmap.size == PixelSize(width: 4, height: 3))
            #expect(try await server.stats().log == (0...5).reversed().map { "/redirect/\($0)" })
        }
    }

    @Test func refusedConnectionIsAConnectionFailure() async throws {
        let port = try await withFixtureServer { server in server.port }  // stopped: nothing listens now
        let loader = HTTPDataLoader(configuration: .init(maxRetries: 0))
        let error = await pipelineError {
            _ = try await makePipeline(loader: loader, decoders: fixtureDecoders, negativeCacheLifetime: 0).image(for: ImageRequest(url: URL(string: "http://127.0.0.1:\(port)/x")!))
        }
        guard case .http(.network(.connection, _))? = error else { Issue.record("got \(String(describing: error))"); return }
    }

    /// A listening socket whose accept queue is full drops new SYNs, so connecting hangs:
    /// curl's connect timer must end it (the kernel would try for minutes, and would end it as
    /// a connection failure; the engine's idle timer would end it after 30 s with its own message).
    ///
    /// Timed by curl ("… after 300 ms"), not by the test's clock: that also counts the waits
    /// for a thread of Swift's cooperative pool before the request reaches the engine thread
    /// and after its answer, which a full parallel run on 2 cores stretched to 32 s once while
    /// the engine answered in 0.3 s.
    @Test func connectThatNeverCompletesTimesOut() async throws {
        let listener = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(listener) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { pointer in
                bind(listener, pointer, length) == 0 && listen(listener, 0) == 0
                    && getsockname(listener, pointer, &length) == 0
            }
        }
        try #require(bound)
        var fillers: [Int32] = []
        defer { fillers.forEach { _ = close($0) } }
        for _ in 0..<3 {  // fill the accept queue
            let filler = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue), 0)
            fillers.append(filler)
            _ = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(filler, $0, length) }
            }
        }
        // The queue is full once the listener holds a finished handshake (it is readable):
        // with a backlog of 0 Linux drops every SYN while one connection waits to be accepted.
        // The listener's side, not a filler's: a filler is writable when it sent its last ACK,
        // which the listener may not have taken yet.
        #expect(await eventually {
            var ready = pollfd(fd: listener, events: Int16(POLLIN), revents: 0)
            return poll(&ready, 1, 0) == 1 && ready.revents & Int16(POLLIN) != 0
        })
        let url = URL(string: "http://127.0.0.1:\(UInt16(bigEndian: address.sin_port))/x")!
        let loader = HTTPDataLoader(configuration: .init(connectTimeout: 0.3, maxRetries: 0))
        let error = await pipelineError { _ = try await makePipeline(loader: loader, decoders: fixtureDecoders, negativeCacheLifetime: 0).image(for: ImageRequest(url: url)) }
        guard case .core(.timeout(let message))? = error, message.hasPrefix("connecting took longer than the connect timeout of 0.3 s") else {
            Issue.record("got \(String(describing: error)), not curl's connect timeout")
            return
        }
        // curl's own count from the start of the connect to the timer that ended it. Loose on
        // purpose (the engine thread may wait for a core too): this only catches a connect
        // that waited for another timer (the engine's idle timeout: 30 000 ms).
        let milliseconds = message.firstMatch(of: /after (\d+) ms/).flatMap { Int($0.1) }
        #expect(milliseconds.map { (300..<10_000).contains($0) } == true, "curl's detail: \(message)")
    }

    @Test func tlsHandshakeWithAPlainHTTPServerIsATLSFailure() async throws {
        try await withFixtureServer { server in
            let url = URL(string: "https://127.0.0.1:\(server.port)/image/a")!
            let error = await pipelineError { _ = try await makePipeline(loader: HTTPDataLoader(), decoders: fixtureDecoders, negativeCacheLifetime: 0).image(for: ImageRequest(url: url)) }
            guard case .http(.network(.tls, _))? = error else { Issue.record("got \(String(describing: error))"); return }
        }
    }

    /// A 70-character label is refused by the resolver itself (DNS labels end at 63), so the
    /// lookup fails without a packet leaving the machine.
    @Test func unresolvableHostIsADNSFailure() async throws {
        let url = URL(string: "http://\(String(repeating: "a", count: 70)).invalid/x")!
        let error = await pipelineError { _ = try await makePipeline(loader: HTTPDataLoader(), decoders: fixtureDecoders, negativeCacheLifetime: 0).image(for: ImageRequest(url: url)) }
        guard case .http(.network(.dns, _))? = error else { Issue.record("got \(String(describing: error))"); return }
    }

    @Test func httpsOnlyLoaderRefusesHTTPWithoutSendingAnything() async throws {
        try await withFixtureServer { server in
            let loader = HTTPDataLoader(configuration: .init(requiresHTTPS: true))
            #expect(loader.schemes == ["https"])
            let error = await pipelineError { _ = try await loader.load(DataLoadRequest(url: server.url("/image/a"))) }
            guard case .http(.network(.insecureScheme, _))? = error else { Issue.record("got \(String(describing: error))"); return }
            let hits = try await server.hits("/image/a")
            #expect(hits == 0)
        }
    }
}
