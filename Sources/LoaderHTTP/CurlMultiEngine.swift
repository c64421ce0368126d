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

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// One curl multi handle and the one thread that drives it.
///
/// Requests wait in ``Shared/pending`` (behind a `Mutex`) until their host and the total have a
/// free slot; then the engine thread creates the transfer, adds it to the multi handle and runs
/// it with `curl_multi_perform` / `curl_multi_poll`. Other threads talk to that thread only
/// through the mutex and `curl_multi_wakeup`, the one multi call documented as thread-safe.
///
/// The queue is bounded (``HTTPDataLoader/Configuration/maxQueuedRequests``,
/// ``HTTPDataLoader/Configuration/maxQueuedBytes``: a request over them fails in ``submit(_:)``,
/// or, when it is visible, pushes out the newest waiting prefetches)
/// and so is the time in it: the thread fails the jobs whose total timeout passed while they
/// waited each time it wakes, and sleeps no longer than until the earliest such deadline, so
/// they fail on time even while no slot frees.
///
/// The thread starts with the first request and ends after ``lingerSeconds`` without work; the
/// multi handle (and with it the pool of open connections) lives as long as the engine.
///
/// A multi-interface call that fails (out of memory, an internal error) never stops the process:
/// the transfers it concerns end with ``HTTPError/engineFailure(message:)`` and the engine goes
/// on with the next ones. Without a multi handle at all (`curl_multi_init` out of memory) every
/// request fails that way.
///
/// `@unchecked Sendable`: `multi` and `confined` are touched only by the engine thread (of which
/// at most one runs, see `Shared.threadRunning`) and by `deinit`, which cannot overlap it because
/// the thread holds a strong reference; everything else shared is in the `Mutex`.
final class CurlMultiEngine: @unchecked Sendable {
    /// The multi-interface calls the engine checks, for ``injectFault(_:into:)``.
    enum MultiCall: Sendable {
        case add, perform, poll
    }

    /// State shared with the tasks that submit and cancel.
    struct Shared {
        var pending = PendingQueue()
        /// Ids of running transfers whose task was cancelled, for the thread to remove.
        var cancelled: [UInt64] = []
        var threadRunning = false
        /// The thread is in (or about to enter) `curl_multi_poll`: a submit must wake it.
        var polling = false
        /// Jobs arrived since the thread last picked jobs to start.
        var arrived = false
    }

    /// State of the engine thread alone.
    final class Confined {
        var running: [UnsafeMutableRawPointer: CurlTransfer] = [:]
        var runningByID: [UInt64: CurlTransfer] = [:]
        var perHost: [Origin: Int] = [:]
        /// Ids of running transfers that gave up their slot of `maxTotalConnections` to a new
        /// host's request (`longTransferTime`); they count toward their host's limit still.
        var long: Set<UInt64> = []
        let downloadMemory: DownloadMemoryBudget

        init(downloadMemory: DownloadMemoryBudget) {
            self.downloadMemory = downloadMemory
        }
    }

    /// `nil` when `curl_multi_init` failed: then every request fails at once.
    private let multi: UnsafeMutableRawPointer?
    private let confined: Confined
    /// A failure a test asked the next call of a kind to report instead of running.
    private let injectedFault = Mutex<(call: MultiCall, code: CURLMcode)?>(nil)
    private let shared: Mutex<Shared>
    private let configuration: HTTPDataLoader.Configuration
    /// How long the thread waits for new work before it ends, in seconds.
    private let lingerSeconds = 2.0

    init(configuration: HTTPDataLoader.Configuration) {
        // libcurl is loaded (HTTPDataLoader.load) and curl_global_init has run, once, under the
        // loader's lock (scripts/gen-lazy-symbols).
        self.configuration = configuration
        self.shared = Mutex(Shared(pending: PendingQueue(maxCount: configuration.maxQueuedRequests, maxBytes: configuration.maxQueuedBytes)))
        self.confined = Confined(downloadMemory: DownloadMemoryBudget(limit: configuration.maxDownloadMemory))
        self.multi = curl_multi_init()
        guard let multi else { return }
        _ = ccurl_multi_set_long(multi, CURLMOPT_PIPELINING, ccurl_pipe_multiplex())
        _ = ccurl_multi_set_long(multi, CURLMOPT_MAX_HOST_CONNECTIONS, configuration.maxConnectionsPerHost)
        // Long transfers hold connections beyond `maxTotalConnections` (the engine bounds both).
        _ = ccurl_multi_set_long(multi, CURLMOPT_MAX_TOTAL_CONNECTIONS, configuration.maxTotalConnections + configuration.maxLongTransfers)
        _ = ccurl_multi_set_long(multi, CURLMOPT_MAXCONNECTS, configuration.maxTotalConnections)
    }

