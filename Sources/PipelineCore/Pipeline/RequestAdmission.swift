import Synchronization

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// The requests in flight in the pipeline, each counted at the memory it holds, and the bound on
/// them all: ``ImagePipeline/Configuration/requestMemoryBudget``. A request is in flight from
/// when it passes the memory cache and the remembered failures until its caller has the answer; a
/// memory hit or a remembered failure is never counted. Requests are admitted at the door, off
/// the pipeline actor, so one refused has started nothing and never waited for the actor: a
/// flood is refused on the callers' threads, as fast as it comes.
///
/// What a request holds is mostly its tasks' async frames (the Swift task allocator keeps each
/// task's largest frames until the task ends), which no API reports, so it is counted at sizes
/// measured (`MemoryBudgetTests`, `Benchmarks/load.sh`): ``callerCost`` for the caller, and
/// ``workCost`` once for the work it starts (its image work's and download's tasks), both with the
/// URL's bytes. It is admitted at both unless another caller of its key is in flight (then at
/// its own), and given the work's back on the actor if it joins work after all, so ten thousand
/// callers of one picture hold under two fifths of what ten thousand pictures do.
///
/// The callers in flight are the line of an ``AdmissionQueue`` grouped by ``Origin`` and bounded
/// by the budget's bytes; a started work's cost is charged to the host of the caller that
/// started it. Over the budget a request fails at once with
/// ``ImagePipelineError/overloaded(_:limit:detail:)`` (``Limit/requestsInFlight``), unless it is
/// visible and the queue's push-out policy makes room: the newest prefetch in flight first (by
/// its priority now; never a caller of the newcomer's own key, whose work it would join), then
/// the newest request of the host whose requests hold the most, while that host still holds at
/// least as much as the newcomer's afterwards. A flood to a few slow hosts therefore cannot keep
/// a healthy host out, and two hosts never push each other out in turn.
/// A request pushed out fails with `overloaded` too (the newcomer makes it leave its work once
/// on the actor); work another caller still waits for goes on. Room is planned before anyone is
/// pushed out, so nobody is unless that makes room.
final class RequestAdmission: Sendable {
    /// The bytes a caller waiting in the pipeline is counted at, besides its URL: its task's
    /// async frames down the stages and its place in the work's subscribers (23.9 KB of heap
    /// measured on issue 36's stages, with the caller's own task; 22 KB at fcd2a17, 19 KB when
    /// first measured).
    static let callerCost = 24 << 10
    /// The bytes a started work is counted at, besides its URL twice (the fetch URL and the
    /// cache identity it is kept by): the image work's and download's tasks with their frames
    /// and the tables' entries (38.7 KB of heap measured on issue 36's stages, a starting
    /// request's 62.6 KB less a caller's; 35.5 KB at fcd2a17; a processed request's
    /// unprocessed work too). With ``callerCost``, 64 KiB.
    static let workCost = 40 << 10

    /// One caller in flight.
    private struct Caller {
        let url: URL
        let key: ImageKey
        let host: Origin
        /// What the work it may start is counted at (``workCost`` and its URL twice).
        let workCost: Int
        /// The part of its cost that is that work's, until ``attach(_:to:joined:)`` says whether
        /// it started work (the cost goes to the work) or joined it (the cost is given back);
        /// 0 when another caller of its key was in flight, so it was taken to join.
        var provisional: Int
        /// The work whose cost it shares (the key of ``Books/works``), or `nil` before it waits
        /// and for work in flight that no counted caller started (a processed request's base
        /// decode).
        var work: UInt64?
        /// Where it waits, once it does: how it is pushed out.
        var token: WaiterToken?
    }

    /// A started work's cost, charged to its host while any counted caller waits for it.
    private struct Work {
        let host: Origin
        let cost: Int
        var callers: Int
    }

    /// Everything counted: the callers in the queue's line, and the works they share.
    private struct Books {
        var queue: AdmissionQueue<Origin, Caller>
        var works: [UInt64: Work] = [:]
        /// Callers in flight by key: one arriving for a key in this is taken to join its work.
        var keys: [ImageKey: Int] = [:]

        /// Caller `id` waits at `token`: the work's cost it was admitted with goes to the work
        /// it started, or back when it joined the work `joined` that a counted caller holds.
        mutating func attach(_ id: UInt64, to token: WaiterToken, joined: UInt64?) {
            guard var caller = queue[id] else { return }
            caller.token = token
            if let joined, works[joined] != nil {
                works[joined]?.callers += 1
                caller.work = joined
            } else {
                // It started the work, or joined one that no counted caller holds any more (its
                // last was pushed out, or only another work waits for it): the work's cost is its
                // own, charged to its host.
                works[token.workID] = Work(host: caller.host, cost: caller.workCost, callers: 1)
                queue.charge(.init(bytes: caller.workCost), to: caller.host)
                caller.work = token.workID
            }
            queue.adjust(id, by: .init(bytes: -caller.provisional))
            caller.provisional = 0
            queue[id] = caller
        }

