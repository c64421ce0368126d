import CMicroHTTPD

/// A response built for MHD (`MHD_Response`), not yet queued; destroyed by whoever drops it.
struct PreparedResponse: @unchecked Sendable {  // handed from the finishing thread to MHD's, under the server's lock
    let pointer: OpaquePointer
    let status: UInt32
}

/// One request on one connection, from its request line (libmicrohttpd's URI callback, which
/// makes it) to MHD's completion notice (which drops it). Lives in MHD's per-request context
/// pointer, retained.
///
/// `@unchecked Sendable`: the mutable fields are read and written only under ``ServerCore``'s
/// lock (`ServerCore.state`).
final class Exchange: @unchecked Sendable {
    enum Phase {
        /// Headers are being read: MHD has not called the access handler.
        case reading
        /// The headers are in (MHD's first call; a response queued now would close the
        /// connection, so only a refused body is answered then); the request runs at the next.
        case received
        /// Suspended while the handler's task runs.
        case running
        /// The response is built and the connection resumed; MHD's next call queues it (`nil`:
        /// it could not be built, so the connection is closed).
        case answered(PreparedResponse?)
        /// The response is queued (or refused at once): nothing is left to do.
        case queued
    }

    let id: UInt64
    /// The request target exactly as it came on the request line.
    let target: String
    var phase = Phase.reading
    /// Valid while the connection is suspended (phase `running`).
    var connection: OpaquePointer?
    /// The connection's socket, watched while suspended; -1 when MHD did not say.
    var socket: Int32 = -1
    /// A HEAD request (set before the handler runs).
    var isHead = false
    /// The handler's task, cancelled when the request is answered without it.
    var task: Task<Void, Never>?

    init(id: UInt64, target: String) {
        self.id = id
        self.target = target
    }

    deinit {
        if case .answered(let response?) = phase { MHD_destroy_response(response.pointer) }
    }
}
