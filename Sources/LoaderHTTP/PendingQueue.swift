import PipelineCore

/// Requests waiting for a connection slot, by host, visible ones first, and by deadline.
///
/// Each host has a visible and a prefetch queue, both in arrival order, so picking the next
/// job is O(1) however many wait. A job whose ``PriorityHandle`` changed while it waited (a
/// prefetch raised to visible, or back down when its visible caller left) is moved to the
/// queue of its new priority (in arrival order) when the next jobs are picked.
///
/// The queue also keeps every job's ``TransferJob/queueDeadline`` in arrival order. The engine
/// gives every job of one loader the same time in the queue and stamps it under the lock that
/// appends it: arrival order is deadline order, so the jobs past their deadline are always at
/// the front of that line and ``expire(at:)`` finds them without a timer per job or a search.
struct PendingQueue {
    private struct HostQueue {
        var visible = FIFO()
        var prefetch = FIFO()

        var isEmpty: Bool { visible.isEmpty && prefetch.isEmpty }
    }

    /// Jobs in arrival order.
    typealias FIFO = Line<TransferJob>

    /// An array queue with a moving head: O(1) pops without shifting the elements each time.
    struct Line<Element> {
        var jobs: [Element] = []
        var head = 0

        var isEmpty: Bool { head == jobs.count }
        var waiting: ArraySlice<Element> { jobs[head...] }
        var first: Element? { isEmpty ? nil : jobs[head] }

        mutating func append(_ job: Element) { jobs.append(job) }

        mutating func popLast() -> Element? { isEmpty ? nil : jobs.popLast() }

        mutating func popFirst() -> Element? {
            guard head < jobs.count else { return nil }
            let job = jobs[head]
            head += 1
            if head == jobs.count {
                jobs.removeAll(keepingCapacity: true)
                head = 0
            } else if head >= 64 && head * 2 >= jobs.count {
                jobs.removeFirst(head)
                head = 0
            }
            return job
        }

        /// Removes and returns the jobs matching `predicate`, keeping the others in order.
        ///
        /// One pass, asking `predicate` once per job: a priority can be raised by another thread
        /// at any moment, and asking twice could both keep and remove the same job — it would
        /// then start twice and its continuation be resumed twice.
        mutating func removeAll(where predicate: (Element) -> Bool) -> [Element] {
            var kept: [Element] = [], removed: [Element] = []
            for job in waiting {
                if predicate(job) { removed.append(job) } else { kept.append(job) }
            }
            jobs = kept
            head = 0
            return removed
        }
    }

    private var hosts: [Origin: HostQueue] = [:]
    /// Host and ``TransferJob/queuedBytes`` of every waiting job, for cancellation and expiry.
    private var waitingJobs: [UInt64: (host: Origin, bytes: Int)] = [:]
    /// Every job queued, in arrival (and so deadline) order, with its deadline; a job that has
    /// left the queue stays until its deadline or a compaction passes it.
    private var deadlines = Line<(deadline: UInt64, id: UInt64)>()

    /// `PriorityHandle.changeCount` when the jobs' priorities were last looked at.
    private var priorityChangesSeen = UInt64.max

    /// The number of waiting jobs.
    var count: Int { waitingJobs.count }
    /// What the waiting jobs hold, by their ``TransferJob/queuedBytes``.
    private(set) var bytes = 0

    /// The earliest deadline among the waiting jobs (perhaps one that already left, which only
    /// makes the engine look a little early: ``expire(at:)`` then drops it), or `nil` when none
    /// waits or none has one. An empty queue has none, so an old deadline never makes the engine
    /// poll without waiting.
    var earliestDeadline: UInt64? {
        guard !waitingJobs.isEmpty, let first = deadlines.first, first.deadline != .max else { return nil }
        return first.deadline
    }

    mutating func append(_ job: TransferJob) {
        waitingJobs[job.id] = (job.hostKey, job.queuedBytes)
        bytes += job.queuedBytes
        deadlines.append((job.queueDeadline, job.id))
        if job.priority.current == .visible {
            hosts[job.hostKey, default: HostQueue()].visible.append(job)
        } else {
            hosts[job.hostKey, default: HostQueue()].prefetch.append(job)
        }
    }

    /// Removes and returns the job `id` if it is waiting.
    mutating func remove(id: UInt64) -> TransferJob? {
        guard let (host, _) = waitingJobs[id], var queue = hosts.removeValue(forKey: host) else { return nil }
        let removed: TransferJob?
        // The oldest jobs (those past their deadline) are at the front and the newest prefetch
        // (pushed out by a visible request) at the back: no search for them.
        if queue.visible.first?.id == id {
            removed = queue.visible.popFirst()
        } else if queue.prefetch.first?.id == id {
            removed = queue.prefetch.popFirst()
        } else if queue.prefetch.waiting.last?.id == id {
            removed = queue.prefetch.popLast()
        } else if queue.visible.waiting.last?.id == id {
            removed = queue.visible.popLast()
        } else {
            removed = (queue.visible.removeAll { $0.id == id } + queue.prefetch.removeAll { $0.id == id }).first
        }
        if !queue.isEmpty { hosts[host] = queue }
        if let removed { left(removed) }
        return removed
    }

