import CCurl
import CCurlShim
import Dispatch
import PipelineCore
import Synchronization

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// What one attempt at a transfer came to, handed from the engine thread to the waiting task.
enum TransferOutcome: Sendable {
    /// A final response arrived in full, its headers ended (a status the callbacks let
    /// through: 200, 203 or 304).
    case completed(status: Int, metadata: HTTPResponseHeaders, body: Data)
    /// The server answered with a redirect to `location` (as sent, perhaps relative), which the
    /// loader follows itself after checking it.
    case redirected(location: String)
    /// The transfer failed; `metadata` is the final response's, when one arrived (for `Retry-After`).
    case failed(any Error, metadata: HTTPResponseHeaders?)
    /// The task was cancelled and the transfer removed.
    case cancelled
}

/// A transfer as the loader submits it: everything the engine thread needs to run it.
struct TransferJob: Sendable {
    let id: UInt64
    /// The URL this transfer asks for: the request's, or a redirect's target.
    let url: URL
    /// The URL the caller asked for, which a 404 names.
    let requestURL: URL
    /// Scheme, host and port: the unit of the per-host connection limit.
    let hostKey: Origin
    let priority: PriorityHandle
    /// Every header to send, validators and auth included.
    let headers: [(name: String, value: String)]
    let progress: (@Sendable (Int64, Int64?) -> Void)?
    /// Each piece of the final response's body and its offset (``DataLoadRequest/didReceiveData``).
    let didReceiveData: (@Sendable (Data, Int64) -> Void)?
    let continuation: CheckedContinuation<TransferOutcome, Never>
    /// Uptime (ns) past which the job is over its total timeout, counted from when it entered
    /// the engine's queue (`.max`: none); set by ``CurlMultiEngine/submit(_:)``.
    var deadline: UInt64 = .max
    /// Uptime (ns) past which the job, if it is still waiting, fails (`.max`: never).
    var queueDeadline: UInt64 = .max
    /// What the job holds while it waits, by ``HTTPDataLoader/Configuration/maxQueuedBytes``' estimate.
    var queuedBytes: Int = 0

    /// ``HTTPDataLoader/Configuration/queuedRequestBaseBytes`` plus the UTF-8 bytes of the URLs
    /// (the request's only when it is not the one sent) and of every header's name and value.
    static func estimatedQueuedBytes(url: String, requestURL: String?, headers: [(name: String, value: String)]) -> Int {
        headers.reduce(HTTPDataLoader.Configuration.queuedRequestBaseBytes + url.utf8.count + (requestURL?.utf8.count ?? 0)) {
            $0 + $1.name.utf8.count + $1.value.utf8.count
        }
    }
}

/// One running transfer: its easy handle and the response as it arrives.
///
/// Confined to the engine thread: created, configured, fed by curl's callbacks (which run
/// inside `curl_multi_perform` on that thread) and finished there. Never shared.
final class CurlTransfer {
    let job: TransferJob
    let easy: UnsafeMutableRawPointer
    let limits: HTTPDataLoader.Configuration
    private var headerList: UnsafeMutablePointer<curl_slist>?
    private(set) var status = 0
    /// The next header line is a response's first: its status line. Only that line is read as
    /// one; a later header whose name happens to start with "HTTP/" is an ordinary header.
    private var expectsStatusLine = true
    /// The body has started, so the final response's headers have ended: later header lines
    /// are trailers (after a chunked body), which curl also hands to the header callback. They
    /// are ignored. (Not set when headers end: a proxy's CONNECT reply, a 200, comes before the
    /// real response's headers; curl delivers no body of a redirect it follows or of a 1xx.)
    private var bodyStarted = false
    /// The current response's headers ended (its blank line arrived). `false` at completion
    /// means the connection closed inside them.
    private var headersComplete = false
    /// The `Location` of a redirect answer, which ends the transfer (the loader follows it).
    private var redirectLocation: String?
    /// Bytes of a redirect's body, read and dropped.
    private var redirectBodyBytes = 0
    /// Header bytes received (every response's, trailers too), for ``HTTPDataLoader/Configuration/maxHeaderBytes``.
    private var headerBytes = 0
    /// The first address the connection policy refused while curl connected; reported when no
    /// other address of the host could be connected to.
    private var refusal: ConnectionRefusal?
    private var responseHeaders: [(name: String, value: String)] = []
    private(set) var metadata: HTTPResponseHeaders?
    private(set) var body = Data()
    /// Set by a callback that aborts the transfer (bad status, HTML, too large).
    private(set) var abortReason: (any Error)?
    /// Uptime in nanoseconds of the last byte received, for the idle timeout.
    private(set) var lastActivity: UInt64
    /// Uptime in nanoseconds when the transfer started (left the queue).
    let startedAt: UInt64
    /// Uptime in nanoseconds past which the transfer is over its total timeout (`.max`: none),
    /// counted from when its job was queued.
    private let deadline: UInt64
    /// The engine's budget for the bytes all transfers hold, and this transfer's claim on it:
    /// room reserved for ``body`` (at least its size), given back by ``releaseResources()``.
    private let downloadMemory: DownloadMemoryBudget
    private var claimed: Int64 = 0
    /// Start (uptime, ns) of the current low-speed window, from the first byte on, and the
    /// bytes (headers and body) received in it.
    private var windowStart: UInt64?
    private var windowBytes = 0
    /// curl's own message for the last failure (CURLOPT_ERRORBUFFER), CURL_ERROR_SIZE bytes.
    private var errorBuffer: UnsafeMutablePointer<CChar>?