    deinit {
        if let multi { curl_multi_cleanup(multi) }
    }

    /// For tests: the next `call` reports `code` instead of running, once.
    func injectFault(_ code: CURLMcode, into call: MultiCall) {
        injectedFault.withLock { $0 = (call, code) }
    }

    /// Runs `body` (a multi-interface call), unless a fault was injected for `call`.
    private func multiCall(_ call: MultiCall, _ body: () -> CURLMcode) -> CURLMcode {
        let fault = injectedFault.withLock { fault -> CURLMcode? in
            guard let injected = fault, injected.call == call else { return nil }
            fault = nil
            return injected.code
        }
        return fault ?? body()
    }

    /// Requests waiting for a connection slot.
    var queuedCount: Int { shared.withLock { $0.pending.count } }

    /// The body bytes the transfers in flight hold together, and the most they held so far.
    var downloadMemory: DownloadMemoryBudget { confined.downloadMemory }

    /// Queues `job`, timed from now; the engine thread starts it when a slot is free. A queue
    /// over one of its bounds fails the job at once with `ImagePipelineError.overloaded(_:limit:detail:)`.
    func submit(_ job: TransferJob) {
        guard let multi else {
            job.continuation.resume(returning: .failed(HTTPError.engineFailure(message: "curl_multi_init failed"), metadata: nil))
            return
        }
        let limits = configuration
        var job = job
        var pushedOut: [(job: TransferJob, error: ImagePipelineError)] = []
        let (startThread, wake, refusal) = shared.withLock { state -> (Bool, Bool, ImagePipelineError?) in
            // A visible request pushes the newest prefetches out of a full queue, then the
            // newest requests of the host with the most waiting when that is not its own and it
            // keeps at least as many (they fail as overloaded instead), unless it could never fit:
            // visible work first, and no host's flood keeps another host out, under load too.
            // The queue's push-out policy plans first: jobs are pushed out only when that makes room.
            if job.priority.current == .visible && job.queuedBytes <= limits.maxQueuedBytes,
               case .overloaded(_, let limit, let detail)? = Self.refusal(of: job, by: state.pending, limits: limits),
               let victims = state.pending.pushOut(for: job) {
                pushedOut = victims.map { victim in
                    let why = victim.reason == .lowerPriority ? "pushed out by a visible request: " : "pushed out for a host with fewer requests waiting: "
                    return (victim.job, .overloaded(victim.job.requestURL, limit: limit, detail: why + detail))
                }
            }
            if let refusal = Self.refusal(of: job, by: state.pending, limits: limits) { return (false, false, refusal) }
            // Stamped under the lock, so arrival order is deadline order (see `PendingQueue`).
            let now = DispatchTime.now().uptimeNanoseconds
            job.deadline = limits.totalTimeout.map { now.saturatingAdd(saturatingNanoseconds($0)) } ?? .max
            job.queueDeadline = limits.queueTimeNanoseconds.map { now.saturatingAdd($0) } ?? .max
            state.pending.append(job)
            state.arrived = true
            guard state.threadRunning else {
                state.threadRunning = true
                return (true, false, nil)
            }
            // One wake-up per poll is enough; a thread that is not polling will look anyway.
            defer { state.polling = false }
            return (false, state.polling, nil)
        }
        for (prefetch, error) in pushedOut { prefetch.continuation.resume(returning: .failed(error, metadata: nil)) }
        if let refusal {
            job.continuation.resume(returning: .failed(refusal, metadata: nil))
        } else if startThread {
            startDetachedThread(name: "curl-multi") { [self] in runLoop() }  // Linux thread names hold 15 characters
        } else if wake {
            curl_multi_wakeup(multi)
        }
    }

