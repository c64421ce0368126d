import CMicroHTTPD
import CMicroHTTPDShim
import ImageServer
import LazyLibraries
import Synchronization

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

#if canImport(Glibc)
import Glibc
#endif

/// An HTTP/1.1 server on libmicrohttpd that hands each request to a Swift handler.
///
/// libmicrohttpd reads and writes on one polling thread of its own (epoll). When a request's
/// headers are in, the server copies method, target, headers and client address into a
/// `ServerRequest`, suspends the connection and runs the handler in a task; the task's
/// response is copied once into MHD's buffer on the thread that finished it, and the connection
/// resumed. A watcher thread keeps each request's deadline and notices a client that closes
/// while its request is suspended (MHD does neither for a suspended connection), cancelling the
/// handler's task in both cases (a client gone is closed without an answer; a late one gets
/// 504). Request bodies are refused (413); any method reaches the handler.
public final class HTTPServer: Sendable {
    /// What the server accepts.
    public struct Configuration: Sendable {
        /// Address to listen on, an IPv4 or IPv6 literal (`127.0.0.1`, `0.0.0.0`, `::`).
        public var host: String
        /// Port; 0 picks a free one (``HTTPServer/port`` says which).
        public var port: Int
        /// How long the handler may take before the client gets 504 and the handler's task is
        /// cancelled; default 10 seconds (imgproxy's `IMGPROXY_TIMEOUT`).
        public var requestTimeout: Duration
        /// Most connections open at once; at the limit MHD stops accepting, so further ones wait
        /// in the kernel's listen backlog until one closes. Default 1024.
        public var connectionLimit: Int
        /// How long a connection may stay idle (keep-alive, or a slow client) before it is
        /// closed, rounded up to whole seconds; default 10 (imgproxy's `IMGPROXY_KEEP_ALIVE_TIMEOUT`).
        public var idleTimeout: Duration
        /// Memory per connection for the request line, headers and response headers, bytes;
        /// default 32 KiB. A longer URL is answered 414, longer headers 431.
        public var connectionMemoryLimit: Int
        /// Receives libmicrohttpd's own error messages (never written to stderr), on MHD's
        /// thread: keep it quick. Default drops them.
        public var errorLog: @Sendable (String) -> Void

        /// Creates a configuration.
        public init(host: String = "127.0.0.1", port: Int = 0, requestTimeout: Duration = .seconds(10),
                    connectionLimit: Int = 1024, idleTimeout: Duration = .seconds(10), connectionMemoryLimit: Int = 32 * 1024,
                    errorLog: @escaping @Sendable (String) -> Void = { _ in }) {
            self.host = host
            self.port = port
            self.requestTimeout = requestTimeout
            self.connectionLimit = connectionLimit
            self.idleTimeout = idleTimeout
            self.connectionMemoryLimit = connectionMemoryLimit
            self.errorLog = errorLog
        }
    }

    /// The port it listens on (the one picked when 0 was asked).
    public let port: Int

    private let core: ServerCore
    private let settings: Settings
    private let stopping = Mutex<Task<Void, Never>?>(nil)

    /// Starts listening; throws ``HTTPServerError`` when the host is not an address literal,
    /// the address cannot be bound, or libmicrohttpd (opened here, on first use) is not installed.
    public init(configuration: Configuration, handler: @escaping @Sendable (ServerRequest) async -> ServerResponse) throws {
        do { try LazyLibrary.microhttpd.load() } catch { throw HTTPServerError.libraryUnavailable(error) }
        guard (0...65535).contains(configuration.port) else {
            throw HTTPServerError.cannotListen(address: "\(configuration.host):\(configuration.port)", reason: "port out of range")
        }
        let core = ServerCore(handler: handler, requestTimeout: configuration.requestTimeout, log: configuration.errorLog)
        try core.startWatching()
        let settings = Settings(configuration, core: core)
        var error = CMHD_START_OK
        let daemon = configuration.host.withCString { host in
            settings.pointer.pointee.host = host
            defer { settings.pointer.pointee.host = nil }
            return cmhd_start(settings.pointer, &error)
        }
        guard let daemon else {
            core.stopNow()
            if error == CMHD_START_INVALID_HOST { throw HTTPServerError.invalidHost(configuration.host) }
            let address = configuration.host.contains(":") ? "[\(configuration.host)]" : configuration.host
            throw HTTPServerError.cannotListen(address: "\(address):\(configuration.port)",
                                               reason: core.state.withLock { $0.lastMessage })
        }
        core.state.withLock { $0.daemon = ServerCore.Daemon(pointer: daemon) }
        self.core = core
        self.settings = settings
        self.port = Int(cmhd_daemon_port(daemon))
    }