    /// Removes and returns the newest job of the host with the most jobs waiting, when it has
    /// more than `host` (the arriving request's): a full queue makes room by dropping from its
    /// longest line, so a flood of requests to slow hosts cannot keep a healthy host's out.
    /// Its newest prefetch goes first, else its newest visible job. O(hosts).
    mutating func removeNewestOfLongestHost(over host: Origin) -> TransferJob? {
        let waiting = { (queue: HostQueue) in queue.visible.waiting.count + queue.prefetch.waiting.count }
        guard let (longest, queue) = hosts.max(by: { waiting($0.value) < waiting($1.value) }),
              longest != host, waiting(queue) > hosts[host].map(waiting) ?? 0,
              let newest = queue.prefetch.waiting.last ?? queue.visible.waiting.last else { return nil }
        return remove(id: newest.id)
    }

    /// Removes and returns the prefetch that arrived last (the one a visible request may push
    /// out of a full queue), or `nil` when none waits. O(hosts).
    mutating func removeNewestPrefetch() -> TransferJob? {
        let newest = hosts.values.compactMap { $0.prefetch.waiting.last { $0.priority.current != .visible } }.max { $0.id < $1.id }
        return newest.flatMap { remove(id: $0.id) }
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
    /// with nothing running (its first job); visible jobs of every host before prefetches.
    mutating func take(running: [Origin: Int], totalRunning: Int, maxPerHost: Int, maxTotal: Int, reserved: Int = 0) -> [TransferJob] {
        var taken: [TransferJob] = []
        var total = totalRunning
        guard total < maxTotal else { return [] }
        let general = maxTotal - reserved
        requeueChangedPriorities()
        for visiblePass in [true, false] {
            for host in Array(hosts.keys) where total < maxTotal {
                // Taken out of the dictionary while it changes, so popping never copies the array.
                guard var queue = hosts.removeValue(forKey: host) else { continue }
                var busy = running[host, default: 0] + taken.lazy.filter { $0.hostKey == host }.count
                while busy < maxPerHost && (total < general || (busy == 0 && total < maxTotal)),
                      let job = visiblePass ? queue.visible.popFirst() : queue.prefetch.popFirst() {
                    taken.append(job)
                    left(job)
                    busy += 1
                    total += 1
                }
                if !queue.isEmpty { hosts[host] = queue }
            }
        }
        return taken
    }

    /// Forgets `job`, which left the queue, and drops the deadline line's entries of jobs that
    /// left once they are most of it (so it stays within twice the waiting jobs, amortised O(1)).
    private mutating func left(_ job: TransferJob) {
        guard let (_, bytes) = waitingJobs.removeValue(forKey: job.id) else { return }
        self.bytes -= bytes
        let entries = deadlines.jobs.count - deadlines.head
        if waitingJobs.isEmpty {
            deadlines = Line()
        } else if entries > 64 && entries > 2 * waitingJobs.count {
            let waiting = waitingJobs
            deadlines = Line(jobs: deadlines.waiting.filter { waiting[$0.id] != nil }, head: 0)
        }
    }

    /// Moves jobs whose priority changed while they waited into the queue of their current
    /// priority, keeping arrival order (job id): a prefetch a visible caller joined moves up, and
    /// a job whose visible caller left (only prefetches still wait for it) moves back down.
    private mutating func requeueChangedPriorities() {
        // Jobs join the queue of their priority then; only a change since the last look (any
        // handle's, `PriorityHandle.changeCount`) can have put one in the wrong queue. Read
        // before looking: a change during the look moves the count, and the next take looks again.
        let changes = PriorityHandle.changeCount
        guard changes != priorityChangesSeen else { return }
        priorityChangesSeen = changes
        for host in Array(hosts.keys) {
            guard let queue = hosts[host],
                  queue.visible.waiting.contains(where: { $0.priority.current != .visible })
                    || queue.prefetch.waiting.contains(where: { $0.priority.current == .visible }) else { continue }
            hosts[host] = nil
            // One pass that reads each job's priority once: a job must land in exactly one queue.
            var visible: [TransferJob] = [], prefetch: [TransferJob] = []
            for job in Array(queue.visible.waiting) + Array(queue.prefetch.waiting) {
                if job.priority.current == .visible { visible.append(job) } else { prefetch.append(job) }
            }
            visible.sort { $0.id < $1.id }
            prefetch.sort { $0.id < $1.id }
            hosts[host] = HostQueue(visible: FIFO(jobs: visible, head: 0), prefetch: FIFO(jobs: prefetch, head: 0))
        }
    }
}