    init(job: TransferJob, easy: UnsafeMutableRawPointer, limits: HTTPDataLoader.Configuration, downloadMemory: DownloadMemoryBudget) {
        self.job = job
        self.easy = easy
        self.limits = limits
        self.downloadMemory = downloadMemory
        let now = DispatchTime.now().uptimeNanoseconds
        self.lastActivity = now
        self.startedAt = now
        self.deadline = job.deadline
    }

    /// Sets every option on the easy handle. Returns the first error curl reports.
    func configure() -> CURLcode {
        for (name, value) in job.headers {
            let line = value.isEmpty ? "\(name);" : "\(name): \(value)"  // "Name;" sends an empty header
            guard let list = curl_slist_append(headerList, line) else { return CURLE_OUT_OF_MEMORY }
            headerList = list
        }
        let https = job.url.scheme?.lowercased() == "https"
        let context = Unmanaged.passUnretained(self).toOpaque()
        let errorBuffer = UnsafeMutablePointer<CChar>.allocate(capacity: Int(CURL_ERROR_SIZE))
        errorBuffer.initialize(repeating: 0, count: Int(CURL_ERROR_SIZE))
        self.errorBuffer = errorBuffer
        let steps: [() -> CURLcode] = [
            { ccurl_easy_set_pointer(self.easy, CURLOPT_ERRORBUFFER, errorBuffer) },
            { ccurl_easy_set_string(self.easy, CURLOPT_URL, self.job.url.absoluteString) },
            { ccurl_easy_set_long(self.easy, CURLOPT_NOSIGNAL, 1) },
            // 100 KB, as the curl tool uses: most pictures arrive in one read instead of several.
            { ccurl_easy_set_long(self.easy, CURLOPT_BUFFERSIZE, 102_400) },
            { ccurl_easy_set_string(self.easy, CURLOPT_PROTOCOLS_STR, self.limits.requiresHTTPS ? "https" : "http,https") },
            // Redirects end the transfer: the loader checks and follows each itself.
            { ccurl_easy_set_long(self.easy, CURLOPT_FOLLOWLOCATION, 0) },
            { ccurl_easy_set_opensocket(self.easy, curlOpenSocketCallback, context) },
            { ccurl_easy_set_prereq(self.easy, curlPrereqCallback, context) },
            { ccurl_easy_set_long(self.easy, CURLOPT_CONNECTTIMEOUT_MS, Self.milliseconds(self.limits.connectTimeout)) },
            { ccurl_easy_set_long(self.easy, CURLOPT_HTTP_VERSION, CURL_HTTP_VERSION_2TLS) },
            { ccurl_easy_set_long(self.easy, CURLOPT_PIPEWAIT, https ? 1 : 0) },
            { ccurl_easy_set_string(self.easy, CURLOPT_USERAGENT, self.limits.userAgent) },
            // "": every encoding this libcurl decodes (gzip, deflate, br, zstd on Debian 12), named
            // in Accept-Encoding and decoded on arrival; the body handed on is the picture's bytes.
            { ccurl_easy_set_string(self.easy, CURLOPT_ACCEPT_ENCODING, "") },
            { ccurl_easy_set_slist(self.easy, CURLOPT_HTTPHEADER, self.headerList) },
            { ccurl_easy_set_write(self.easy, curlWriteCallback, context) },
            { ccurl_easy_set_header(self.easy, curlHeaderCallback, context) },
            { self.limits.caBundlePath.map { ccurl_easy_set_string(self.easy, CURLOPT_CAINFO, $0) } ?? CURLE_OK },
        ]
        for step in steps {
            let code = step()
            if code != CURLE_OK { return code }
        }
        return CURLE_OK
    }

