import CHiredis
import Foundation

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
}

/// One blocking hiredis connection with millisecond connect and command timeouts. Not
/// thread-safe: ``RedisCache``'s idle list hands it (under its lock) to one worker thread at a
/// time, which is what makes the unchecked `Sendable` sound. Call only off the cooperative pool.
final class RedisConnection: @unchecked Sendable {
    private var context: UnsafeMutablePointer<redisContext>?

    init(host: String, port: Int, timeout: Duration) throws(RedisFailure) {
        let tv = Self.timeval(timeout)
        guard let context = redisConnectWithTimeout(host, Int32(clamping: port), tv) else {
            throw .connect("out of memory")
        }
        if context.pointee.err != 0 {
            let message = Self.message(context)
            redisFree(context)
            throw .connect(message)
        }
        guard redisSetTimeout(context, tv) == REDIS_OK else {
            redisFree(context)
            throw .connect("cannot set the command timeout")
        }
        self.context = context
    }

    deinit { if let context { redisFree(context) } }

    /// Whether the connection failed and must be dropped.
    var isBroken: Bool { context.map { $0.pointee.err != 0 } ?? true }

    /// Sends the commands in one round trip (pipelining) and returns their replies in order.
    func pipeline(_ commands: [[Data]]) throws(RedisFailure) -> [RedisReply] {
        try append(commands)
        return try replies(commands.count)
    }

    /// Buffers the commands without sending them (see ``flush()`` and ``replies(_:)``).
    func append(_ commands: [[Data]]) throws(RedisFailure) {
        guard let context else { throw .io("closed") }
        for command in commands {
            let status = Self.withArgv(command) { argc, argv, lengths in
                redisAppendCommandArgv(context, argc, argv, lengths)
            }
            guard status == REDIS_OK else { throw .io(Self.message(context)) }
        }
    }

    /// Writes every buffered command to the socket without waiting for a reply, so that
    /// several connections (one per cluster node) work in parallel from one thread.
    func flush() throws(RedisFailure) {
        guard let context else { throw .io("closed") }
        var done: Int32 = 0
        while done == 0 {
            guard redisBufferWrite(context, &done) == REDIS_OK else { throw .io(Self.message(context)) }
        }
    }

    /// Reads `count` replies (sending whatever is still buffered first).
    func replies(_ count: Int) throws(RedisFailure) -> [RedisReply] {
        guard let context else { throw .io("closed") }
        var replies: [RedisReply] = []
        replies.reserveCapacity(count)
        for _ in 0..<count {
            var raw: UnsafeMutableRawPointer?
            guard redisGetReply(context, &raw) == REDIS_OK, let raw else { throw .io(Self.message(context)) }
            let reply = raw.assumingMemoryBound(to: redisReply.self)
            defer { freeReplyObject(raw) }
            replies.append(Self.convert(reply))
        }
        return replies
    }

    /// One command.
    func command(_ arguments: [Data]) throws(RedisFailure) -> RedisReply {
        try pipeline([arguments])[0]
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

    private static func timeval(_ duration: Duration) -> timeval {
        let (seconds, attoseconds) = duration.components
        return Glibc.timeval(tv_sec: Int(seconds), tv_usec: Int(attoseconds / 1_000_000_000_000))
    }
}
