import Foundation
import PipelineCore
import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Watches memory pressure on a dedicated thread (never Swift's cooperative pool) and calls a
/// handler with the level each time a trigger fires: the Linux counterpart of iOS's memory
/// warning and Android's `onTrimMemory`. ``PipelineCore/ImagePipeline/watchMemoryPressure(source:fallbackInterval:policy:)``
/// uses one to trim the pipeline.
///
/// With PSI triggers the thread sleeps in `poll` until the kernel reports a stall (a trigger
/// fires at most once per window). Where triggers cannot be set (no permission, a read-only
/// mount, an old kernel) but the averages can be read, it reads them every `fallbackInterval`
/// instead and reports the level their `avg10` reaches, once per reading. Keep the watcher:
/// releasing it stops it. Every descriptor is closed when it stops.
public final class MemoryPressureWatcher: Sendable {
    /// How a watcher watches.
    public enum Mode: Sendable, Hashable {
        /// Sleeping on PSI triggers set on `path` (the triggers as the kernel took them).
        case triggers(path: String, [MemoryPressureTrigger])
        /// Reading the averages every `interval`, because triggers were unavailable for `reason`.
        case polling(interval: Duration, reason: MemoryPressureUnavailable)
    }

    /// How this watcher watches.
    public let mode: Mode
    let core: WatcherCore

    private init(mode: Mode, core: WatcherCore) {
        self.mode = mode
        self.core = core
    }

    /// Starts watching `source`; `handler` runs on the watcher's thread: keep it short.
    /// - Parameters:
    ///   - source: default ``PSIMemoryPressureSource``.
    ///   - fallbackInterval: how often to read the averages when triggers are unavailable, or
    ///     `nil` to give up instead. Default 2 s.
    ///   - handler: called with the level each time pressure is reported.
    /// - Throws: why neither triggers nor (with a `fallbackInterval`) the averages are available.
    public static func start(source: any MemoryPressureSource = PSIMemoryPressureSource(),
                             fallbackInterval: Duration? = .seconds(2),
                             handler: @escaping @Sendable (MemoryPressureLevel) -> Void)
        throws(MemoryPressureUnavailable) -> MemoryPressureWatcher {
        let mode: Mode
        var descriptors: [MemoryPressureDescriptor] = []
        do throws(MemoryPressureUnavailable) {
            let opened = try source.openTriggers()
            descriptors = opened.descriptors
            mode = .triggers(path: opened.path, opened.descriptors.map(\.trigger))
        } catch {
            guard let fallbackInterval, source.averages() != nil else { throw error }
            mode = .polling(interval: max(fallbackInterval, .milliseconds(1)), reason: error)
        }
        var ends: [Int32] = [-1, -1]
        guard pipe(&ends) == 0 else {
            let code = errno
            for descriptor in descriptors { close(descriptor.fd) }
            throw .systemError(call: "pipe", errno: code)
        }
        for end in ends { _ = fcntl(end, F_SETFD, FD_CLOEXEC) }
        let interval: Duration? = if case .polling(let interval, _) = mode { interval } else { nil }
        let core = WatcherCore(descriptors: descriptors, stopRead: ends[0], stopWrite: ends[1], interval: interval,
                               source: source, handler: handler)
        let thread = Thread { core.run() }
        thread.name = "MemoryPressureWatcher"
        thread.start()
        return MemoryPressureWatcher(mode: mode, core: core)
    }

    /// Stops the thread and closes every descriptor; returns once it has (at once when called
    /// from the handler). Calling it again does nothing.
    public func stop() { core.stop() }

    /// Whether the thread still runs.
    public var isRunning: Bool { core.isRunning }

    deinit { core.stop() }
}

/// The watcher's thread and descriptors, apart from the public object so that the thread does
/// not keep it alive.
final class WatcherCore: Sendable {
    private struct State {
        var stopping = false
        var exited = false
    }

    /// Trigger descriptors, then nothing else; all owned.
    let descriptors: [MemoryPressureDescriptor]
    let stopRead: Int32
    let stopWrite: Int32
    let interval: Duration?
    let source: any MemoryPressureSource
    let handler: @Sendable (MemoryPressureLevel) -> Void
    private let state = Mutex(State())
    private let exited = DispatchSemaphore(value: 0)
    /// The thread's id, set when it starts (`pthread_self`), so `stop` from the handler does
    /// not wait for itself.
    private let threadID = Mutex<pthread_t?>(nil)

    init(descriptors: [MemoryPressureDescriptor], stopRead: Int32, stopWrite: Int32, interval: Duration?,
         source: any MemoryPressureSource, handler: @escaping @Sendable (MemoryPressureLevel) -> Void) {
        self.descriptors = descriptors
        self.stopRead = stopRead
        self.stopWrite = stopWrite
        self.interval = interval
        self.source = source
        self.handler = handler
    }

    /// Every descriptor the watcher owns (for tests that check they are closed).
    var allDescriptors: [Int32] { descriptors.map(\.fd) + [stopRead, stopWrite] }

    var isRunning: Bool { state.withLock { !$0.exited } }

    func stop() {
        let wait = state.withLock { state -> Bool in
            guard !state.exited else { return false }
            if !state.stopping {
                state.stopping = true
                var byte: UInt8 = 1
                _ = write(stopWrite, &byte, 1)
            }
            return true
        }
        guard wait else { return }
        if let id = threadID.withLock({ $0 }), pthread_equal(id, pthread_self()) != 0 { return }
        exited.wait()
        exited.signal()  // for another caller waiting too
    }

    func run() {
        threadID.withLock { $0 = pthread_self() }
        var fds = [pollfd(fd: stopRead, events: Int16(POLLIN), revents: 0)]
        fds += descriptors.map { pollfd(fd: $0.fd, events: $0.events, revents: 0) }
        let timeout: Int32 = interval.map { Int32(clamping: max(1, MemoryPressureTrigger.microseconds($0) / 1000)) } ?? -1
        var buffer = [UInt8](repeating: 0, count: 64)
        loop: while true {
            for index in fds.indices { fds[index].revents = 0 }
            let ready = poll(&fds, nfds_t(fds.count), timeout)
            if ready < 0 {
                if errno == EINTR { continue }
                break
            }
            if fds[0].revents != 0 { break }
            var fired: MemoryPressureLevel?
            if ready == 0 {
                fired = source.averages()?.level(for: source.triggers)
            }
            for index in fds.indices.dropFirst() where fds[index].revents != 0 {
                let descriptor = descriptors[index - 1]
                if fds[index].revents & descriptor.events != 0 {
                    fired = max(fired ?? descriptor.trigger.level, descriptor.trigger.level)
                    if descriptor.events & Int16(POLLIN) != 0 {  // a stand-in: empty it
                        while buffer.withUnsafeMutableBytes({ read(fds[index].fd, $0.baseAddress, $0.count) }) > 0 {}
                    }
                } else if fds[index].revents & Int16(POLLERR | POLLHUP | POLLNVAL) != 0 {
                    fds[index].fd = -1  // gone (its cgroup was removed): poll ignores it from now on
                    if interval == nil, fds.dropFirst().allSatisfy({ $0.fd < 0 }) { break loop }
                }
            }
            if let fired { handler(fired) }
        }
        state.withLock { state in
            state.exited = true
            for descriptor in descriptors { close(descriptor.fd) }
            close(stopRead)
            close(stopWrite)
        }
        exited.signal()
    }
}
