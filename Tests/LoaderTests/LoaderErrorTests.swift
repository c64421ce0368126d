import Foundation
import LoaderHTTP
#if canImport(Glibc)
import Glibc
#endif
import PipelineCore
import Testing

/// One failure the fixture server can produce, the error the pipeline must report for it, and
/// how many requests the server must have seen (retries included).
struct FailureCase: Sendable, CustomTestStringConvertible {
    let path: String
    let counted: String
    let hits: Int
    let matches: @Sendable (LoadFailure) -> Bool
    var testDescription: String { path }

    init(_ path: String, hits: Int = 1, counted: String? = nil, _ matches: @escaping @Sendable (LoadFailure) -> Bool) {
        self.path = path
        self.hits = hits
        self.counted = counted ?? String(path.prefix { $0 != "?" })
        self.matches = matches
    }
}

/// Small limits so failures come fast; the idle timeout (2 s) stays under the 2.5 s `/delay` case
/// but leaves room for a fixture server slowed by the other suites running in parallel.
let strictLimits = HTTPDataLoader.Configuration(maxBodyBytes: 100_000, connectTimeout: 2, idleTimeout: 2,
                                                maxRetries: 2, retryBaseDelay: 0.01)

@Suite("HTTP failures through the pipeline", .timeLimit(.minutes(2)))
struct LoaderErrorTests {
    static let cases: [FailureCase] = [
        FailureCase("/status/404") { if case .core(.notFound(let url)) = $0 { url.path == "/status/404" } else { false } },
        FailureCase("/status/403") { $0 == .http(.badStatus(code: 403)) },
        FailureCase("/status/503", hits: 3) { $0 == .http(.badStatus(code: 503)) },
        FailureCase("/status/429?retry_after=0", hits: 3) { $0 == .http(.badStatus(code: 429)) },
        FailureCase("/reset/r", hits: 3) { if case .http(.network(.connection, _)) = $0 { true } else { false } },
        FailureCase("/truncated/t") { $0 == .core(.truncated(expected: 2000, received: 500)) },
        FailureCase("/huge/h") { $0 == .core(.tooLarge(limit: 100_000, actual: 10 * 1024 * 1024 * 1024)) },
        FailureCase("/chunked/c?size=300000") { $0 == .core(.tooLarge(limit: 100_000, actual: nil)) },
        FailureCase("/html/h") { if case .http(.network(.unexpectedContentType, _)) = $0 { true } else { false } },
        FailureCase("/loop/l", hits: 6) { if case .http(.network(.tooManyRedirects, _)) = $0 { true } else { false } },
        FailureCase("/redirect/6") { if case .http(.network(.tooManyRedirects, _)) = $0 { true } else { false } },
        FailureCase("/delay/d?ms=2500") { if case .core(.timeout) = $0 { true } else { false } },
    ]

    @Test("each server failure becomes its typed error, retried only when transient", arguments: cases)
    func serverFailureIsTyped(_ failure: FailureCase) async throws {
        try await withFixtureServer { server in
            let pipeline = makePipeline(HTTPDataLoader(configuration: strictLimits))
            let error = await pipelineError { _ = try await pipeline.image(for: ImageRequest(url: server.url(failure.path))) }
            #expect(error.map(failure.matches) == true, "got \(String(describing: error))")
            let hits = try await server.hits(failure.counted)
            #expect(hits == failure.hits)
        }
    }

    @Test func redirectChainWithinTheLimitIsFollowed() async throws {
        try await withFixtureServer { server in
            let pipeline = makePipeline(HTTPDataLoader(configuration: strictLimits))
            let response = try await pipeline.image(for: ImageRequest(url: server.url("/redirect/5")))
            #expect(response.bitmap.size == PixelSize(width: 4, height: 3))
            #expect(try await server.stats().log == (0...5).reversed().map { "/redirect/\($0)" })
        }
    }

    @Test func refusedConnectionIsAConnectionFailure() async throws {
        let port = try await withFixtureServer { server in server.port }  // stopped: nothing listens now
        let loader = HTTPDataLoader(configuration: .init(maxRetries: 0))
        let error = await pipelineError {
            _ = try await makePipeline(loader).image(for: ImageRequest(url: URL(string: "http://127.0.0.1:\(port)/x")!))
        }
        guard case .http(.network(.connection, _))? = error else { Issue.record("got \(String(describing: error))"); return }
    }

    /// A listening socket whose accept queue is full drops new SYNs, so connecting hangs:
    /// the connect timeout must end it.
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
        try await Task.sleep(nanoseconds: 50_000_000)
        let url = URL(string: "http://127.0.0.1:\(UInt16(bigEndian: address.sin_port))/x")!
        let loader = HTTPDataLoader(configuration: .init(connectTimeout: 0.3, maxRetries: 0))
        let start = Date()
        let error = await pipelineError { _ = try await makePipeline(loader).image(for: ImageRequest(url: url)) }
        guard case .core(.timeout)? = error else { Issue.record("got \(String(describing: error))"); return }
        #expect(Date().timeIntervalSince(start) < 2)
    }

    @Test func tlsHandshakeWithAPlainHTTPServerIsATLSFailure() async throws {
        try await withFixtureServer { server in
            let url = URL(string: "https://127.0.0.1:\(server.port)/image/a")!
            let error = await pipelineError { _ = try await makePipeline(HTTPDataLoader()).image(for: ImageRequest(url: url)) }
            guard case .http(.network(.tls, _))? = error else { Issue.record("got \(String(describing: error))"); return }
        }
    }

    /// A 70-character label is refused by the resolver itself (DNS labels end at 63), so the
    /// lookup fails without a packet leaving the machine.
    @Test func unresolvableHostIsADNSFailure() async throws {
        let url = URL(string: "http://\(String(repeating: "a", count: 70)).invalid/x")!
        let error = await pipelineError { _ = try await makePipeline(HTTPDataLoader()).image(for: ImageRequest(url: url)) }
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
