import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// The fault-injecting fixture server (`Tests/LoaderHTTPTests/Fixtures/fixture_server.py`) as a subprocess on
/// 127.0.0.1. Each test starts its own, so request counters never mix; ``stop()`` ends it, and
/// it also exits on its own when its stdin closes (if the test process dies).
public final class FixtureServer: Sendable {
    /// `http://127.0.0.1:<port>`.
    public let baseURL: URL
    /// The port it listens on.
    public let port: Int
    private let child: ExternalTool.Child

    /// What the server counted, from `/stats`.
    public struct Stats: Decodable {
        public var hits: [String: Int]
        public var statuses: [String: [Int]]
        public var log: [String]
        public var disconnects: [String: Double]
        public var sent: [String: Int]
        public var ports: [Int]
        public var max_active: Int
        /// The `Accept-Encoding` each path's last request sent ("" for none).
        public var accept_encoding: [String: String]
        /// The headers each path's last request sent, names lower-case.
        public var headers: [String: [String: String]]
    }

    /// Starts a server. The blocking part (launching, waiting for the port) runs on a thread
    /// of its own so that parallel tests never starve the cooperative pool.
    /// With `tls` (PEM certificate and key paths) the server speaks HTTPS.
    public static func start(tls: (certificate: String, key: String)? = nil) async throws -> FixtureServer {
        let arguments = tls.map { ["--tls", $0.certificate, $0.key] } ?? []
        return try await withCheckedThrowingContinuation { continuation in
            Thread { continuation.resume(with: Result { try FixtureServer(arguments: arguments) }) }.start()
        }
    }

    private init(arguments: [String]) throws {
        let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
            .appendingPathComponent("../LoaderHTTPTests/Fixtures/fixture_server.py")
        let child = try ExternalTool.Child("/usr/bin/env", ["python3", script.path] + arguments)
        guard let text = try child.firstLine()?.trimmingCharacters(in: .whitespacesAndNewlines),
              text.hasPrefix("PORT "), let port = Int(text.dropFirst(5)),
              let url = URL(string: "\(arguments.isEmpty ? "http" : "https")://127.0.0.1:\(port)")
        else { throw FixtureError.didNotStart }
        self.port = port
        self.baseURL = url
        self.child = child
    }

    /// Stops the server and waits (on a thread of its own) for it to exit.
    public func stop() async {
        let child = child
        await withCheckedContinuation { continuation in
            Thread {
                child.stop()
                continuation.resume()
            }.start()
        }
    }

    /// Lets the requests waiting on `/hold/<name>` go on.
    public func release(_ name: String) async throws {
        _ = try await get("/release/\(name)")
    }

    /// Waits until `path` was asked for `count` times (the server gives up after 60 s) and
    /// returns how many times it was: a test waits for its request to reach the origin.
    @discardableResult
    public func awaitHits(_ path: String, count: Int = 1) async throws -> Int {
        let query = path.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? ""
        return Int(String(decoding: try await get("/awaithits/?path=\(query)&count=\(count)"), as: UTF8.self)) ?? 0
    }

    /// Moves `/version/<name>` to its next version: new bytes and validators (with `junk`,
    /// bytes no decoder accepts).
    public func bump(_ name: String, junk: Bool = false) async throws {
        _ = try await get("/bump/\(name)" + (junk ? "?junk=1" : ""))
    }

    /// The URL of `path` (with its query) on this server.
    public func url(_ path: String) -> URL {
        URL(string: baseURL.absoluteString + path)!  // test-owned literals
    }

    /// The server's counters, fetched over a plain socket so the loaders under test see nothing.
    public func stats() async throws -> Stats {
        try JSONDecoder().decode(Stats.self, from: try await get("/stats"))
    }

    /// Requests of `path` the server received.
    public func hits(_ path: String) async throws -> Int { try await stats().hits[path] ?? 0 }

    /// `get(port:path:)` on a thread of its own: its socket calls block.
    private func get(_ path: String) async throws -> Data {
        let port = port
        return try await withCheckedThrowingContinuation { continuation in
            Thread { continuation.resume(with: Result { try Self.get(port: port, path: path) }) }.start()
        }
    }

    /// A minimal HTTP/1.0 GET returning the body.
    private static func get(port: Int, path: String) throws -> Data {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw FixtureError.socket }
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard connected == 0 else { throw FixtureError.socket }
        let request = Array("GET \(path) HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n".utf8)
        guard send(fd, request, request.count, 0) == request.count else { throw FixtureError.socket }
        var response = Data()
        var buffer = [UInt8](repeating: 0, count: 65536)
        while true {
            let count = recv(fd, &buffer, buffer.count, 0)
            if count <= 0 { break }
            response.append(contentsOf: buffer[0..<count])
        }
        guard let split = response.range(of: Data("\r\n\r\n".utf8)) else { throw FixtureError.socket }
        return response[split.upperBound...]
    }

    public enum FixtureError: Error {
        case didNotStart, socket
    }
}

/// One fixture server for the whole test process, for tests whose paths never collide (the
/// failure matrix: each case its own path, its hits counted as a difference). Starting one
/// Python process instead of one per case keeps a starved machine from timing out its cases.
/// It exits with the test process (its stdin closes).
public actor SharedFixtureServer {
    /// The one instance.
    public static let instance = SharedFixtureServer()
    private var starting: Task<FixtureServer, any Error>?

    /// The server, started by the first caller.
    public func server() async throws -> FixtureServer {
        if let starting { return try await starting.value }
        let task = Task { try await FixtureServer.start() }
        starting = task
        return try await task.value
    }
}

/// Runs `body` with a fresh fixture server and stops the server afterwards, on every path.
public func withFixtureServer<T>(tls: (certificate: String, key: String)? = nil,
                          _ body: (FixtureServer) async throws -> T) async throws -> T {
    let server = try await FixtureServer.start(tls: tls)
    do {
        let result = try await body(server)
        await server.stop()
        return result
    } catch {
        await server.stop()
        throw error
    }
}
