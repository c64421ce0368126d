import CProcessSpawn
import PipelineCore
import ProcessSpawn
import Synchronization

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// One running SVG worker (`SVGWorker`), this process's side of `SVGWorkerWire`: started with
/// a document, asked for its size, then perhaps for one drawing; killed and reaped when this is
/// released. Every wait on it is bounded by the worker's deadline and ends at once when the
/// decode job running on this thread is cancelled (`DecodeCancellation`): either
/// kills the worker.
final class SVGWorkerProcess {
    /// The document's natural size, as the worker parsed it.
    private(set) var naturalWidth = 0.0
    private(set) var naturalHeight = 0.0
    private(set) var sizeSource = SVGDocument.SizeSource.defaultSize

    private let worker: SVGWorker
    private let child: Child
    /// The worker's stdin (a socket, so a write to a dead worker fails with `EPIPE` instead of
    /// raising `SIGPIPE` in this process), stdout and stderr, non-blocking.
    private let input: Int32, output: Int32, errors: Int32
    private var inputOpen = true, errorsOpen = true
    /// The end of the worker's `timeLimit`.
    private let deadline: ContinuousClock.Instant
    /// The worker's last words on stderr (a Rust panic's message, an allocation failure).
    private var lastWords: [UInt8] = []

    /// Starts a worker for `data` and waits for its natural size.
    init(_ worker: SVGWorker, data: Data) throws {
        self.worker = worker
        deadline = .now + .milliseconds(Int(min(worker.timeLimit, 1e9) * 1000))
        var socketEnds: [Int32] = [-1, -1], outputEnds: [Int32] = [-1, -1], errorEnds: [Int32] = [-1, -1]
        #if os(Linux)
        let streamType = Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue)
        #else
        let streamType = SOCK_STREAM
        #endif
        guard socketpair(AF_UNIX, streamType, 0, &socketEnds) == 0 else {
            throw SVGWorkerError.couldNotStart(executable: worker.executable, reason: String(cString: strerror(errno)))
        }
        guard process_pipe(&outputEnds) == 0 else {
            let reason = String(cString: strerror(errno))
            socketEnds.forEach { close($0) }
            throw SVGWorkerError.couldNotStart(executable: worker.executable, reason: reason)
        }
        guard process_pipe(&errorEnds) == 0 else {
            let reason = String(cString: strerror(errno))
            (socketEnds + outputEnds).forEach { close($0) }
            throw SVGWorkerError.couldNotStart(executable: worker.executable, reason: reason)
        }
        let started = Result { try Child(worker, stdin: socketEnds[1], stdout: outputEnds[1], stderr: errorEnds[1]) }
        [socketEnds[1], outputEnds[1], errorEnds[1]].forEach { close($0) }
        (input, output, errors) = (socketEnds[0], outputEnds[0], errorEnds[0])
        switch started {
        case .success(let child): self.child = child
        case .failure(let error):
            [input, output, errors].forEach { close($0) }
            throw error
        }
        for descriptor in [input, output, errors] {
            _ = fcntl(descriptor, F_SETFL, fcntl(descriptor, F_GETFL) | O_NONBLOCK)
        }
        #if !os(Linux)
        var on: Int32 = 1  // Apple platforms have no MSG_NOSIGNAL: the socket itself never raises SIGPIPE
        _ = setsockopt(input, SOL_SOCKET, SO_NOSIGPIPE, &on, socklen_t(MemoryLayout<Int32>.size))
        #endif
        var open = SVGWorkerWire.Writer(.open)
        open.append(UInt64(max(0, worker.memoryLimit)))
        open.append(UInt32(min(Double(UInt32.max - 1), worker.timeLimit.rounded(.up) + 1)))
        open.append(UInt64(data.count))
        // From here on a throw releases this object, whose deinit kills and reaps the worker.
        var answer = [UInt8](repeating: 0, count: 5)
        try data.withUnsafeBytes { document in
            try exchange(open.bytes, then: document, into: &answer)
        }
        var reader = SVGWorkerWire.Reader(try readBody(after: answer, expecting: .size))
        naturalWidth = reader.readDouble()
        naturalHeight = reader.readDouble()
        let source = reader.read(UInt8.self)
        switch source {
        case 0: sizeSource = .intrinsic
        case 1: sizeSource = .viewBox
        case 2: sizeSource = .defaultSize
        default: throw SVGWorkerError.badAnswer("a size source of \(source)")
        }
        guard naturalWidth.isFinite, naturalHeight.isFinite, naturalWidth > 0, naturalHeight > 0,
              naturalWidth <= SVGDocument.largestSide, naturalHeight <= SVGDocument.largestSide else {
            throw SVGWorkerError.badAnswer("a natural size of \(naturalWidth)×\(naturalHeight)")
        }
    }

    deinit {
        child.end()
        [input, output, errors].forEach { close($0) }
    }

    /// The natural size in whole pixels, each side rounded up.
    var naturalSize: PixelSize {
        PixelSize(width: Int(naturalWidth.rounded(.up)), height: Int(naturalHeight.rounded(.up)))
    }

    /// Has the worker draw at `size` in `pixelFormat`, allowing it `memory` more bytes, and
    /// returns the bitmap once its header matched what was asked.
    func render(_ size: PixelSize, pixelFormat: PixelFormat, memory: Int) throws -> Bitmap {
        guard size.isValid, size.width <= UInt32.max, size.height <= UInt32.max else {
            throw ImagePipelineError.corruptData(format: .svg, message: "a canvas of \(size) px")
        }
        var draw = SVGWorkerWire.Writer(.draw)
        draw.append(UInt32(size.width))
        draw.append(UInt32(size.height))
        draw.append(SVGWorkerWire.code(pixelFormat))
        draw.append(UInt64(max(0, memory)))
        var answer = [UInt8](repeating: 0, count: 5)
        try exchange(draw.bytes, into: &answer)
        let body = try readBody(after: answer, expecting: .bitmap)
        var reader = SVGWorkerWire.Reader(body)
        let width = Int(reader.read(UInt32.self)), height = Int(reader.read(UInt32.self))
        let format = SVGWorkerWire.pixelFormat(reader.read(UInt8.self))
        // Checked before a byte is allocated for it: only the size and format asked for are read.
        guard width == size.width, height == size.height, format == pixelFormat else {
            throw SVGWorkerError.badAnswer("a \(width)×\(height) bitmap where \(size) was asked for")
        }
        var bitmap = Bitmap(zeroed: size, pixelFormat: pixelFormat)
        try bitmap.withUnsafeMutableBytes { pixels in
            try exchange(writing: [], into: UnsafeMutableRawBufferPointer(pixels))
        }
        return bitmap
    }

    /// The body of the answer whose first five bytes are `head`: of `kind`, or a failure thrown
    /// as the decoder's error.
    private func readBody(after head: [UInt8], expecting kind: SVGWorkerWire.Kind) throws -> [UInt8] {
        guard Array(head[0..<4]) == SVGWorkerWire.magic, let got = SVGWorkerWire.Kind(rawValue: head[4]),
              got == kind || got == .failure else {
            throw SVGWorkerError.badAnswer("an answer starting \(head)")
        }
        var body = [UInt8](repeating: 0, count: SVGWorkerWire.bodyLength(got))
        try exchange([], into: &body)
        guard got == .failure else { return body }
        var reader = SVGWorkerWire.Reader(body)
        let failure = reader.read(UInt8.self), length = Int(reader.read(UInt32.self))
        guard length <= SVGWorkerWire.maxMessageLength else { throw SVGWorkerError.badAnswer("a message of \(length) bytes") }
        var text = [UInt8](repeating: 0, count: length)
        try exchange([], into: &text)
        let message = String(decoding: text, as: UTF8.self)
        if SVGWorkerWire.FailureKind(rawValue: failure) == .unsupported {
            throw ImagePipelineError.unsupported(format: .svg, message: message)
        }
        throw ImagePipelineError.corruptData(format: .svg, message: message)
    }

    /// Sends `message` (and `document` after it), then fills `answer` from the worker's stdout.
    private func exchange(_ message: [UInt8], then document: UnsafeRawBufferPointer = UnsafeRawBufferPointer(start: nil, count: 0),
                          into answer: inout [UInt8]) throws {
        try answer.withUnsafeMutableBytes { target in
            try message.withUnsafeBytes { message in try exchange(writing: [message, document], into: target) }
        }
    }

    /// Writes `outgoing` to the worker's stdin while filling `target` from its stdout (and
    /// keeping the tail of its stderr), until both are done; throws the worker's fate when it
    /// ends first, passes its deadline or the job is cancelled.
    private func exchange(writing outgoing: [UnsafeRawBufferPointer], into target: UnsafeMutableRawBufferPointer) throws {
        var pending = outgoing.filter { $0.count > 0 }, written = 0, filled = 0
        let cancellation = DecodeCancellation.current
        let killWorker: @Sendable () -> Void = { [child] in child.kill() }
        try (cancellation ?? DecodeCancellation()).whileRunning(onCancel: killWorker) {
            while !pending.isEmpty || filled < target.count {
                if cancellation?.isCancelled == true { throw CancellationError() }
                let remaining = deadline - .now
                guard remaining > .zero else {
                    child.kill()
                    throw SVGWorkerError.timedOut(seconds: worker.timeLimit)
                }
                var descriptors = [pollfd(fd: output, events: Int16(POLLIN), revents: 0)]
                if errorsOpen { descriptors.append(pollfd(fd: errors, events: Int16(POLLIN), revents: 0)) }
                if !pending.isEmpty, inputOpen { descriptors.append(pollfd(fd: input, events: Int16(POLLOUT), revents: 0)) }
                let milliseconds = Int32(min(remaining.components.seconds * 1000 + remaining.components.attoseconds / 1_000_000_000_000_000 + 1,
                                             60_000))
                let ready = poll(&descriptors, nfds_t(descriptors.count), milliseconds)
                if ready < 0 {
                    guard errno == EINTR else { throw SVGWorkerError.badAnswer("poll failed: \(String(cString: strerror(errno)))") }
                    continue
                }
                for entry in descriptors where entry.revents != 0 {
                    if entry.fd == errors {
                        drainErrors()
                    } else if entry.fd == input {
                        guard let chunk = pending.first else { continue }
                        let count = send(input, chunk.baseAddress.map { $0 + written }, chunk.count - written, Self.noSignal)
                        if count > 0 {
                            written += count
                            if written == chunk.count { (pending, written) = (Array(pending.dropFirst()), 0) }
                        } else if count < 0, errno != EAGAIN, errno != EINTR {
                            inputOpen = false  // the worker is gone: its fate is read below
                        }
                    } else if entry.fd == output, filled < target.count {
                        let count = read(output, target.baseAddress.map { $0 + filled }, target.count - filled)
                        if count > 0 {
                            filled += count
                        } else if count == 0 || (errno != EAGAIN && errno != EINTR) {
                            if cancellation?.isCancelled == true { throw CancellationError() }
                            throw fate()
                        }
                    }
                }
            }
        }
    }

    /// `send`'s flag for a write that fails with `EPIPE` instead of raising `SIGPIPE`.
    #if os(Linux)
    private static let noSignal = Int32(MSG_NOSIGNAL)
    #else
    private static let noSignal: Int32 = 0  // SO_NOSIGPIPE is set on the socket
    #endif

    /// Keeps the last 4 KiB the worker wrote to stderr; `true` when it read something.
    @discardableResult
    private func drainErrors() -> Bool {
        var chunk = [UInt8](repeating: 0, count: 4096)
        let count = chunk.withUnsafeMutableBytes { read(errors, $0.baseAddress, $0.count) }
        if count > 0 {
            lastWords = Array((lastWords + chunk[..<count]).suffix(4096))
            return true
        } else if count == 0 || (errno != EAGAIN && errno != EINTR) {
            errorsOpen = false
        }
        return false
    }

    /// Why the worker gave no answer, once its stdout closed: it is reaped, and its signal,
    /// status and last words read.
    private func fate() -> SVGWorkerError {
        // Reaped first: its stderr is then closed, and what it wrote is all in the pipe (read
        // until empty, never waited on: another process may hold a copy of the write end).
        let status = child.wait()
        while errorsOpen, drainErrors() {}
        let words = String(decoding: lastWords, as: UTF8.self)
        // Rust's allocator, GLib's g_malloc and the C library all say so before they abort.
        if ["memory allocation of", "failed to allocate", "out of memory", "Cannot allocate memory"].contains(where: words.contains) {
            return .outOfMemory(limit: worker.memoryLimit)
        }
        let signal = status & 0x7f
        if signal == SIGXCPU { return .timedOut(seconds: worker.timeLimit) }
        if signal != 0 { return .crashed(signal: signal) }
        return .exited(status: (status >> 8) & 0xff)
    }

    /// The worker process: killed only while it is not reaped, so its pid is never another's.
    final class Child: Sendable {
        let pid: pid_t
        /// The wait status once reaped.
        private let reaped = Mutex<Int32?>(nil)

        init(_ worker: SVGWorker, stdin: Int32, stdout: Int32, stderr: Int32) throws {
            // This process's environment, with the Swift runtime's backtracer off: a worker that
            // crashes ends at once, its last words the library's own.
            var environment = ProcessInfo.processInfo.environment
            environment["SWIFT_BACKTRACE"] = "enable=no"
            do {
                pid = try spawnProcess(worker.executable, worker.arguments, environment: environment, directory: nil,
                                       stdin: stdin, stdout: stdout, stderr: stderr)
            } catch {
                throw SVGWorkerError.couldNotStart(executable: worker.executable, reason: error.reason)
            }
        }

        /// Sends `SIGKILL` unless the worker was reaped.
        func kill() {
            reaped.withLock { reaped in
                if reaped == nil { killProcess(pid) }
            }
        }

        /// Waits for the worker to end and returns its wait status.
        func wait() -> Int32 {
            reaped.withLock { reaped in
                if let reaped { return reaped }
                var status: Int32 = 0
                while waitpid(pid, &status, 0) == -1 {
                    guard errno == EINTR else {
                        status = 255 << 8
                        break
                    }
                }
                reaped = status
                return status
            }
        }

        /// Kills and reaps the worker.
        func end() {
            kill()
            _ = wait()
        }
    }
}

/// `SIGKILL` to `pid` (outside `SVGWorkerProcess/Child`, whose `kill()` hides the C function).
private func killProcess(_ pid: pid_t) { _ = kill(pid, SIGKILL) }
