import CMicroHTTPD
import CMicroHTTPDShim
import Dispatch
import ImageServer
import PipelineCore
import Synchronization

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

#if canImport(Glibc)
import Glibc
#endif

/// The state behind one ``HTTPServer``: libmicrohttpd's callbacks land here (on MHD's one
/// polling thread), handler tasks finish here (on any thread), and the watcher reports expired
/// deadlines and vanished clients here (on its thread). One lock, `state`, orders them; it is
/// held across `MHD_resume_connection` (which takes only MHD's cleanup mutex, under which MHD
/// never calls back) so that no connection is resumed twice, or after the daemon stopped.
final class ServerCore: Sendable {
    struct State {
        var daemon: Daemon?
        var nextID: UInt64 = 1
        /// Requests handed to the handler whose response MHD has not finished with.
        var unsent: [UInt64: Exchange] = [:]
        /// Shutting down: new requests are answered 503, responses close their connection.
        var refusing = false
        /// The daemon is being stopped: nothing may be suspended any more.
        var stopping = false
        var drainWaiters: [UInt64: CheckedContinuation<Void, Never>] = [:]
        var nextWaiter: UInt64 = 0
        /// MHD's latest message, for a start failure's error.
        var lastMessage = ""
    }

    /// `struct MHD_Daemon *`, used under the lock or by the one thread that stops it.
    struct Daemon: @unchecked Sendable { let pointer: OpaquePointer }

    let handler: @Sendable (ServerRequest) async -> ServerResponse
    let requestTimeout: Duration
    let log: @Sendable (String) -> Void
    let state = Mutex(State())
    private let watcher: Mutex<SuspensionWatcher?> = Mutex(nil)

    init(handler: @escaping @Sendable (ServerRequest) async -> ServerResponse, requestTimeout: Duration,
         log: @escaping @Sendable (String) -> Void) {
        self.handler = handler
        self.requestTimeout = requestTimeout
        self.log = log
    }

    /// Starts the watcher; called once, before the daemon starts.
    func startWatching() throws(HTTPServerError) {
        let watcher = try SuspensionWatcher(
            expired: { [weak self] id in
                self?.answerInstead(id, .text(504, "Gateway Timeout: the request took too long"))
            },
            closed: { [weak self] id in
                // Nobody reads an answer: the connection is closed without one.
                self?.answerInstead(id, nil)
            })
        self.watcher.withLock { $0 = watcher }
    }

    // MARK: MHD's callbacks (its polling thread)

    /// A request line arrived: the exchange that follows it.
    func begin(target: String) -> Exchange {
        let id = state.withLock { state in
            defer { state.nextID += 1 }
            return state.nextID
        }
        return Exchange(id: id, target: target)
    }

    /// MHD's access handler. The first call (headers read) refuses a body, the second (the
    /// whole request read: a response queued earlier would make MHD close the connection)
    /// hands the request to a task and suspends the connection, and the call after the resume
    /// queues the response.
    func access(_ exchange: Exchange, connection: OpaquePointer, method: String) -> MHD_Result {
        let phase = state.withLock { _ in exchange.phase }
        switch phase {
        case .running, .queued:
            return MHD_Result.YES
        case .answered(let prepared):
            state.withLock { _ in exchange.phase = .queued }
            guard let prepared else { return MHD_Result.NO }
            defer { MHD_destroy_response(prepared.pointer) }
            return MHD_queue_response(connection, prepared.status, prepared.pointer)
        case .reading:
            if Self.hasBody(connection) {
                return queueAtOnce(exchange, connection, .text(413, "Content Too Large: request bodies are not accepted"))
            }
            state.withLock { _ in exchange.phase = .received }
            return MHD_Result.YES
        case .received:
            break
        }
        if state.withLock({ $0.refusing }) {
            return queueAtOnce(exchange, connection, .text(503, "Service Unavailable: the server is shutting down"))
        }
        let request = Self.request(exchange.target, method: method, connection: connection)
        exchange.isHead = method == "HEAD"  // before the exchange is published under the lock below
        MHD_suspend_connection(connection)
        let socket = cmhd_connection_fd(connection)
        let deadline = DispatchTime.now().uptimeNanoseconds &+ UInt64(Self.nanoseconds(requestTimeout))
        let admitted = state.withLock { state in
            exchange.connection = connection
            exchange.socket = socket
            state.unsent[exchange.id] = exchange
            guard !state.stopping else { return false }
            exchange.phase = .running
            watcher.withLock { $0?.watch(id: exchange.id, socket: socket, deadline: deadline) }
            return true
        }
        guard admitted else {
            // The daemon began stopping between the check above and the suspension.
            let prepared = Self.prepare(.text(503, "Service Unavailable: the server is shutting down"), closing: true)
            state.withLock { _ in
                exchange.phase = .answered(prepared)
                MHD_resume_connection(connection)
            }
            return MHD_Result.YES
        }
        let task = Task { [self] in
            let response = await handler(request)
            answer(exchange, with: response, cancelling: false)
        }
        let late = state.withLock { _ in
            guard case .running = exchange.phase else { return true }
            exchange.task = task
            return false
        }
        if late { task.cancel() }
        return MHD_Result.YES
    }

