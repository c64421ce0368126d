import Foundation
import PipelineTestSupport
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// A one-shot signal: ``fire()`` once, any number of ``wait()``ers resume.
final class Latch: Sendable {
    private let state = Mutex<(fired: Bool, waiters: [CheckedContinuation<Void, Never>])>((false, []))

    var isFired: Bool { state.withLock { $0.fired } }

    func fire() {
        let waiters = state.withLock { state in
            defer { state = (true, []) }
            return state.waiters
        }
        for waiter in waiters { waiter.resume() }
    }

    func wait() async {
        await withCheckedContinuation { continuation in
            let now = state.withLock { state in
                if !state.fired { state.waiters.append(continuation) }
                return state.fired
            }
            if now { continuation.resume() }
        }
    }
}

/// curl (Debian's binary) against the server, bounded.
func curl(_ arguments: [String]) async throws -> ExternalTool.Outcome {
    try await ExternalTool.run("/usr/bin/curl", ["-s", "--max-time", "60"] + arguments, timeout: 120)
}

/// A client speaking raw bytes over a POSIX socket to 127.0.0.1, for what curl will not send
/// (unnormalised paths, malformed or over-long requests) and for hanging up mid-request. Its
/// blocking calls run on a thread of their own, never on a cooperative one.
final class RawConnection: Sendable {
    let socket: Int32

    /// Connects to `port` on 127.0.0.1; reads give up after 60 s.
    init(port: Int) throws {
        let fd = Glibc.socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw POSIXError(.EMFILE) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard connected == 0 else {
            let code = errno
            Glibc.close(fd)
            throw POSIXError(POSIXErrorCode(rawValue: code) ?? .ECONNREFUSED)
        }
        var timeout = timeval(tv_sec: 60, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        socket = fd
    }

    /// Sends every byte of `bytes` (stops early when the server closed).
    func send(_ bytes: [UInt8]) {
        var sent = 0
        while sent < bytes.count {
            let count = bytes[sent...].withUnsafeBytes { Glibc.send(socket, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            if count <= 0 { return }
            sent += count
        }
    }

    func send(_ text: String) { send(Array(text.utf8)) }

    /// Everything the server sends until it closes the connection (or resets it).
    func readToEnd() async -> [UInt8] {
        await withCheckedContinuation { continuation in
            Thread {
                var received: [UInt8] = []
                var buffer = [UInt8](repeating: 0, count: 65536)
                while true {
                    let count = recv(self.socket, &buffer, buffer.count, 0)
                    if count <= 0 { break }
                    received += buffer[..<count]
                }
                continuation.resume(returning: received)
            }.start()
        }
    }

    /// One response, read up to its `Content-Length` (the connection stays open); `nil` when the
    /// server closed first.
    func readResponse() async -> RawResponse? {
        await withCheckedContinuation { continuation in
            Thread {
                var received: [UInt8] = []
                var buffer = [UInt8](repeating: 0, count: 65536)
                while true {
                    if let response = RawResponse(received), response.body.count >= Int(response.headers["content-length"] ?? "0") ?? 0 {
                        continuation.resume(returning: response)
                        return
                    }
                    let count = recv(self.socket, &buffer, buffer.count, 0)
                    if count <= 0 { break }
                    received += buffer[..<count]
                }
                continuation.resume(returning: nil)
            }.start()
        }
    }

    /// Shuts down the sending side (the server reads end-of-stream), keeping the socket to read.
    func shutdownSending() { Glibc.shutdown(socket, Int32(SHUT_WR)) }

    func close() { Glibc.close(socket) }
}

/// A response read by ``RawConnection``: status line, headers, body.
struct RawResponse {
    var status: Int
    var headers: [String: String]
    var body: [UInt8]

    /// Parses one response (`nil` when `bytes` hold none).
    init?(_ bytes: [UInt8]) {
        let separator: [UInt8] = Array("\r\n\r\n".utf8)
        guard let end = bytes.indices.first(where: { bytes[$0...].starts(with: separator) }) else { return nil }
        let lines = String(decoding: bytes[..<end], as: UTF8.self).components(separatedBy: "\r\n")
        let statusLine = lines[0].split(separator: " ")
        guard statusLine.count >= 2, let status = Int(statusLine[1]) else { return nil }
        self.status = status
        headers = [:]
        for line in lines.dropFirst() {
            guard let colon = line.firstIndex(of: ":") else { continue }
            headers[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
        }
        body = Array(bytes[(end + separator.count)...])
    }
}

/// How many sockets, epoll sets and eventfds this process has open (the kinds a server holds).
func serverDescriptorCount() -> Int {
    let entries = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd")) ?? []
    return entries.count { entry in
        guard let target = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/fd/\(entry)") else { return false }
        return target.hasPrefix("socket:") || target == "anon_inode:[eventpoll]" || target == "anon_inode:[eventfd]"
    }
}

/// Whether this machine has an IPv6 loopback to listen on (some containers have none).
func ipv6LoopbackAvailable() -> Bool {
    let fd = Glibc.socket(AF_INET6, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
    guard fd >= 0 else { return false }
    defer { Glibc.close(fd) }
    var address = sockaddr_in6()
    address.sin6_family = sa_family_t(AF_INET6)
    address.sin6_addr = in6addr_loopback
    return withUnsafePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in6>.size)) == 0 }
    }
}