    /// The failure of `job` when the queue is at one of its bounds, else `nil`.
    private static func refusal(of job: TransferJob, by pending: PendingQueue, limits: HTTPDataLoader.Configuration) -> ImagePipelineError? {
        if pending.count >= limits.maxQueuedRequests {
            let detail = "\(pending.count) requests already wait for a connection, the limit (maxQueuedRequests)"
            return .overloaded(job.requestURL, limit: .queuedRequests, detail: detail)
        }
        if pending.bytes + job.queuedBytes > limits.maxQueuedBytes {
            let detail = "the \(pending.count) requests waiting for a connection hold \(pending.bytes) bytes; with this one's "
                + "\(job.queuedBytes) that is over the limit of \(limits.maxQueuedBytes) (maxQueuedBytes)"
            return .overloaded(job.requestURL, limit: .queuedBytes, detail: detail)
        }
        return nil
    }

    /// Cancels the job `id`: a waiting one is answered at once; a running one is removed from
    /// the multi handle by the engine thread, which closes its connection.
    func cancel(_ id: UInt64) {
        let waiting = shared.withLock { state -> TransferJob? in
            if let job = state.pending.remove(id: id) { return job }
            state.cancelled.append(id)
            return nil
        }
        if let waiting {
            waiting.continuation.resume(returning: .cancelled)
        } else if let multi {
            curl_multi_wakeup(multi)
        }
    }

    // MARK: The engine thread

    private func runLoop() {
        guard let multi else { return }  // not started without one (see `submit`)
        var idleSince = DispatchTime.now().uptimeNanoseconds
        while true {
            let cancelled = shared.withLock { state -> [UInt64] in
                defer { state.cancelled = [] }
                return state.cancelled
            }
            for id in cancelled {
                if let transfer = confined.runningByID[id] { finish(transfer, with: .cancelled, multi: multi) }
            }
            yieldSlotsToNewHosts(multi: multi)
            guard let (jobs, expired) = takeStartableJobs(idleSince: idleSince) else { return }
            for job in expired { job.continuation.resume(returning: .failed(queueTimeExpired(job), metadata: nil)) }
            for job in jobs { start(job, multi: multi) }

            var stillRunning: Int32 = 0
            var finished = !cancelled.isEmpty
            if let failure = CurlErrors.multiFailure(multiCall(.perform) { curl_multi_perform(multi, &stillRunning) },
                                                    "curl_multi_perform") {
                finished = failAll(failure, multi: multi) || finished
            }
            var left: Int32 = 0
            while let message = curl_multi_info_read(multi, &left) {
                guard message.pointee.msg == CURLMSG_DONE, let easy = message.pointee.easy_handle,
                      let transfer = confined.running[easy] else { continue }
                finish(transfer, with: transfer.outcome(for: ccurl_message_result(message)), multi: multi)
                finished = true
            }
            let now = DispatchTime.now().uptimeNanoseconds
            for transfer in confined.running.values {
                guard let expired = transfer.expiredLimit(at: now) else { continue }
                transfer.abort(expired)
                finish(transfer, with: transfer.outcome(for: CURLE_OK), multi: multi)
                finished = true
            }
            if !confined.running.isEmpty || finished { idleSince = now }
            if finished { continue }  // slots came free: start waiting jobs before sleeping
            // Set under the lock before polling: a job queued from now on wakes the poll (a
            // wake-up sent before the poll starts makes it return at once).
            let (mayPoll, queueDeadline, waiting) = shared.withLock { state -> (Bool, UInt64?, Bool) in
                state.polling = !state.arrived
                return (state.polling, state.pending.earliestDeadline, state.pending.count > 0)
            }
            if !mayPoll { continue }
            let timeout = pollTimeout(queueDeadline: queueDeadline, jobsWaiting: waiting)
            let polled = multiCall(.poll) { curl_multi_poll(multi, nil, 0, timeout, nil) }
            shared.withLock { $0.polling = false }
            if let failure = CurlErrors.multiFailure(polled, "curl_multi_poll") {
                _ = failAll(failure, multi: multi)
                // The poll did not wait: pause briefly so a poll that keeps failing cannot spin.
                usleep(10_000)
            }
        }
    }