    /// MHD is done with the request (sent, failed or closed).
    func completed(_ exchange: Exchange) {
        let waiters = state.withLock { state -> [CheckedContinuation<Void, Never>] in
            guard state.unsent.removeValue(forKey: exchange.id) != nil, state.unsent.isEmpty else { return [] }
            defer { state.drainWaiters = [:] }
            return Array(state.drainWaiters.values)
        }
        for waiter in waiters { waiter.resume() }
    }

    /// One of MHD's messages.
    func record(_ message: String) {
        state.withLock { $0.lastMessage = message }
        log(message)
    }

    // MARK: Answers (any thread)

    /// Answers a running request with `response` (`nil`: close the connection without one) and
    /// resumes its connection; does nothing when it was answered already (the handler finishing
    /// after its deadline, say).
    func answer(_ exchange: Exchange, with response: ServerResponse?, cancelling: Bool) {
        let running = state.withLock { _ in
            if case .running = exchange.phase { true } else { false }
        }
        guard running else { return }
        // Built outside the lock: it copies the body.
        let prepared = response.flatMap { Self.prepare($0, closing: state.withLock { $0.refusing }, head: exchange.isHead) }
        let outcome = state.withLock { _ -> (answered: Bool, task: Task<Void, Never>?) in
            guard case .running = exchange.phase, let connection = exchange.connection else { return (false, nil) }
            exchange.phase = .answered(prepared)
            watcher.withLock { $0?.forget(id: exchange.id, socket: exchange.socket) }
            MHD_resume_connection(connection)
            exchange.connection = nil
            defer { exchange.task = nil }
            return (true, exchange.task)
        }
        if !outcome.answered, let prepared { MHD_destroy_response(prepared.pointer) }
        if cancelling { outcome.task?.cancel() }
    }

    /// Answers request `id` with `response` if it still runs, and cancels its handler.
    private func answerInstead(_ id: UInt64, _ response: ServerResponse?) {
        guard let exchange = state.withLock({ $0.unsent[id] }) else { return }
        answer(exchange, with: response, cancelling: true)
    }

    // MARK: Shutdown

    /// Stop accepting, wait up to `gracePeriod` for the requests in flight, answer the rest 503,
    /// give those answers a moment to leave, then stop the daemon.
    func shutdown(gracePeriod: Duration) async {
        let daemon = state.withLock { state in
            state.refusing = true
            return state.daemon
        }
        guard let daemon else { return }
        let listener = MHD_quiesce_daemon(daemon.pointer)
        if listener >= 0 { close(listener) }
        await waitUntilDrained(within: gracePeriod)
        answerEveryRunningRequest()
        await waitUntilDrained(within: .seconds(1))
        stop()
    }

    /// Answers every running request 503 (cancelling its task) and stops the daemon at once.
    func stopNow() {
        answerEveryRunningRequest()
        stop()
    }

    private func answerEveryRunningRequest() {
        let running = state.withLock { state in
            state.refusing = true
            state.stopping = true
            return state.unsent.values.filter { if case .running = $0.phase { true } else { false } }
        }
        for exchange in running {
            answer(exchange, with: .text(503, "Service Unavailable: the server is shutting down"), cancelling: true)
        }
    }

    /// Stops the watcher and the daemon; every connection is resumed by now.
    private func stop() {
        let daemon = state.withLock { state in
            state.stopping = true
            defer { state.daemon = nil }
            return state.daemon
        }
        watcher.withLock { $0 }?.stop()
        if let daemon { MHD_stop_daemon(daemon.pointer) }
        let waiters = state.withLock { state in
            defer { state.drainWaiters = [:] }
            return Array(state.drainWaiters.values)
        }
        for waiter in waiters { waiter.resume() }
    }

    private func waitUntilDrained(within limit: Duration) async {
        await withTaskGroup(of: Void.self) { group in
            group.addTask { await self.drained() }
            group.addTask { try? await Task.sleep(for: limit) }
            await group.next()
            group.cancelAll()
        }
    }

