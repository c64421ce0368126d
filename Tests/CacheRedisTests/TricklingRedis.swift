import Foundation
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// A fake Redis on 127.0.0.1 (an ephemeral port) that answers every command with a simple
/// string of `replyLength` bytes (default 2,000, as `fakeredis.py trickle` of the hostile
/// reproductions) sent one byte every `interval`: each `recv` of a client returns within
/// milliseconds, a reply takes (`replyLength` + 3) × `interval`. Accepts and serves on threads
/// of its own; ``stop()`` closes everything.
final class TricklingRedis: Sendable {
    let port: Int
    private let listener: Int32
    private let interval: Duration
    private let replyLength: Int
    private struct State {
        var stopped = false
        var clients: [Int32] = []
    }
    private let state = Mutex(State())

    enum Failure: Error { case socket(String) }

    init(interval: Duration, replyLength: Int = 2000) throws {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw Failure.socket("socket") }
        guard let port = RedisServer.bindToLoopback(fd), listen(fd, 16) == 0 else {
            close(fd)
            throw Failure.socket("bind/listen")
        }
        listener = fd
        self.port = port
        self.interval = interval
        self.replyLength = replyLength
        Thread { [self] in acceptLoop() }.start()
    }

    /// Stops accepting and ends every connection (their threads then exit).
    func stop() {
        let clients = state.withLock { state -> [Int32] in
            state.stopped = true
            return state.clients
        }
        shutdown(listener, Int32(SHUT_RDWR))  // wakes the blocked accept, which then closes it
        for client in clients { shutdown(client, Int32(SHUT_RDWR)) }
    }

    private func acceptLoop() {
        while true {
            let client = accept(listener, nil, nil)
            let stopped = state.withLock { state -> Bool in
                if client >= 0, !state.stopped { state.clients.append(client) }
                return state.stopped
            }
            if stopped || client < 0 {
                if client >= 0 { close(client) }
                if stopped || errno != EINTR { break }
                continue
            }
            Thread { [self] in serve(client) }.start()
        }
        close(listener)
    }

    private func serve(_ client: Int32) {
        defer {
            state.withLock { $0.clients.removeAll { $0 == client } }
            close(client)
        }
        let reply = [UInt8]("+".utf8) + [UInt8](repeating: UInt8(ascii: "A"), count: replyLength) + [UInt8]("\r\n".utf8)
        var buffer = [UInt8](repeating: 0, count: 65536)
        while true {
            let count = buffer.withUnsafeMutableBytes { recv(client, $0.baseAddress, $0.count, 0) }
            guard count > 0 else { return }
            // One reply per command in this read: a command starts with `*` at the start of a line.
            let commands = max(1, (0..<count).count { index in
                buffer[index] == UInt8(ascii: "*") && (index == 0 || buffer[index - 1] == UInt8(ascii: "\n"))
            })
            for byte in Array((0..<commands).map { _ in reply }.joined()) {
                guard !state.withLock({ $0.stopped }) else { return }
                var one = byte
                guard send(client, &one, 1, Int32(MSG_NOSIGNAL)) == 1 else { return }
                // The fake's own pace, not a test waiting on time: this is the hostile server.
                Thread.sleep(forTimeInterval: Double(interval.components.attoseconds) / 1e18
                    + Double(interval.components.seconds))
            }
        }
    }
}
