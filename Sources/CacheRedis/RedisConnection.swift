import CHiredis

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// What one Redis command answered, reduced to what the tier needs.
enum RedisReply: Sendable, Equatable {
    case string(Data)
    case integer(Int64)
    case status(String)
    case null
    case error(String)
    /// A multi-bulk reply (`CLUSTER SLOTS`), nested as Redis sent it.
    case array([RedisReply])
}

/// Why a Redis command did not answer.
enum RedisFailure: Error, Sendable {
    case connect(String)
    case io(String)
    /// The command's (or connect's) whole deadline passed: the connection is dropped, since
    /// replies still on their way would answer the next command.
    case timeout
}

/// One hiredis connection whose every operation has a whole deadline: the socket is
/// non-blocking and each wait is a `poll` for what is left of the deadline, so a server that
/// trickles its reply (a byte every few milliseconds, each `recv` well inside any per-call
/// timeout) fails the command when the deadline passes. hiredis connects (resolving the host,
/// which no deadline bounds: give an IP address) and parses replies; the commands are formatted
/// by hiredis and sent here with `MSG_NOSIGNAL`, so a peer that went away is an error, never a
/// `SIGPIPE`. Not thread-safe: ``RedisCache``'s idle list hands it (under its lock) to one
/// worker thread at a time, which is what makes the unchecked `Sendable` sound. Call only off
/// the cooperative pool.
final class RedisConnection: @unchecked Sendable {
    private var context: UnsafeMutablePointer<redisContext>?
    /// Formatted commands not yet written to the socket.
    private var output: [UInt8] = []
    /// Set when an operation failed or timed out: the reply stream is out of step.
    private var failed = false
    /// The connect timeout, also the default whole deadline of ``command(_:timeout:)``.
    let timeout: Duration

    /// Connects within `timeout` (the TCP handshake; see the type for name resolution).
    init(host: String, port: Int, timeout: Duration) throws(RedisFailure) {
        let deadline = ContinuousClock.now.advanced(by: timeout)
        guard let context = redisConnectNonBlock(host, Int32(clamping: port)) else { throw .connect("out of memory") }
        if let failure = Self.finishConnect(context, deadline: deadline) {
            redisFree(context)
            throw failure
        }
        self.context = context
        self.timeout = timeout
    }

    deinit { if let context { redisFree(context) } }

    /// Whether the connection failed and must be dropped.
    var isBroken: Bool { failed || context.map { $0.pointee.err != 0 } ?? true }

    /// Sends the commands in one round trip (pipelining) and returns their replies in order,
    /// all within `timeout` from now (default: the connect timeout).
    func pipeline(_ commands: [[Data]], timeout: Duration? = nil) throws(RedisFailure) -> [RedisReply] {
        let deadline = ContinuousClock.now.advanced(by: timeout ?? self.timeout)
        try append(commands)
        try flush(until: deadline)
        return try replies(commands.count, until: deadline)
    }

    /// Buffers the commands without sending them (see ``flush(until:)`` and ``replies(_:until:)``).
    func append(_ commands: [[Data]]) throws(RedisFailure) {
        guard context != nil, !failed else { throw .io("closed") }
        for command in commands {
            var formatted: UnsafeMutablePointer<CChar>?
            let length = Self.withArgv(command) { argc, argv, lengths in
                redisFormatCommandArgv(&formatted, argc, argv, lengths)
            }
            defer { if let formatted { redisFreeCommand(formatted) } }
            guard let length, length > 0, let formatted else { throw .io("cannot format a command") }
            formatted.withMemoryRebound(to: UInt8.self, capacity: Int(length)) { bytes in
                output.append(contentsOf: UnsafeBufferPointer(start: bytes, count: Int(length)))
            }
        }
    }

    /// Writes every buffered command to the socket before `deadline`, without waiting for a
    /// reply, so that several connections (one per cluster node) work in parallel from one thread.
    func flush(until deadline: ContinuousClock.Instant) throws(RedisFailure) {
        guard let context, !failed else { throw .io("closed") }
        var sent = 0
        while sent < output.count {
            let count = output.withUnsafeBytes { raw in
                send(context.pointee.fd, raw.baseAddress.map { $0 + sent }, raw.count - sent, Int32(MSG_NOSIGNAL))
            }
            if count > 0 {
                sent += count
            } else if count < 0, errno == EINTR {
                continue
            } else if count < 0, errno == EAGAIN || errno == EWOULDBLOCK {
                try wait(for: Int16(POLLOUT), until: deadline)
            } else {
                throw broken(.io(count < 0 ? String(cString: strerror(errno)) : "nothing written"))
            }
        }
        output.removeAll(keepingCapacity: output.count <= 64 << 10)
    }

    /// Reads `count` replies before `deadline` (sending whatever is still buffered first).
    func replies(_ count: Int, until deadline: ContinuousClock.Instant) throws(RedisFailure) -> [RedisReply] {
        guard let context, !failed else { throw .io("closed") }
        if !output.isEmpty { try flush(until: deadline) }
        var replies: [RedisReply] = []
        replies.reserveCapacity(count)
        while replies.count < count {
            var raw: UnsafeMutableRawPointer?
            guard redisGetReplyFromReader(context, &raw) == REDIS_OK else { throw broken(.io(Self.message(context))) }
            if let raw {
                defer { freeReplyObject(raw) }
                replies.append(Self.convert(raw.assumingMemoryBound(to: redisReply.self)))
                continue
            }
            // Nothing whole buffered: wait for more bytes, for what is left of the deadline.
            try wait(for: Int16(POLLIN), until: deadline)
            guard redisBufferRead(context) == REDIS_OK else { throw broken(.io(Self.message(context))) }
        }
        return replies
    }