    /// Returns once no request is in flight, or when cancelled.
    private func drained() async {
        let key = state.withLock { state in
            defer { state.nextWaiter += 1 }
            return state.nextWaiter
        }
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let now = state.withLock { state in
                    if state.unsent.isEmpty || state.daemon == nil || Task.isCancelled { return true }
                    state.drainWaiters[key] = continuation
                    return false
                }
                if now { continuation.resume() }
            }
        } onCancel: {
            state.withLock { $0.drainWaiters.removeValue(forKey: key) }?.resume()
        }
    }

    // MARK: Requests and responses

    private func queueAtOnce(_ exchange: Exchange, _ connection: OpaquePointer, _ response: ServerResponse) -> MHD_Result {
        state.withLock { _ in exchange.phase = .queued }
        guard let prepared = Self.prepare(response, closing: true) else { return MHD_Result.NO }
        defer { MHD_destroy_response(prepared.pointer) }
        return MHD_queue_response(connection, prepared.status, prepared.pointer)
    }

    /// Whether the request announces a body (which the server refuses), or may: a
    /// `Transfer-Encoding`, a `Content-Length` other than 0, or more than one `Content-Length`
    /// (MHD reads the first; a proxy in front that read another would take the bytes after the
    /// headers for a body where MHD reads a second request).
    private static func hasBody(_ connection: OpaquePointer) -> Bool {
        if MHD_lookup_connection_value(connection, .HEADER_KIND, "Transfer-Encoding") != nil { return true }
        var lengths: [String] = []
        withUnsafeMutablePointer(to: &lengths) { pointer in
            _ = MHD_get_connection_values_n(connection, .HEADER_KIND, { context, _, key, keySize, value, valueSize in
                guard let context, let key else { return MHD_Result.YES }
                let name = String(decoding: UnsafeRawBufferPointer(start: key, count: keySize), as: UTF8.self)
                guard name.lowercased() == "content-length" else { return MHD_Result.YES }
                let text = value.map { String(decoding: UnsafeRawBufferPointer(start: $0, count: valueSize), as: UTF8.self) } ?? ""
                context.assumingMemoryBound(to: [String].self).pointee.append(text)
                return MHD_Result.YES
            }, pointer)
        }
        return lengths.count > 1 || lengths.contains { $0.trimmingSpacesAndTabs() != "0" }
    }

    /// The request as the handler sees it: the target split at its first `?`, as received.
    private static func request(_ target: String, method: String, connection: OpaquePointer) -> ServerRequest {
        var fields: [(name: String, value: String)] = []
        withUnsafeMutablePointer(to: &fields) { pointer in
            _ = MHD_get_connection_values_n(connection, .HEADER_KIND, { context, _, key, keySize, value, valueSize in
                guard let context, let key else { return MHD_Result.YES }
                let fields = context.assumingMemoryBound(to: [(name: String, value: String)].self)
                let name = String(decoding: UnsafeRawBufferPointer(start: key, count: keySize), as: UTF8.self)
                let text = value.map { String(decoding: UnsafeRawBufferPointer(start: $0, count: valueSize), as: UTF8.self) } ?? ""
                fields.pointee.append((name, text))
                return MHD_Result.YES
            }, pointer)
        }
        var address = [CChar](repeating: 0, count: 64)
        let remote = cmhd_connection_address(connection, &address, address.count) == 0
            ? String(decoding: address.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self) : nil
        let path: Substring, query: Substring?
        if let mark = target.firstIndex(of: "?") {
            path = target[..<mark]
            query = target[target.index(after: mark)...]
        } else {
            path = target[...]
            query = nil
        }
        return ServerRequest(method: method, path: String(path), query: query.map(String.init), headers: HTTPFields(fields),
                             remoteAddress: remote)
    }

    /// `response` as an `MHD_Response` (the body copied once: see ``HTTPServer``), with
    /// `Connection: close` when `closing`; `nil` when MHD cannot allocate it. A status outside
    /// 100…999, which MHD refuses, becomes 500. An answer to HEAD (`head`) with an empty body
    /// announces the length its `Content-Length` field states (MHD sets that field itself).
    static func prepare(_ response: ServerResponse, closing: Bool, head: Bool = false) -> PreparedResponse? {
        let pointer: OpaquePointer?
        if head, response.body.isEmpty, let stated = response.headers["Content-Length"].flatMap({ UInt64($0) }), stated > 0 {
            pointer = cmhd_create_head_response(stated)
        } else {
            pointer = response.body.withUnsafeBytes { body in
                MHD_create_response_from_buffer(body.count, UnsafeMutableRawPointer(mutating: body.baseAddress), .RESPMEM_MUST_COPY)
            }
        }
        guard let pointer else { return nil }
        // MHD refuses (and so drops) a field with CR or LF in it, or one it sets itself.
        for field in response.headers { _ = MHD_add_response_header(pointer, field.name, field.value) }
        if closing { _ = MHD_add_response_header(pointer, "Connection", "close") }
        let status = (100...999).contains(response.status) ? UInt32(response.status) : 500
        return PreparedResponse(pointer: pointer, status: status)
    }

    static func nanoseconds(_ duration: Duration) -> Int {
        let (seconds, attoseconds) = duration.components
        return Int(clamping: min(seconds, 1_000_000_000)) &* 1_000_000_000 &+ Int(attoseconds / 1_000_000_000)
    }
}
