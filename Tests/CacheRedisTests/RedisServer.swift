import Foundation
import PipelineTestSupport

#if canImport(Glibc)
import Glibc
#endif

/// A real `redis-server` on 127.0.0.1, started by the test on a free port (found by binding a
/// socket first: old servers do not support `--port 0`), without persistence.
final class RedisServer: Sendable {
    let port: Int
    private let child: ExternalTool.Child

    enum Failure: Error { case notInstalled, didNotStart, noPort }

    /// `nil` when `redis-server` is not installed (the tests then skip with a message).
    static var executable: String? {
        ["/usr/bin/redis-server", "/usr/local/bin/redis-server"].first { FileManager.default.isExecutableFile(atPath: $0) }
    }

    /// Starts a server and waits (on a thread of its own) for "Ready to accept connections".
    static func start(arguments: [String] = []) async throws -> RedisServer {
        try await withCheckedThrowingContinuation { continuation in
            Thread { continuation.resume(with: Result { try RedisServer(arguments: arguments) }) }.start()
        }
    }

    private init(arguments: [String]) throws {
        guard let executable = Self.executable else { throw Failure.notInstalled }
        // A few ports: the free port is found by binding and closing, and another test's server
        // or connection can take it before redis-server binds it (seen once in CI: the server
        // exited before it was ready). A server that ends before "Ready" is tried again elsewhere.
        for attempt in 1...5 {
            let port = try Self.freePort()
            let child = try ExternalTool.Child(executable, [
                "--port", String(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir",
                FileManager.default.temporaryDirectory.path,
            ] + arguments)
            var ready = false
            while let line = try child.firstLine() {
                if line.contains("Ready to accept connections") {
                    ready = true
                    break
                }
            }
            guard ready else {
                child.kill()
                if attempt == 5 { throw Failure.didNotStart }
                continue
            }
            child.discardRemainingOutput()  // so the server never blocks on a full pipe
            self.port = port
            self.child = child
            return
        }
        throw Failure.didNotStart
    }

    /// Ends the server with SIGKILL (like a crash; it keeps nothing on disk) and waits for it
    /// to exit. Not SIGTERM: a child started by Foundation's `Process` from a test thread
    /// inherits a signal mask that blocks it, and the server would never exit.
    func stop() async {
        let child = child
        // Once only: a second signal could reach another process that got the reaped PID.
        guard child.process.isRunning else { return }
        await withCheckedContinuation { continuation in
            Thread {
                child.kill(SIGKILL)
                continuation.resume()
            }.start()
        }
    }

    /// A port nothing listens on now: bind port 0, read it back, close.
    static func freePort() throws -> Int {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw Failure.noPort }
        defer { close(fd) }
        guard let port = bindToLoopback(fd) else { throw Failure.noPort }
        return port
    }

    /// Binds the TCP socket `fd` to 127.0.0.1 on a port the kernel picks, and returns the port
    /// (`nil` when it cannot).
    static func bindToLoopback(_ fd: Int32) -> Int? {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = 0
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { pointer in
                bind(fd, pointer, length) == 0 && getsockname(fd, pointer, &length) == 0
            }
        }
        return bound ? Int(UInt16(bigEndian: address.sin_port)) : nil
    }
}
