import CMicroHTTPDShim
import Dispatch
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

/// Watches the connections libmicrohttpd holds suspended, which MHD itself no longer polls: a
/// suspended connection is never timed out and its client's disconnect goes unseen. One thread
/// waits in `epoll_wait` on every suspended socket (for `EPOLLRDHUP`: the client closed or
/// shut down its side) with the nearest request deadline as the timeout, and reports what
/// happened by request id; the server decides what that means.
///
/// Deadlines come in the order requests start and share one timeout, so a FIFO is a priority
/// queue here. A request answered before its deadline stays queued until its turn comes, or
/// until the queue holds twice as many entries as watched requests and is compacted, so it
/// stays within about twice the requests in flight.
final class SuspensionWatcher: Sendable {
    private struct Deadlines {
        var queue: [(deadline: UInt64, id: UInt64)] = []
        var head = 0
        /// The requests watched now.
        var watched: Set<UInt64> = []
        var stopped = false
    }

    private let poller: Int32
    private let wakeup: Int32
    private let deadlines = Mutex(Deadlines())
    private let exited = DispatchSemaphore(value: 0)
    /// The id epoll reports for the wake-up descriptor; request ids start at 1.
    private static let wakeupID: UInt64 = 0

    /// Starts the watching thread; `expired` and `closed` are called on it with a request id.
    init(expired: @escaping @Sendable (UInt64) -> Void, closed: @escaping @Sendable (UInt64) -> Void) throws(HTTPServerError) {
        let poller = epoll_create1(Int32(EPOLL_CLOEXEC))
        guard poller >= 0 else { throw .resources("epoll_create1", errno) }
        let wakeup = eventfd(0, Int32(EFD_CLOEXEC | EFD_NONBLOCK))
        guard wakeup >= 0 else {
            let code = errno
            close(poller)
            throw .resources("eventfd", code)
        }
        var event = epoll_event(events: EPOLLIN.rawValue, data: epoll_data_t(u64: Self.wakeupID))
        guard epoll_ctl(poller, EPOLL_CTL_ADD, wakeup, &event) == 0 else {
            let code = errno
            close(wakeup)
            close(poller)
            throw .resources("epoll_ctl", code)
        }
        self.poller = poller
        self.wakeup = wakeup
        startDetachedThread(name: "HTTPServer.watcher") { [self] in
            run(expired: expired, closed: closed)
            exited.signal()
        }
    }

    /// Watches `socket` for a disconnect and `id` for its `deadline` (`DispatchTime`
    /// nanoseconds). Called under the server's lock, so that it never races ``forget(id:socket:)``.
    func watch(id: UInt64, socket: Int32, deadline: UInt64) {
        if socket >= 0 {
            var event = epoll_event(events: EPOLLRDHUP.rawValue | EPOLLONESHOT.rawValue, data: epoll_data_t(u64: id))
            _ = epoll_ctl(poller, EPOLL_CTL_ADD, socket, &event)
        }
        let wasEmpty = deadlines.withLock { state in
            let wasEmpty = state.head == state.queue.count
            state.queue.append((deadline, id))
            state.watched.insert(id)
            let queued = state.queue.count - state.head
            if queued > 1024 && queued > 2 * state.watched.count {
                state.queue = state.queue[state.head...].filter { state.watched.contains($0.id) }
                state.head = 0
            }
            return wasEmpty
        }
        if wasEmpty { _ = eventfd_write(wakeup, 1) }
    }

    /// Stops watching request `id` and its `socket`; called under the server's lock before the
    /// connection is resumed, so MHD never closes (and the kernel never reuses) a descriptor
    /// still watched.
    func forget(id: UInt64, socket: Int32) {
        if socket >= 0 { _ = epoll_ctl(poller, EPOLL_CTL_DEL, socket, nil) }
        deadlines.withLock { _ = $0.watched.remove(id) }
    }

    /// Deadlines queued, answered or not (for tests).
    var queuedCount: Int { deadlines.withLock { $0.queue.count - $0.head } }

    /// Ends the thread and waits for it; idempotent.
    func stop() {
        let first = deadlines.withLock { state in
            defer { state.stopped = true }
            return !state.stopped
        }
        guard first else { return }
        _ = eventfd_write(wakeup, 1)
        exited.wait()
        close(wakeup)
        close(poller)
    }

    private func run(expired: @Sendable (UInt64) -> Void, closed: @Sendable (UInt64) -> Void) {
        var events = [epoll_event](repeating: epoll_event(), count: 64)
        while true {
            let timeout: Int32? = deadlines.withLock { state in
                if state.stopped { return nil }
                guard state.head < state.queue.count else { return -1 }
                let now = DispatchTime.now().uptimeNanoseconds
                let due = state.queue[state.head].deadline
                return due <= now ? 0 : Int32(clamping: (due - now + 999_999) / 1_000_000)
            }
            guard let timeout else { return }
            let count = epoll_wait(poller, &events, Int32(events.count), timeout)
            var gone: [UInt64] = []
            for index in 0..<max(Int(count), 0) {
                let id = events[index].data.u64
                if id == Self.wakeupID {
                    var value: eventfd_t = 0
                    _ = eventfd_read(wakeup, &value)
                } else {
                    gone.append(id)
                }
            }
            let due = deadlines.withLock { state in
                let now = DispatchTime.now().uptimeNanoseconds
                var due: [UInt64] = []
                while state.head < state.queue.count && state.queue[state.head].deadline <= now {
                    let id = state.queue[state.head].id
                    if state.watched.contains(id) { due.append(id) }
                    state.head += 1
                }
                if state.head > 1024 && state.head * 2 > state.queue.count {
                    state.queue.removeFirst(state.head)
                    state.head = 0
                }
                return due
            }
            for id in gone { closed(id) }
            for id in due { expired(id) }
        }
    }
}