    /// One command, answered within `timeout` (default: the connect timeout).
    func command(_ arguments: [Data], timeout: Duration? = nil) throws(RedisFailure) -> RedisReply {
        let replies = try pipeline([arguments], timeout: timeout)
        guard let reply = replies.first else { throw .io("no reply") }
        return reply
    }

    /// Marks the connection unusable and returns `failure` to throw.
    private func broken(_ failure: RedisFailure) -> RedisFailure {
        failed = true
        return failure
    }

    /// Waits until the socket is ready for `events` (or reports an error or hang-up, which the
    /// next `send` or read turns into a failure), or throws ``RedisFailure/timeout`` once
    /// `deadline` passed.
    private func wait(for events: Int16, until deadline: ContinuousClock.Instant) throws(RedisFailure) {
        guard let context else { throw .io("closed") }
        switch Self.poll(context.pointee.fd, events, until: deadline) {
        case .ready: return
        case .timedOut: throw broken(.timeout)
        case .failed(let message): throw broken(.io(message))
        }
    }

    private enum PollResult { case ready, timedOut, failed(String) }

    /// `poll` for `events` on `fd` until `deadline`, retried after a signal with the time left.
    /// Past the deadline it still polls once without waiting: a cluster reads its nodes' replies
    /// one after another, and a reply that arrived in time while an earlier node was read is
    /// an answer, not a timeout.
    private static func poll(_ fd: Int32, _ events: Int16, until deadline: ContinuousClock.Instant) -> PollResult {
        while true {
            let left = max(.zero, ContinuousClock.now.duration(to: deadline))
            let (seconds, attoseconds) = left.components
            // Rounded up, so a wait never ends just before the deadline and spins.
            let milliseconds = Int32(clamping: seconds.multipliedReportingOverflow(by: 1000).partialValue
                + (attoseconds + 999_999_999_999_999) / 1_000_000_000_000_000)
            var descriptor = pollfd(fd: fd, events: events, revents: 0)
            let result = Glibc.poll(&descriptor, 1, milliseconds)
            if result > 0 { return .ready }
            if result == 0, left == .zero || ContinuousClock.now >= deadline { return .timedOut }
            if result < 0, errno != EINTR { return .failed(String(cString: strerror(errno))) }
        }
    }

    /// Waits for a non-blocking connect to finish before `deadline`: `nil` when connected,
    /// else why not (the caller frees the context).
    private static func finishConnect(_ context: UnsafeMutablePointer<redisContext>,
                                      deadline: ContinuousClock.Instant) -> RedisFailure? {
        guard context.pointee.err == 0 else { return .connect(message(context)) }
        let fd = context.pointee.fd
        switch poll(fd, Int16(POLLOUT), until: deadline) {
        case .timedOut: return .timeout
        case .failed(let message): return .connect(message)
        case .ready: break
        }
        var error: Int32 = 0
        var length = socklen_t(MemoryLayout<Int32>.size)
        guard getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &length) == 0 else { return .connect(String(cString: strerror(errno))) }
        return error == 0 ? nil : .connect(String(cString: strerror(error)))
    }

    private static func convert(_ reply: UnsafeMutablePointer<redisReply>) -> RedisReply {
        let r = reply.pointee
        switch r.type {
        case REDIS_REPLY_STRING:
            guard let str = r.str else { return .string(Data()) }
            return .string(Data(bytes: str, count: Int(r.len)))
        case REDIS_REPLY_INTEGER: return .integer(r.integer)
        case REDIS_REPLY_STATUS: return .status(r.str.map { String(cString: $0) } ?? "")
        case REDIS_REPLY_ERROR: return .error(r.str.map { String(cString: $0) } ?? "")
        case REDIS_REPLY_ARRAY:
            guard let elements = r.element else { return .array([]) }
            return .array((0..<Int(r.elements)).map { index in elements[index].map(convert) ?? .null })
        default: return .null
        }
    }

    /// Calls `body` with argc, argv and argument lengths (binary-safe), or returns `nil` for
    /// an empty command.
    private static func withArgv<R>(_ arguments: [Data],
                                    _ body: (Int32, UnsafeMutablePointer<UnsafePointer<CChar>?>, UnsafePointer<Int>) -> R) -> R? {
        guard !arguments.isEmpty else { return nil }
        // One contiguous copy of all arguments, so every pointer stays valid for the call.
        var joined = Data()
        var offsets: [Int] = []
        var lengths: [Int] = []
        for argument in arguments {
            offsets.append(joined.count)
            lengths.append(argument.count)
            joined.append(argument)
        }
        joined.append(0)  // never empty, so the base address exists
        return joined.withUnsafeBytes { raw -> R? in
            guard let base = raw.bindMemory(to: CChar.self).baseAddress else { return nil }
            var argv: [UnsafePointer<CChar>?] = offsets.map { UnsafePointer(base.advanced(by: $0)) }
            return argv.withUnsafeMutableBufferPointer { argvBuffer -> R? in
                lengths.withUnsafeBufferPointer { lengthBuffer -> R? in
                    guard let argvBase = argvBuffer.baseAddress, let lengthBase = lengthBuffer.baseAddress else { return nil }
                    return body(Int32(arguments.count), argvBase, lengthBase)
                }
            }
        }
    }

    private static func message(_ context: UnsafeMutablePointer<redisContext>) -> String {
        withUnsafeBytes(of: context.pointee.errstr) { raw in
            String(decoding: raw.prefix(while: { $0 != 0 }), as: UTF8.self)
        }
    }
}
