import PipelineCore

/// Requests waiting for a connection slot: the line of the core's ``AdmissionQueue``, grouped by
/// host (``Origin``), visible ones first, bounded by ``HTTPDataLoader/Configuration/maxQueuedRequests``
/// and ``HTTPDataLoader/Configuration/maxQueuedBytes``, with its push-out policy (groups
/// compared by the jobs they have waiting), and by deadline.
///
/// Each host has a visible and a prefetch line, both in arrival order, so picking the next
/// job is O(1) however many wait. A job whose ``PriorityHandle`` changed while it waited (a
/// prefetch raised to visible, or back down when its visible caller left) is moved to the
/// line of its new priority (in arrival order) when the next jobs are picked.
///
/// The queue also keeps every job's ``TransferJob/queueDeadline`` in arrival order. The engine
/// gives every job of one loader the same time in the queue and stamps it under the lock that
/// appends it: arrival order is deadline order, so the jobs past their deadline are always at
/// the front of that line and ``expire(at:)`` finds them without a timer per job or a search.
struct PendingQueue {
    private var line: AdmissionQueue<Origin, TransferJob>
    /// Every job queued, in arrival (and so deadline) order, with its deadline; a job that has
    /// left the queue stays until its deadline or a compaction passes it.
    private var deadlines = Line<(deadline: UInt64, id: UInt64)>()

    /// A queue of at most `maxCount` jobs holding at most `maxBytes` (``TransferJob/queuedBytes``).
    init(maxCount: Int? = nil, maxBytes: Int? = nil) {
        line = AdmissionQueue(lineBudget: .init(count: maxCount, bytes: maxBytes), fairness: \.count)
    }

    /// The number of waiting jobs.
    var count: Int { line.count }
    /// What the waiting jobs hold, by their ``TransferJob/queuedBytes``.
    var bytes: Int { line.lined.bytes }

    /// The earliest deadline among the waiting jobs (perhaps one that already left, which only
    /// makes the engine look a little early: ``expire(at:)`` then drops it), or `nil` when none
    /// waits or none has one. An empty queue has none, so an old deadline never makes the engine
    /// poll without waiting.
    var earliestDeadline: UInt64? {
        guard !line.isEmpty, let first = deadlines.first, first.deadline != .max else { return nil }
        return first.deadline
    }

    mutating func append(_ job: TransferJob) {
        line.append(job, id: job.id, group: job.hostKey, cost: .one(job.queuedBytes), priority: job.priority)
        deadlines.append((job.queueDeadline, job.id))
    }

    /// Removes and returns the job `id` if it is waiting.
    mutating func remove(id: UInt64) -> TransferJob? {
        guard let removed = line.remove(id) else { return nil }
        left()
        return removed
    }

    /// The jobs to push out, with why, for a visible `job` that does not fit (the queue's
    /// push-out policy: the newest prefetch, then the newest job of the host with the most
    /// waiting while it keeps at least as many as `job`'s host with it), taken off the queue;
    /// `nil` when pushing out cannot make room (then nothing is taken).
    mutating func pushOut(for job: TransferJob) -> [(job: TransferJob, reason: AdmissionQueue<Origin, TransferJob>.PushOutReason)]? {
        guard let victims = line.planPushOut(for: job.hostKey, cost: .one(job.queuedBytes)) else { return nil }
        return victims.compactMap { victim in remove(id: victim.id).map { ($0, victim.reason) } }
    }

    /// Removes and returns the waiting jobs whose deadline is at or before `now` (uptime, ns).
    mutating func expire(at now: UInt64) -> [TransferJob] {
        var expired: [TransferJob] = []
        while let first = deadlines.first, first.deadline <= now {
            _ = deadlines.popFirst()
            if let job = remove(id: first.id) { expired.append(job) }
        }
        return expired
    }

    /// Takes the jobs that fit: at most `maxPerHost` running per host (given `running`, the
    /// count per host now) and `maxTotal` overall, of which the last `reserved` only for a host
    /// with nothing running (its first job); visible jobs of every host before prefetches, and
    /// within each, the first job of every host with nothing running before any host's next
    /// (hosts are met in no useful order, so a healthy host must not wait behind slow hosts that
    /// happen to come first and take the slots a long transfer gave up).
    mutating func take(running: [Origin: Int], totalRunning: Int, maxPerHost: Int, maxTotal: Int, reserved: Int = 0) -> [TransferJob] {
        var taken: [TransferJob] = []
        var total = totalRunning
        guard total < maxTotal else { return [] }
        let general = maxTotal - reserved
        var busy = running
        let hosts = line.groupKeys
        for visiblePass in [true, false] {
            for host in hosts where total < maxTotal && busy[host, default: 0] == 0 {
                guard let job = line.popFirst(of: host, visible: visiblePass) else { continue }
                taken.append(job)
                left()
                busy[host] = 1
                total += 1
            }
            for host in hosts where total < general {
                var count = busy[host, default: 0]
                while count < maxPerHost && total < general, let job = line.popFirst(of: host, visible: visiblePass) {
                    taken.append(job)
                    left()
                    count += 1
                    total += 1
                }
                busy[host] = count
            }
        }
        return taken
    }

    /// How many hosts with nothing running (`running`: the count per host now) have a job waiting.
    func hostsWaiting(withNothingRunningIn running: [Origin: Int]) -> Int {
        line.groupKeys.lazy.filter { running[$0] == nil && line.usage(of: $0).count > 0 }.count
    }

    /// A job left the queue: drops the deadline line's entries of jobs that left once they are
    /// most of it (so it stays within twice the waiting jobs, amortised O(1)).
    private mutating func left() {
        let entries = deadlines.count
        if line.isEmpty {
            deadlines = Line()
        } else if entries > 64 && entries > 2 * line.count {
            let waiting = line
            deadlines = Line(deadlines.waiting.filter { waiting[$0.id] != nil })
        }
    }
}