    /// Frees what the transfer allocated besides the easy handle (which the engine frees).
    func releaseResources() {
        curl_slist_free_all(headerList)
        headerList = nil
        errorBuffer?.deallocate()
        errorBuffer = nil
        downloadMemory.release(claimed)
        claimed = 0
    }

    /// Claims room for a body of `size` bytes in the engine's ``DownloadMemoryBudget``, as the
    /// body arrives: double the claim so far (at least 64 KiB and `size`; at most the declared
    /// length of a body without a content coding, else ``HTTPDataLoader/Configuration/maxBodyBytes``),
    /// or just `size` when that does not fit; the room is reserved in ``body``, so the body never
    /// grows past its claim by itself. A declared length is not claimed before its bytes come:
    /// a slow host that declares 50 MB and trickles holds what it sent, not the budget. Sets the
    /// `overloaded` abort reason and returns `false` when even `size` does not fit.
    private func makeRoom(for size: Int64) -> Bool {
        guard size > claimed else { return true }
        let identity = metadata.map { Self.contentCodings($0.contentEncoding).isEmpty } ?? false
        let ceiling = max(size, (identity ? metadata?.contentLength : nil) ?? limits.maxBodyBytes)
        let doubled = min(max(size, claimed * 2, 64 << 10), ceiling)
        if downloadMemory.claim(doubled - claimed, holding: claimed) {
            claimed = doubled
        } else if downloadMemory.claim(size - claimed, holding: claimed) {
            claimed = size
        } else {
            let detail = "the downloads in flight hold \(downloadMemory.inUse) bytes; a body of \(size) would be over the limit of "
                + "\(downloadMemory.limit) together (maxDownloadMemory)"
            abortReason = ImagePipelineError.overloaded(job.requestURL, limit: .downloadMemory, detail: detail)
            return false
        }
        body.reserveCapacity(Int(claimed))
        return true
    }

    /// curl's detailed message for the failure, when it wrote one.
    var curlDetail: String? {
        guard let errorBuffer, errorBuffer.pointee != 0 else { return nil }
        errorBuffer[Int(CURL_ERROR_SIZE) - 1] = 0
        return String(cString: errorBuffer)
    }

    // MARK: Time limits (checked by the engine thread between curl calls)

    /// The error that ends the transfer at uptime `now` (nanoseconds), if a time limit passed:
    /// no byte for the idle timeout, the total timeout, or a low-speed window with too few bytes
    /// (a window that passes opens the next).
    func expiredLimit(at now: UInt64) -> (any Error)? {
        if now &- lastActivity > limits.idleTimeoutNanoseconds {
            return ImagePipelineError.timeout("no data for \(limits.idleTimeout) s (idle timeout)")
        }
        if now >= deadline, let total = limits.totalTimeout {
            // No figure for the time it queued: the message stays the same for the same failure.
            return ImagePipelineError.timeout("the transfer took longer than its total timeout of \(HTTPError.seconds(total)) s")
        }
        if limits.lowSpeedLimit > 0, let windowStart, now &- windowStart >= limits.lowSpeedTimeNanoseconds {
            if Double(windowBytes) < Double(limits.lowSpeedLimit) * limits.lowSpeedTime {
                return HTTPError.tooSlow(bytesPerSecond: limits.lowSpeedLimit, seconds: limits.lowSpeedTime)
            }
            self.windowStart = now
            windowBytes = 0
        }
        return nil
    }