    /// Stops accepting connections, lets the requests in flight finish for up to `gracePeriod`,
    /// then cancels the rest and answers them 503, and stops. Requests that arrive meanwhile on
    /// open connections are answered 503 with `Connection: close`. Calling it again waits for
    /// the first call.
    public func shutdown(gracePeriod: Duration = .seconds(10)) async {
        let task = stopping.withLock { task in
            if let task { return task }
            // The task keeps the settings MHD's logger reads alive until the daemon stops, even
            // when the server is dropped before it ends.
            let core = core, settings = settings
            let started = Task {
                await core.shutdown(gracePeriod: gracePeriod)
                withExtendedLifetime(settings) {}
            }
            task = started
            return started
        }
        await task.value
    }

    deinit {
        // Callers should shut down; a server dropped without it stops at once (running requests
        // are answered 503 and their tasks cancelled) rather than leaking MHD's thread and socket.
        if stopping.withLock({ $0 == nil }) { core.stopNow() }
    }
}

/// The `cmhd_settings` handed to MHD, which its logger reads until the daemon stops; the
/// server keeps it (and the core it points to) alive that long.
private final class Settings: Sendable {
    nonisolated(unsafe) let pointer: UnsafeMutablePointer<cmhd_settings>  // written only before the daemon starts
    private let core: ServerCore

    init(_ configuration: HTTPServer.Configuration, core: ServerCore) {
        self.core = core
        pointer = .allocate(capacity: 1)
        pointer.initialize(to: cmhd_settings(
            host: nil, port: UInt16(configuration.port), connection_limit: UInt32(clamping: max(configuration.connectionLimit, 1)),
            idle_timeout_seconds: Self.wholeSeconds(configuration.idleTimeout),
            memory_limit: max(configuration.connectionMemoryLimit, 4096),
            access: accessCallback, completed: completedCallback, target: targetCallback, log: logCallback,
            context: Unmanaged.passUnretained(core).toOpaque()))
    }

    deinit { pointer.deallocate() }

    /// `duration` rounded up to whole seconds (MHD's unit, where 0 would mean never), at least 1.
    private static func wholeSeconds(_ duration: Duration) -> UInt32 {
        let (seconds, attoseconds) = duration.components
        return max(1, UInt32(clamping: seconds + (attoseconds > 0 ? 1 : 0)))
    }
}

private func server(_ context: UnsafeMutableRawPointer?) -> ServerCore? {
    context.map { Unmanaged<ServerCore>.fromOpaque($0).takeUnretainedValue() }
}

private let targetCallback: cmhd_target_callback = { context, target, _ in
    guard let core = server(context), let target else { return nil }
    return Unmanaged.passRetained(core.begin(target: String(cString: target))).toOpaque()
}

private let accessCallback: MHD_AccessHandlerCallback = { context, connection, _, method, _, _, _, request in
    guard let core = server(context), let connection, let method, let pointer = request?.pointee else { return MHD_Result.NO }
    let exchange = Unmanaged<Exchange>.fromOpaque(pointer).takeUnretainedValue()
    return core.access(exchange, connection: connection, method: String(cString: method))
}

private let completedCallback: MHD_RequestCompletedCallback = { context, _, request, _ in
    guard let core = server(context), let request, let pointer = request.pointee else { return }
    request.pointee = nil
    let exchange = Unmanaged<Exchange>.fromOpaque(pointer)
    core.completed(exchange.takeUnretainedValue())
    exchange.release()
}

private let logCallback: cmhd_log_sink = { context, line in
    guard let core = server(context), let line else { return }
    core.record(String(cString: line))
}
