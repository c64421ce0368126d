import Foundation
@testable import LoaderHTTP
import PipelineCore
import Synchronization
import Testing

@Suite("Pending queue")
struct PendingQueueTests {
    final class Continuations: Sendable {
        let list = Mutex<[CheckedContinuation<TransferOutcome, Never>]>([])
        var count: Int { list.withLock { $0.count } }
    }

    /// `removeAll(where:)` must ask its predicate once per job: a priority can change between
    /// two asks (another thread raises it), and asking twice both kept and removed a job, which
    /// then started twice and resumed its continuation twice (found by the FlingGrid example).
    @Test func removeAllAsksOncePerJobSoAJobIsNeverBothKeptAndRemoved() async {
        // Jobs need real continuations; four waiting tasks provide them and are answered at the end.
        let box = Continuations()
        let waiters = (0..<4).map { _ in
            Task { _ = await withCheckedContinuation { continuation in box.list.withLock { $0.append(continuation) } } }
        }
        while box.count < 4 { await Task.yield() }
        let continuations = box.list.withLock { $0 }
        var fifo = PendingQueue.FIFO()
        for (id, continuation) in continuations.enumerated() {
            fifo.append(TransferJob(id: UInt64(id), url: URL(string: "http://h/\(id)")!, hostKey: "h",
                                    priority: PriorityHandle(.prefetch), headers: [], progress: nil,
                                    continuation: continuation))
        }
        // A predicate whose answer for a job changes after it was first asked, like a priority
        // raised by another thread in the middle of the pass.
        var asks: [UInt64: Int] = [:]
        let removed = fifo.removeAll { job in
            asks[job.id, default: 0] += 1
            return asks[job.id]! > 1
        }
        let kept = Array(fifo.waiting)
        #expect(asks.values.allSatisfy { $0 == 1 })
        #expect(removed.count + kept.count == 4)
        #expect(Set(removed.map(\.id)).isDisjoint(with: kept.map(\.id)))
        for continuation in continuations { continuation.resume(returning: .cancelled) }
        for waiter in waiters { await waiter.value }
    }
}
