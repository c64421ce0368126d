import PipelineCore

/// Requests waiting for a connection slot, by host, visible ones first.
///
/// Each host has a visible and a prefetch queue, both in arrival order, so picking the next
/// job is O(1) however many wait. A job whose ``PriorityHandle`` changed while it waited (a
/// prefetch raised to visible, or back down when its visible caller left) is moved to the
/// queue of its new priority (in arrival order) when the next jobs are picked.
struct PendingQueue {
    private struct HostQueue {
        var visible = FIFO()
        var prefetch = FIFO()
    }

    /// An array queue with a moving head: O(1) pops without shifting the elements each time.
    struct FIFO {
        var jobs: [TransferJob] = []
        var head = 0

        var isEmpty: Bool { head == jobs.count }
        var waiting: ArraySlice<TransferJob> { jobs[head...] }

        mutating func append(_ job: TransferJob) { jobs.append(job) }

        mutating func popFirst() -> TransferJob? {
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
        mutating func removeAll(where predicate: (TransferJob) -> Bool) -> [TransferJob] {
            var kept: [TransferJob] = [], removed: [TransferJob] = []
            for job in waiting {
                if predicate(job) { removed.append(job) } else { kept.append(job) }
            }
            jobs = kept
            head = 0
            return removed
        }
    }

    private var hosts: [String: HostQueue] = [:]
    /// Host of every waiting job, for cancellation.
    private var hostOfJob: [UInt64: String] = [:]

    /// The number of waiting jobs.
    var count: Int { hostOfJob.count }

    mutating func append(_ job: TransferJob) {
        hostOfJob[job.id] = job.hostKey
        if job.priority.current == .visible {
            hosts[job.hostKey, default: HostQueue()].visible.append(job)
        } else {
            hosts[job.hostKey, default: HostQueue()].prefetch.append(job)
        }
    }

    /// Removes and returns the job `id` if it is waiting.
    mutating func remove(id: UInt64) -> TransferJob? {
        guard let host = hostOfJob.removeValue(forKey: id), var queue = hosts.removeValue(forKey: host) else { return nil }
        let removed = queue.visible.removeAll { $0.id == id } + queue.prefetch.removeAll { $0.id == id }
        if !queue.visible.isEmpty || !queue.prefetch.isEmpty { hosts[host] = queue }
        return removed.first
    }

    /// Takes the jobs that fit: at most `maxPerHost` running per host (given `running`, the
    /// count per host now) and `maxTotal` overall; visible jobs of every host before prefetches.
    mutating func take(running: [String: Int], totalRunning: Int, maxPerHost: Int, maxTotal: Int) -> [TransferJob] {
        var taken: [TransferJob] = []
        var total = totalRunning
        guard total < maxTotal else { return [] }
        requeueChangedPriorities()
        for visiblePass in [true, false] {
            for host in Array(hosts.keys) where total < maxTotal {
                // Taken out of the dictionary while it changes, so popping never copies the array.
                guard var queue = hosts.removeValue(forKey: host) else { continue }
                var busy = running[host, default: 0] + taken.lazy.filter { $0.hostKey == host }.count
                while busy < maxPerHost && total < maxTotal,
                      let job = visiblePass ? queue.visible.popFirst() : queue.prefetch.popFirst() {
                    taken.append(job)
                    hostOfJob[job.id] = nil
                    busy += 1
                    total += 1
                }
                if !queue.visible.isEmpty || !queue.prefetch.isEmpty { hosts[host] = queue }
            }
        }
        return taken
    }

    /// Moves jobs whose priority changed while they waited into the queue of their current
    /// priority, keeping arrival order (job id): a prefetch a visible caller joined moves up, and
    /// a job whose visible caller left (only prefetches still wait for it) moves back down.
    private mutating func requeueChangedPriorities() {
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