    /// Moves the jobs that fit the connection limits out of the queue, visible ones first, each
    /// priority in arrival order, and those whose deadline passed while they waited. Returns
    /// `nil` when the thread should end (no work for a while).
    private func takeStartableJobs(idleSince: UInt64) -> (start: [TransferJob], expired: [TransferJob])? {
        let limits = configuration
        let confined = confined
        let now = DispatchTime.now().uptimeNanoseconds
        let lingered = now &- idleSince >= UInt64(lingerSeconds * 1e9)
        return shared.withLock { state -> ([TransferJob], [TransferJob])? in
            state.arrived = false
            if state.pending.count == 0 {
                if confined.running.isEmpty && lingered {
                    state.threadRunning = false
                    return nil
                }
                return ([], [])
            }
            let expired = state.pending.expire(at: now)
            let start = state.pending.take(running: confined.perHost, totalRunning: confined.running.count - confined.long.count,
                                           maxPerHost: limits.maxConnectionsPerHost, maxTotal: limits.maxTotalConnections,
                                           reserved: limits.connectionsReservedForNewHosts)
            return (start, expired)
        }
    }

    /// Makes slots of `maxTotalConnections` free for the hosts with nothing running that have a
    /// request waiting, when every slot is taken: the transfers that have run `longTransferTime`
    /// give theirs up, earliest started first, and go on as long transfers. When there are
    /// `maxLongTransfers` already, the earliest started long transfer of the host with the most
    /// of them ends first, failing as overloaded. So a new host's request never waits much longer
    /// than `longTransferTime` for a slot, however many slow hosts hold them.
    private func yieldSlotsToNewHosts(multi: UnsafeMutableRawPointer) {
        guard let longTime = configuration.longTransferNanoseconds else { return }
        let slots = confined.running.count - confined.long.count
        let now = DispatchTime.now().uptimeNanoseconds
        let candidates = confined.running.values.filter { !confined.long.contains($0.job.id) && now &- $0.startedAt >= longTime }
        // Only then the queue's hosts (under the lock, every engine turn otherwise).
        guard !candidates.isEmpty else { return }
        let newHosts = shared.withLock { $0.pending.hostsWaiting(withNothingRunningIn: confined.perHost) }
        let needed = slots - (configuration.maxTotalConnections - newHosts)
        guard newHosts > 0, needed > 0 else { return }
        for transfer in candidates.sorted(by: { $0.startedAt < $1.startedAt }).prefix(needed) {
            if confined.long.count >= configuration.maxLongTransfers {
                let victim = longTransferToEnd() ?? transfer
                let detail = "it ran \(HTTPError.seconds(Double(now &- victim.startedAt) / 1e9)) s while requests to other hosts waited, "
                    + "and \(confined.long.count) transfers had given up their slots already, the limit (maxLongTransfers)"
                victim.abort(ImagePipelineError.overloaded(victim.job.requestURL, limit: .longTransfers, detail: detail))
                finish(victim, with: victim.outcome(for: CURLE_OK), multi: multi)
                if victim === transfer { continue }
            }
            confined.long.insert(transfer.job.id)
        }
    }

    /// The long transfer to end for another: the earliest started of the host with the most.
    private func longTransferToEnd() -> CurlTransfer? {
        let long = confined.long.compactMap { confined.runningByID[$0] }
        let byHost = Dictionary(grouping: long, by: \.job.hostKey)
        let most = byHost.values.max { a, b in
            a.count != b.count ? a.count < b.count : (a.map(\.startedAt).min() ?? 0) > (b.map(\.startedAt).min() ?? 0)
        }
        return most?.min { $0.startedAt < $1.startedAt }
    }