    /// The earliest uptime (nanoseconds) at which ``expiredLimit(at:)`` may find a limit passed.
    var nextLimitCheck: UInt64 {
        var next = min(lastActivity.saturatingAdd(limits.idleTimeoutNanoseconds), deadline)
        if limits.lowSpeedLimit > 0, let windowStart {
            next = min(next, windowStart.saturatingAdd(limits.lowSpeedTimeNanoseconds))
        }
        return next
    }

    /// Notes `count` bytes (a header line or a piece of body) for the idle and low-speed checks.
    private func received(_ count: Int) {
        let now = DispatchTime.now().uptimeNanoseconds
        lastActivity = now
        if windowStart == nil { windowStart = now }
        windowBytes += count
    }

    /// At least 1 ms (0 would mean curl's default), at most `Int32.max` ms (24 days): a longer
    /// timeout, `.infinity` included, must not trap converting to `Int`.
    private static func milliseconds(_ seconds: TimeInterval) -> Int {
        let milliseconds = (seconds * 1000).rounded()
        guard milliseconds < Double(Int32.max) else { return Int(Int32.max) }
        return Int(max(1, milliseconds))
    }

    // MARK: Callbacks (on the engine thread, inside curl_multi_perform)

    /// Opens the socket for a connection to `address`, or refuses it (``CURL_SOCKET_BAD``)
    /// when the connection policy does not allow the address or port: nothing is sent to a
    /// refused address, not even a SYN.
    func openSocket(_ address: UnsafeMutablePointer<curl_sockaddr>) -> curl_socket_t {
        guard let offset = MemoryLayout<curl_sockaddr>.offset(of: \curl_sockaddr.addr),
              let (ip, port) = IPAddress.fromSocketAddress(UnsafeRawPointer(address) + offset, length: Int(address.pointee.addrlen))
        else {
            return ccurl_socket_bad()  // not an IPv4 or IPv6 address: nothing this loader connects to
        }
        if let refused = limits.connectionPolicy.refusal(connectingTo: ip, port: port, for: job.url) {
            if refusal == nil { refusal = refused }
            return ccurl_socket_bad()
        }
        return socket(address.pointee.family, address.pointee.socktype, address.pointee.protocol)
    }

    /// Checks the connection a request is about to be sent on (new or reused) once more: its
    /// address (`primaryIP`, as curl writes it) and port. Returns `false` to abort.
    func connectionReady(primaryIP: String, port: Int) -> Bool {
        guard let ip = IPAddress(primaryIP) else {
            abortReason = HTTPError.network(.connection, message: "curl connected to an address it did not name ('\(MessageText.escaped(primaryIP, limit: 64))')")
            return false
        }
        if let refused = limits.connectionPolicy.refusal(connectingTo: ip, port: port, for: job.url) {
            abortReason = HTTPError.refused(refused)
            return false
        }
        return true
    }

    /// One header line, as raw bytes. A status line starts a new response (redirects and 1xx
    /// come first); the blank line ends one, and a final response is checked before its body is
    /// read. Returns `false` to abort. Works on bytes: this runs for every header of every
    /// response, and Foundation's string trimming would cost more than the transfer.
    func receiveHeaderLine(_ line: UnsafeRawBufferPointer) -> Bool {
        received(line.count)
        headerBytes += line.count
        guard headerBytes <= limits.maxHeaderBytes else {
            abortReason = HTTPError.headersTooLarge(limit: limits.maxHeaderBytes)
            return false
        }
        if bodyStarted { return true }
        func isSpace(_ byte: UInt8) -> Bool { byte == 0x20 || byte == 0x09 || byte == 0x0D || byte == 0x0A }
        var end = line.count
        while end > 0 && isSpace(line[end - 1]) { end -= 1 }
        if end == 0 {
            expectsStatusLine = true  // a redirect or 1xx ended; the next response starts over
            return headersEnded()
        }
        if expectsStatusLine && end >= 5 && line[0] == UInt8(ascii: "H") && line[1] == UInt8(ascii: "T") && line[2] == UInt8(ascii: "T")
            && line[3] == UInt8(ascii: "P") && line[4] == UInt8(ascii: "/") {
            // "HTTP/1.1 200 OK", "HTTP/2 304": the code is the three digits after the first space
            // (at most three are read: a longer run of digits must not overflow).
            expectsStatusLine = false
            headersComplete = false
            status = 0
            if let space = line[..<end].firstIndex(of: 0x20) {
                for byte in line[(space + 1)..<end].prefix(3) {
                    guard (0x30...0x39).contains(byte) else { break }
                    status = status * 10 + Int(byte - 0x30)
                }
            }
            responseHeaders = []
            return true
        }
        guard let colon = line[..<end].firstIndex(of: UInt8(ascii: ":")) else { return true }
        var start = colon + 1
        while start < end && isSpace(line[start]) { start += 1 }
        let name = String(decoding: UnsafeRawBufferPointer(rebasing: line[..<colon]), as: UTF8.self)
        let value = String(decoding: UnsafeRawBufferPointer(rebasing: line[start..<end]), as: UTF8.self)
        responseHeaders.append((name, value))
        return true
    }