        @discardableResult
        mutating func remove(_ id: UInt64) -> Caller? {
            guard let caller = queue.remove(id) else { return nil }
            keys[caller.key] = keys[caller.key].flatMap { $0 > 1 ? $0 - 1 : nil }
            if let key = caller.work, var work = works[key] {
                work.callers -= 1
                works[key] = work.callers == 0 ? nil : work
                if work.callers == 0 { queue.charge(.init(bytes: -work.cost), to: work.host) }
            }
            return caller
        }

        /// The callers to push out, in order, so that a newcomer for `key` of `host` costing
        /// `cost` fits, or `nil` when they cannot make room: the queue's push-out policy over
        /// the callers that wait already, never a caller of `key` (whose work the newcomer would
        /// join: pushing out its last waiter would cancel it). A caller pushed out frees its
        /// work too when it is the work's last. Planned without changing the books.
        mutating func victims(for key: ImageKey, host: Origin, cost: Int) -> [(id: UInt64, reason: AdmissionQueue<Origin, Caller>.PushOutReason)]? {
            var leftWorks: [UInt64: Int] = [:]
            let works = works
            return queue.planPushOut(for: host, cost: .one(cost), isCandidate: { _, caller in caller.token != nil && caller.key != key },
                                     alsoFrees: { _, caller in
                                         guard let key = caller.work, let work = works[key] else { return nil }
                                         leftWorks[key, default: 0] += 1
                                         return work.callers - leftWorks[key]! == 0 ? (work.host, .init(bytes: work.cost)) : nil
                                     })
        }
    }

    /// The budget, in bytes; `nil` counts without bounding.
    let budget: Int?
    private let books: Mutex<Books>

    init(budget: Int?) {
        self.budget = budget
        books = Mutex(Books(queue: AdmissionQueue(lineBudget: .init(bytes: budget))))
    }

    /// How many requests are in flight and the bytes they are counted at now.
    var usage: (count: Int, bytes: Int) { books.withLock { ($0.queue.count, $0.queue.lined.bytes) } }

    /// Admits caller `id` for `url` and `key` at `priority`, counted as if it starts work unless
    /// a caller of `key` is in flight; ``attach(_:to:joined:)`` follows once it waits.
    /// - Returns: the callers pushed out to make room, with their errors, for the pipeline to
    ///   fail on the actor (they are uncounted already).
    /// - Throws: ``ImagePipelineError/overloaded(_:limit:detail:)`` when it does not fit.
    func admit(_ id: UInt64, url: URL, key: ImageKey, priority: ImagePriority) throws -> [(WaiterToken, ImagePipelineError)] {
        // Computed before the lock, which every request at the door takes.
        let urlBytes = url.absoluteString.utf8.count, host = url.origin
        let workCost = Self.workCost + 2 * urlBytes
        let budget = budget
        return try books.withLock { books in
            let provisional = books.keys[key] == nil ? workCost : 0
            let caller = Caller(url: url, key: key, host: host, workCost: workCost, provisional: provisional,
                                work: nil, token: nil)
            let cost = Self.callerCost + urlBytes + provisional
            var pushedOut: [(WaiterToken, ImagePipelineError)] = []
            if let budget, books.queue.lineBound(adding: .one(cost)) != nil {
                let detail = "the \(books.queue.count) requests in flight are counted at \(books.queue.lined.bytes) bytes; with this one's "
                    + "\(cost) that is over the budget of \(budget) (requestMemoryBudget)"
                let full = ImagePipelineError.overloaded(url, limit: .requestsInFlight, detail: detail)
                guard priority == .visible, cost <= budget,
                      let victims = books.victims(for: key, host: host, cost: cost) else { throw full }
                for (victim, reason) in victims {
                    guard let removed = books.remove(victim), let token = removed.token else { continue }
                    let why = reason == .lowerPriority ? "pushed out by a visible request" : "pushed out for a host whose requests hold less"
                    pushedOut.append((token, .overloaded(removed.url, limit: .requestsInFlight, detail: why + ": " + detail)))
                }
            }
            books.queue.append(caller, id: id, group: host, cost: .one(cost), priority: priority)
            books.keys[key, default: 0] += 1
            return pushedOut
        }
    }

    /// Records where caller `id` waits, and whether it joined work in flight (`joined`, the
    /// work's id) or started the work it waits for, which later callers may join.
    func attach(_ id: UInt64, to token: WaiterToken, joined: UInt64?) {
        books.withLock { $0.attach(id, to: token, joined: joined) }
    }

    /// Caller `id` now waits at `priority` (an ``ImageTask``'s changed); a no-op for other ids.
    func setPriority(_ id: UInt64, to priority: ImagePriority) {
        books.withLock { $0.queue.setPriority(id, to: priority) }
    }

    /// Caller `id` is answered (or failed, or cancelled): its bytes are free; a no-op for one
    /// pushed out.
    func release(_ id: UInt64) {
        books.withLock { _ = $0.remove(id) }
    }
}