    /// The failure of `job`, still waiting for a slot at its deadline.
    private func queueTimeExpired(_ job: TransferJob) -> ImagePipelineError {
        let limit = [configuration.maxQueueTime, configuration.totalTimeout].compactMap { $0 }.min() ?? 0
        let bound = limit == configuration.maxQueueTime ? "maxQueueTime" : "totalTimeout"
        return .overloaded(job.requestURL, limit: .queueTime,
                           detail: "it waited \(HTTPError.seconds(limit)) s for a connection slot, the limit (\(bound)), while "
                               + "\(confined.running.count) transfers ran (at most \(configuration.maxTotalConnections), "
                               + "\(configuration.maxConnectionsPerHost) per host)")
    }

    /// The poll timeout: until the first time limit of a running transfer may pass (idle,
    /// low-speed window, total) or the first waiting job's deadline, at most 1 s; the linger
    /// time when nothing runs or waits.
    private func pollTimeout(queueDeadline: UInt64?, jobsWaiting: Bool) -> Int32 {
        if confined.running.isEmpty && queueDeadline == nil { return Int32(lingerSeconds * 1000) }
        let now = DispatchTime.now().uptimeNanoseconds
        var earliest = min(confined.running.values.map(\.nextLimitCheck).min() ?? .max, queueDeadline ?? .max)
        if jobsWaiting, let longTime = configuration.longTransferNanoseconds {
            // A transfer that may give its slot up to a waiting request (`yieldSlotsToNewHosts`).
            let yielding = confined.running.values.lazy.filter { !self.confined.long.contains($0.job.id) }.map(\.startedAt).min()
            earliest = min(earliest, yielding.map { $0.saturatingAdd(longTime) } ?? .max)
        }
        let wait = earliest > now ? (earliest - now) / 1_000_000 + 1 : 0
        return Int32(min(wait, 1000))
    }

    private func start(_ job: TransferJob, multi: UnsafeMutableRawPointer) {
        // A fresh easy handle per transfer, as the curl tool does: a reset handle that last ran
        // an HTTP/2 stream refuses some options (CURLOPT_BUFFERSIZE) in libcurl 7.88.
        guard let easy = curl_easy_init() else {
            job.continuation.resume(returning: .failed(HTTPError.network(.other, message: "curl_easy_init failed"), metadata: nil))
            return
        }
        let transfer = CurlTransfer(job: job, easy: easy, limits: configuration, downloadMemory: confined.downloadMemory)
        let code = transfer.configure()
        let failure: HTTPError? = code != CURLE_OK
            ? .network(.other, message: "cannot start: \(String(cString: curl_easy_strerror(code)))")
            : CurlErrors.multiFailure(multiCall(.add) { curl_multi_add_handle(multi, easy) }, "curl_multi_add_handle")
        if let failure {
            transfer.releaseResources()
            curl_easy_cleanup(easy)
            job.continuation.resume(returning: .failed(failure, metadata: nil))
            return
        }
        confined.running[easy] = transfer
        confined.runningByID[job.id] = transfer
        confined.perHost[job.hostKey, default: 0] += 1
    }

    /// Takes `transfer` off the multi handle, frees what it holds and answers its task: the
    /// one place a started job's continuation is resumed.
    private func finish(_ transfer: CurlTransfer, with outcome: TransferOutcome, multi: UnsafeMutableRawPointer) {
        curl_multi_remove_handle(multi, transfer.easy)
        confined.running[transfer.easy] = nil
        confined.runningByID[transfer.job.id] = nil
        confined.long.remove(transfer.job.id)
        confined.perHost[transfer.job.hostKey, default: 1] -= 1
        if confined.perHost[transfer.job.hostKey] == 0 { confined.perHost[transfer.job.hostKey] = nil }
        transfer.releaseResources()
        curl_easy_cleanup(transfer.easy)
        transfer.job.continuation.resume(returning: outcome)
    }

    /// Ends every running transfer with `failure` (a multi call failed, so none can be trusted
    /// to progress). Returns whether there were any.
    private func failAll(_ failure: HTTPError, multi: UnsafeMutableRawPointer) -> Bool {
        let running = Array(confined.running.values)
        for transfer in running {
            transfer.abort(failure)
            finish(transfer, with: transfer.outcome(for: CURLE_OK), multi: multi)
        }
        return !running.isEmpty
    }
}