    /// Checks a response whose headers just ended. Only a complete answer goes on to its body:
    /// 200 or 203 (a 304 has none; a redirect's is dropped); any other status, a 206 and a
    /// 204 included, ends the transfer with ``HTTPError/badStatus(code:)`` (404 and 410 with
    /// `notFound`), as do an HTML page, a `Content-Encoding` curl cannot decode and a length
    /// over the limit.
    private func headersEnded() -> Bool {
        headersComplete = true
        if (100..<200).contains(status) { return true }
        let metadata = HTTPResponseHeaders(statusCode: status, headers: responseHeaders)
        self.metadata = metadata
        let location = responseHeaders.last { $0.name.utf8.count == 8 && $0.name.lowercased() == "location" }
        let isRedirect = (status == 301 || status == 302 || status == 303 || status == 307 || status == 308) && location != nil
        if isRedirect {
            redirectLocation = location?.value
            return true  // the loader follows it once the transfer ends
        }
        if status == 304 { return true }  // no body; the loader checks a validator was sent
        guard status == 200 || status == 203 else {
            abortReason = status == 404 || status == 410
                ? ImagePipelineError.notFound(job.requestURL, status: status) : HTTPError.badStatus(code: status)
            return false
        }
        if metadata.contentType == "text/html" {
            abortReason = HTTPError.notAPicture(contentType: "text/html")
            return false
        }
        if let unsupported = Self.contentCodings(metadata.contentEncoding).first(where: { !curlDecodableCodings.contains($0) }) {
            abortReason = HTTPError.unsupportedEncoding(unsupported)
            return false
        }
        if let length = metadata.contentLength {
            if length > limits.maxBodyBytes {
                abortReason = ImagePipelineError.tooLarge(limit: limits.maxBodyBytes, actual: length)
                return false
            }
        }
        return true
    }

    /// A piece of the body. Returns `false` to abort (over the size limit).
    func receiveBody(_ bytes: UnsafeRawBufferPointer) -> Bool {
        received(bytes.count)
        if redirectLocation != nil {
            // A redirect's body is read so its connection can be reused, up to 64 KiB; past
            // that the transfer ends (still a redirect) and the connection closes.
            redirectBodyBytes += bytes.count
            return redirectBodyBytes <= 64 << 10
        }
        bodyStarted = true
        guard Int64(body.count + bytes.count) <= limits.maxBodyBytes else {
            abortReason = ImagePipelineError.tooLarge(limit: limits.maxBodyBytes, actual: nil)
            return false
        }
        guard makeRoom(for: Int64(body.count + bytes.count)) else { return false }
        body.append(contentsOf: bytes)
        job.didReceiveData?(Data(bytes), Int64(body.count - bytes.count))
        job.progress?(Int64(body.count), metadata?.contentLength)
        return true
    }

    /// Marks the transfer as failed by the loader (a time limit, the engine), for ``outcome(for:)``.
    func abort(_ reason: any Error) {
        abortReason = reason
    }

