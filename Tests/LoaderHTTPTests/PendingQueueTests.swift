import Foundation
@testable import LoaderHTTP
import PipelineCore
import Synchronization
import Testing

/// What the pending queue's tests share (its lines' own test is `AdmissionQueueTests`'s, in the core).
enum PendingQueueTests {
    final class Continuations: Sendable {
        let list = Mutex<[CheckedContinuation<TransferOutcome, Never>]>([])
        var count: Int { list.withLock { $0.count } }
    }
}

@Suite("Pending queue: priorities that change while waiting")
struct PendingQueuePriorityTests {
    /// A job queued as visible whose visible caller left (its handle fell to prefetch) goes
    /// behind an earlier prefetch; a prefetch raised to visible goes ahead.
    @Test func aJobWhosePriorityFellWaitsBehindEarlierPrefetches() async {
        let box = PendingQueueTests.Continuations()
        let waiters = (0..<3).map { _ in
            Task { _ = await withCheckedContinuation { continuation in box.list.withLock { $0.append(continuation) } } }
        }
        while box.count < 3 { await Task.yield() }
        let continuations = box.list.withLock { $0 }
        let handles = [PriorityHandle(.prefetch), PriorityHandle(.visible), PriorityHandle(.prefetch)]
        var queue = PendingQueue()
        for (id, continuation) in continuations.enumerated() {
            queue.append(TransferJob(id: UInt64(id), url: URL(string: "http://h/\(id)")!, requestURL: URL(string: "http://h/\(id)")!, hostKey: origin("h"),
                                     priority: handles[id], headers: [], progress: nil, didReceiveData: nil, continuation: continuation))
        }
        handles[1].set(.prefetch)  // job 1's visible caller left
        handles[2].set(.visible)   // job 2 was joined by a visible caller
        var order: [UInt64] = []
        for _ in 0..<3 {
            let taken = queue.take(running: [:], totalRunning: 0, maxPerHost: 1, maxTotal: 1)
            order += taken.map(\.id)
        }
        #expect(order == [2, 0, 1])
        for continuation in continuations { continuation.resume(returning: .cancelled) }
        for waiter in waiters { await waiter.value }
    }
}

@Suite("Pending queue: deadlines, bytes and slots kept for new hosts")
struct PendingQueueBoundsTests {
    /// Runs `body` with `count` jobs whose continuations are real (answered `.cancelled` after).
    func withJobs(_ count: Int, hosts: (Int) -> String, deadline: (Int) -> UInt64 = { _ in .max },
                  body: ([TransferJob]) -> Void) async {
        let box = PendingQueueTests.Continuations()
        let waiters = (0..<count).map { _ in
            Task { _ = await withCheckedContinuation { continuation in box.list.withLock { $0.append(continuation) } } }
        }
        while box.count < count { await Task.yield() }
        let continuations = box.list.withLock { $0 }
        let jobs = continuations.enumerated().map { id, continuation in
            TransferJob(id: UInt64(id), url: URL(string: "http://\(hosts(id))/\(id)")!, requestURL: URL(string: "http://\(hosts(id))/\(id)")!,
                        hostKey: origin(hosts(id)), priority: PriorityHandle(.visible), headers: [], progress: nil, didReceiveData: nil,
                        continuation: continuation, queueDeadline: deadline(id), queuedBytes: 100 + id)
        }
        body(jobs)
        for continuation in continuations { continuation.resume(returning: .cancelled) }
        for waiter in waiters { await waiter.value }
    }

    /// Jobs past their queue deadline leave in deadline order, from any host, and only they;
    /// the count and bytes drop with them.
    @Test func expireTakesExactlyTheJobsPastTheirDeadline() async {
        await withJobs(6, hosts: { "h\($0 % 2)" }, deadline: { UInt64(10 * ($0 + 1)) }, body: { jobs in
            var queue = PendingQueue()
            for job in jobs { queue.append(job) }
            #expect(queue.count == 6 && queue.bytes == (100..<106).reduce(0, +))
            #expect(queue.earliestDeadline == 10)
            #expect(queue.expire(at: 9).isEmpty)
            #expect(queue.expire(at: 30).map(\.id) == [0, 1, 2])
            #expect(queue.count == 3 && queue.bytes == 103 + 104 + 105)
            _ = queue.remove(id: 4)
            #expect(queue.expire(at: 1000).map(\.id) == [3, 5])
            #expect(queue.count == 0 && queue.bytes == 0)
        })
    }

    /// With 4 slots, 1 kept for new hosts: a busy host gets the 3 general ones, never the kept
    /// one, which a host with nothing running takes (one job of it).
    @Test func theKeptSlotGoesOnlyToAHostWithNothingRunning() async {
        await withJobs(7, hosts: { $0 < 5 ? "slow" : "new" }, body: { jobs in
            var queue = PendingQueue()
            for job in jobs.prefix(5) { queue.append(job) }
            let first = queue.take(running: [:], totalRunning: 0, maxPerHost: 6, maxTotal: 4, reserved: 1)
            #expect(first.map(\.id) == [0, 1, 2])
            #expect(queue.take(running: [origin("slow"): 3], totalRunning: 3, maxPerHost: 6, maxTotal: 4, reserved: 1).isEmpty)
            for job in jobs.suffix(2) { queue.append(job) }
            let second = queue.take(running: [origin("slow"): 3], totalRunning: 3, maxPerHost: 6, maxTotal: 4, reserved: 1)
            #expect(second.map(\.id) == [5])
        })
    }

    /// A freed slot goes to a host with nothing running before any busy host's next job, in
    /// whatever order the hosts are met (issue 41, finding 6: with a slot a long transfer gave
    /// up, slow hosts met first took it). Ten busy hosts with two jobs waiting each, one new host.
    @Test func aFreeSlotGoesToAHostWithNothingRunningFirst() async {
        await withJobs(21, hosts: { $0 < 20 ? "busy\($0 % 10)" : "new" }, body: { jobs in
            var queue = PendingQueue()
            for job in jobs { queue.append(job) }
            let running = Dictionary(uniqueKeysWithValues: (0..<10).map { (origin("busy\($0)"), 1) })
            let taken = queue.take(running: running, totalRunning: 10, maxPerHost: 6, maxTotal: 11)
            #expect(taken.map(\.id) == [20])
            #expect(queue.hostsWaiting(withNothingRunningIn: running) == 0)
            #expect(queue.hostsWaiting(withNothingRunningIn: [:]) == 10)
        })
    }
}

/// The origin of `http://host/`.
private func origin(_ host: String) -> Origin { Origin(scheme: "http", host: host, port: nil) }
