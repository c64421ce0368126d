import Dispatch
import Synchronization

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// A bounded pool of dedicated threads for blocking work (decoding, resampling, file I/O), so
/// that such work never runs on an actor or blocks Swift's cooperative thread pool.
///
/// Jobs wait in the line of an `AdmissionQueue` and start highest ``PriorityHandle/current``
/// first (FIFO within a priority), so a prefetch that a visible caller joined moves ahead. Threads are started on
/// demand up to ``maxConcurrent`` and exit when the queue is empty, or after ``idleTimeout``
/// without work (so a stream of short jobs, like disk-cache reads, does not start a thread per
/// job). A job cancelled while it waits is dropped and its caller gets `CancellationError` at
/// once; a running job finishes, told through ``DecodeCancellation/current`` (a decoder that
/// handed its work to a process stops it).
public final class WorkerPool: Sendable {
    private struct Job {
        let run: @Sendable () -> Void
        let cancel: @Sendable () -> Void
    }

    private struct State {
        var queue = AdmissionQueue<OneGroup, Job>()
        /// Threads started and not yet exited (idle ones included).
        var running = 0
        /// Idle threads waiting on `wakeups` that no job has claimed yet.
        var idle = 0
        var nextID: UInt64 = 0
    }

    /// The most jobs that run at once.
    public let maxConcurrent: Int
    /// How long an idle thread waits for a new job before it exits, in seconds. Default 0.
    public let idleTimeout: TimeInterval
    private let name: String
    private let state = Mutex(State())
    /// Signalled once for each idle thread claimed by `enqueue`.
    private let wakeups = DispatchSemaphore(value: 0)

    /// Creates a pool of at most `maxConcurrent` threads (at least 1) named `name`, whose idle
    /// threads wait `idleTimeout` seconds for more work before exiting.
    public init(maxConcurrent: Int, name: String, idleTimeout: TimeInterval = 0) {
        self.maxConcurrent = max(1, maxConcurrent)
        self.idleTimeout = max(0, idleTimeout)
        self.name = name
    }

    /// Runs `work` on a pool thread and returns its result; throws `CancellationError` if the
    /// task is cancelled before the work starts. While `work` runs, ``DecodeCancellation/current``
    /// is cancelled when the task is.
    public func run<T: Sendable>(priority: PriorityHandle, _ work: @escaping @Sendable () throws -> T) async throws -> T {
        let id = state.withLock { state -> UInt64 in
            state.nextID += 1
            return state.nextID
        }
        // The running job's own view of its caller's cancellation (the pool thread cannot see the task's).
        let cancellation = DecodeCancellation()
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<T, any Error>) in
                enqueue(Job(run: { continuation.resume(with: Result { try DecodeCancellation.$current.withValue(cancellation, operation: work) }) },
                            cancel: { continuation.resume(throwing: CancellationError()) }),
                        id: id, priority: priority)
                // A task cancelled before this point ran its handler when nothing was queued:
                // take the job back now. (A handler racing with this finds nothing the second time.)
                if Task.isCancelled { cancel(id) }
            }
        } onCancel: {
            cancel(id)
            cancellation.cancel()
        }
    }

    /// The number of jobs waiting (not running).
    public var queuedCount: Int { state.withLock { $0.queue.count } }

    /// Threads started and not yet exited, idle ones included (0 once every idle thread timed out).
    package var threadCount: Int { state.withLock { $0.running } }

    private func enqueue(_ job: Job, id: UInt64, priority: PriorityHandle) {
        let (startThread, wake) = state.withLock { state -> (Bool, Bool) in
            state.queue.append(job, id: id, group: .all, cost: .one(0), priority: priority)
            if state.idle > 0 {
                state.idle -= 1
                return (false, true)
            }
            guard state.running < maxConcurrent else { return (false, false) }
            state.running += 1
            return (true, false)
        }
        if wake { wakeups.signal() }
        if startThread {
            startDetachedThread(name: name) { [self] in drain() }
        }
    }

    private func cancel(_ id: UInt64) {
        // Not queued: not yet enqueued (`run` checks again after enqueueing), running, or done.
        let job = state.withLock { $0.queue.remove(id) }
        job?.cancel()
    }

    /// A worker thread's loop: take the most urgent job until none is left, then wait up to
    /// ``idleTimeout`` for more.
    private func drain() {
        while true {
            while let job = next() {
                job.run()
            }
            guard idleTimeout > 0 else { return }  // `next()` already counted this thread out
            if wakeups.wait(timeout: .now() + idleTimeout) == .success { continue }
            // Timed out. If no job claimed an idle thread, leave; if one did, its signal is
            // on the way (to this thread or, already taken, by another): take one and go on.
            let leave = state.withLock { state -> Bool in
                guard state.idle > 0 else { return false }
                state.idle -= 1
                state.running -= 1
                return true
            }
            if leave { return }
            wakeups.wait()
        }
    }

    private func next() -> Job? {
        state.withLock { state -> Job? in
            guard let job = state.queue.popMostUrgent() else {
                if idleTimeout > 0 { state.idle += 1 } else { state.running -= 1 }
                return nil
            }
            return job
        }
    }
}