    /// The outcome once curl reports the transfer done with `code`.
    func outcome(for code: CURLcode) -> TransferOutcome {
        if let abortReason { return .failed(abortReason, metadata: metadata) }
        if let redirectLocation, headersComplete { return .redirected(location: redirectLocation) }
        guard code == CURLE_OK else {
            if code == CURLE_COULDNT_CONNECT, let refusal { return .failed(HTTPError.refused(refusal), metadata: nil) }
            // libcurl refuses one header line over 100 KB itself, as "out of memory" (7.88 has
            // no code of its own for it): inside the headers, that is a header flood.
            if code == CURLE_OUT_OF_MEMORY, !headersComplete || curlDetail?.contains("header") == true {
                return .failed(HTTPError.headersTooLarge(limit: limits.maxHeaderBytes), metadata: nil)
            }
            return .failed(CurlErrors.map(code, transfer: self), metadata: metadata)
        }
        // curl ends a response cut inside its headers without an error (it saw a status line).
        guard headersComplete, let metadata else { return .failed(HTTPError.incompleteHeaders, metadata: nil) }
        return .completed(status: status, metadata: metadata, body: body)
    }

    /// The content codings of a `Content-Encoding` value, lower-case, in order, `identity` left
    /// out: empty for a body sent as is.
    static func contentCodings(_ value: String?) -> [String] {
        guard let value else { return [] }
        return value.split(separator: ",").map { $0.trimmingSpacesAndTabs().lowercased() }
            .filter { !$0.isEmpty && $0 != "identity" }
    }
}

/// The content codings this libcurl decodes (with CURLOPT_ACCEPT_ENCODING set), by the
/// features it was built with: gzip and deflate with zlib, br with brotli, zstd with zstd.
let curlDecodableCodings: Set<String> = {
    // `features` is part of the first version of the struct, so the oldest age will do.
    guard let info = curl_version_info(CURLVERSION_FIRST) else { return [] }
    let features = info.pointee.features
    var codings: Set<String> = []
    if features & CURL_VERSION_LIBZ != 0 { codings.formUnion(["gzip", "x-gzip", "deflate"]) }
    if features & CURL_VERSION_BROTLI != 0 { codings.insert("br") }
    if features & CURL_VERSION_ZSTD != 0 { codings.insert("zstd") }
    return codings
}()

extension UInt64 {
    /// `self + other`, `.max` instead of wrapping around.
    func saturatingAdd(_ other: UInt64) -> UInt64 {
        let (sum, overflow) = addingReportingOverflow(other)
        return overflow ? .max : sum
    }
}

/// CURLOPT_WRITEFUNCTION: hands the bytes to the transfer; a short count aborts.
private let curlWriteCallback: ccurl_data_callback = { data, size, count, context in
    guard let context else { return 0 }
    let transfer = Unmanaged<CurlTransfer>.fromOpaque(context).takeUnretainedValue()
    let length = size * count
    guard length > 0, let data else { return 0 }
    return transfer.receiveBody(UnsafeRawBufferPointer(start: data, count: length)) ? length : 0
}

/// CURLOPT_OPENSOCKETFUNCTION: the transfer opens the socket, or refuses the address.
private let curlOpenSocketCallback: curl_opensocket_callback = { context, _, address in
    guard let context, let address else { return ccurl_socket_bad() }
    return Unmanaged<CurlTransfer>.fromOpaque(context).takeUnretainedValue().openSocket(address)
}

/// CURLOPT_PREREQFUNCTION: the transfer checks the connection before the request is sent.
private let curlPrereqCallback: curl_prereq_callback = { context, primaryIP, _, primaryPort, _ in
    guard let context, let primaryIP else { return ccurl_prereq_abort() }
    let transfer = Unmanaged<CurlTransfer>.fromOpaque(context).takeUnretainedValue()
    return transfer.connectionReady(primaryIP: String(cString: primaryIP), port: Int(primaryPort)) ? ccurl_prereq_ok() : ccurl_prereq_abort()
}

/// CURLOPT_HEADERFUNCTION: one header line at a time; a short count aborts.
private let curlHeaderCallback: ccurl_data_callback = { data, size, count, context in
    guard let context, let data else { return 0 }
    let transfer = Unmanaged<CurlTransfer>.fromOpaque(context).takeUnretainedValue()
    let length = size * count
    return transfer.receiveHeaderLine(UnsafeRawBufferPointer(start: data, count: length)) ? length : 0
}
