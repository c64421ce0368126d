import Foundation
import Synchronization

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
/// ``workCost`` once for the work it starts (its decode and download tasks), both with the
/// URL's bytes. It is admitted at both unless another caller of its key is in flight (then at
/// its own), and given the work's back on the actor if it joins work after all, so ten thousand
/// callers of one picture hold a third of what ten thousand pictures do.
///
/// Over the budget a request fails at once with ``ImagePipelineError/overloaded(_:limit:detail:)``
/// (``Limit/requestsInFlight``), unless it is visible and room can be made: the newest
/// prefetch in flight is pushed out first (by its priority now; never a caller of the newcomer's
/// own key, whose work it would join), then the newest request of the host whose requests hold the most, while that
/// host still holds at least as much as the newcomer's afterwards. A flood to a few slow hosts
/// therefore cannot keep a healthy host out, and two hosts never push each other out in turn.
/// A request pushed out fails with `overloaded` too (the newcomer makes it leave its work once
/// on the actor); work another caller still waits for goes on. Room is planned before anyone is
/// pushed out, so nobody is unless that makes room.
final class RequestAdmission: Sendable {
    /// The bytes a caller waiting in the pipeline is counted at, besides its URL: its task's
    /// async frames down the stages and its place in the work's waiters (19 KB of heap measured,
    /// with the caller's own task).
    static let callerCost = 20 << 10
    /// The bytes a started work is counted at, besides its URL twice (the fetch URL and the
    /// cache identity it is kept by): the decode and download tasks with their frames and the
    /// tables' entries (33 KB of heap measured; a processed request's processing task too).
    static let workCost = 44 << 10

    /// One caller in flight.
    private struct Caller {
        let url: URL
        let key: ImageKey
        let host: Origin
        /// Its own bytes (``callerCost`` and the URL's), and, until it waits, the work's it may start.
        var cost: Int
        /// What the work it may start is counted at (``workCost`` and its URL twice).
        let workCost: Int
        /// The part of ``cost`` that is that work's, until ``attach(_:to:joined:)`` says whether
        /// it started work (the cost goes to the work) or joined it (the cost is given back);
        /// 0 when another caller of its key was in flight, so it was taken to join.
        var provisional: Int
        /// At prefetch priority now (an ``ImageTask``'s may change).
        var isPrefetch: Bool
        /// Whether its id is in ``Books/prefetches`` (it was a prefetch at some time).
        var inPrefetchLine: Bool
        /// The work whose cost it shares (the key of ``Books/works``), or `nil` before it waits
        /// and for work in flight that no counted caller started (a processed request's base
        /// decode).
        var work: UInt64?
        /// Where it waits, once it does: how it is pushed out.
        var token: WaiterToken?
    }

    /// A started work's cost, held while any counted caller waits for it.
    private struct Work {
        let host: Origin
        let cost: Int
        var callers: Int
    }

    /// The callers of one host, or every caller that became a prefetch, in arrival order: ids
    /// only; those of callers gone since are skipped when met, and swept out once they
    /// outnumber the rest.
    private struct Arrivals {
        private var ids: [UInt64] = []
        private var gone = 0

        var isEmpty: Bool { ids.count == gone }

        mutating func append(_ id: UInt64) { ids.append(id) }

        /// `id` left; `isLive` tells the others that are still counted.
        mutating func remove(_ id: UInt64, isLive: (UInt64) -> Bool) {
            if ids.last == id {
                ids.removeLast()
            } else {
                gone += 1
                if gone > 32 && gone * 2 > ids.count {
                    ids.removeAll { !isLive($0) || $0 == id }
                    gone = 0
                }
            }
        }

        /// The newest id that `isCandidate` accepts (ids of callers gone are never accepted).
        func newest(where isCandidate: (UInt64) -> Bool) -> UInt64? {
            ids.last(where: isCandidate)
        }
    }

    /// Everything counted.
    private struct Books {
        var bytes = 0
        var callers: [UInt64: Caller] = [:]
        var works: [UInt64: Work] = [:]
        var hostBytes: [Origin: Int] = [:]
        var hostCallers: [Origin: Arrivals] = [:]
        var prefetches = Arrivals()
        /// Callers in flight by key: one arriving for a key in this is taken to join its work.
        var keys: [ImageKey: Int] = [:]

        mutating func add(_ id: UInt64, _ caller: Caller) {
            callers[id] = caller
            count(caller.cost, of: caller.host)
            hostCallers[caller.host, default: Arrivals()].append(id)
            if caller.isPrefetch { prefetches.append(id) }
            keys[caller.key, default: 0] += 1
        }

        /// Caller `id` waits at `token`: the work's cost it was admitted with goes to the work
        /// it started, or back when it joined the work `joined` that a counted caller holds.
        mutating func attach(_ id: UInt64, to token: WaiterToken, joined: UInt64?) {
            guard var caller = callers[id] else { return }
            caller.token = token
            if let joined, works[joined] != nil {
                uncount(caller.provisional, of: caller.host)
                works[joined]?.callers += 1
                caller.work = joined
            } else {
                // It started the work, or joined one that no counted caller holds any more (its
                // last was pushed out, or only another work waits for it): the work's cost is its
                // own. Taken to join at the door, it is counted now.
                if caller.provisional == 0 { count(caller.workCost, of: caller.host) }
                works[token.workID] = Work(host: caller.host, cost: caller.workCost, callers: 1)
                caller.work = token.workID
            }
            caller.cost -= caller.provisional
            caller.provisional = 0
            callers[id] = caller
        }

        /// Caller `id` now waits at `priority`: a prefetch is pushed out before anyone else.
        mutating func setPriority(_ id: UInt64, _ priority: ImagePriority) {
            guard var caller = callers[id], caller.isPrefetch != (priority < .visible) else { return }
            caller.isPrefetch = priority < .visible
            if caller.isPrefetch && !caller.inPrefetchLine {
                caller.inPrefetchLine = true
                prefetches.append(id)
            }
            callers[id] = caller
        }

        @discardableResult
        mutating func remove(_ id: UInt64) -> Caller? {
            guard let caller = callers.removeValue(forKey: id) else { return nil }
            uncount(caller.cost, of: caller.host)
            keys[caller.key] = keys[caller.key].flatMap { $0 > 1 ? $0 - 1 : nil }
            if let key = caller.work, var work = works[key] {
                work.callers -= 1
                works[key] = work.callers == 0 ? nil : work
                if work.callers == 0 { uncount(work.cost, of: work.host) }
            }
            let isLive = { [callers] (id: UInt64) in callers[id] != nil }
            hostCallers[caller.host]?.remove(id, isLive: isLive)
            if hostCallers[caller.host]?.isEmpty == true { hostCallers[caller.host] = nil }
            if caller.inPrefetchLine { prefetches.remove(id, isLive: isLive) }
            return caller
        }

        private mutating func count(_ cost: Int, of host: Origin) {
            bytes += cost
            hostBytes[host, default: 0] += cost
        }

        private mutating func uncount(_ cost: Int, of host: Origin) {
            bytes -= cost
            hostBytes[host, default: 0] -= cost
            if hostBytes[host] == 0 { hostBytes[host] = nil }
        }

        /// The callers to push out, in order, so that a newcomer for `key` of `host` costing
        /// `cost` fits in `budget`, or `nil` when they cannot make room: the newest prefetches,
        /// then the newest callers of the host holding the most, while it is another and still
        /// holds at least as much as `host` afterwards. Never a caller of `key` (whose work the
        /// newcomer would join: pushing out its last waiter would cancel it), never one that
        /// does not wait yet. Planned without changing the books.
        func victims(for key: ImageKey, host: Origin, cost: Int, budget: Int) -> [UInt64]? {
            var chosen: [UInt64] = [], removed = Set<UInt64>()
            var freedBytes = 0, freedByHost: [Origin: Int] = [:], leftWorks: [UInt64: Int] = [:]
            let held = { (host: Origin) in (hostBytes[host] ?? 0) - (freedByHost[host] ?? 0) }
            while bytes - freedBytes + cost > budget {
                let isCandidate = { (id: UInt64) in
                    !removed.contains(id) && callers[id].map { $0.token != nil && $0.key != key } == true
                }
                // What pushing `id` out frees: its own cost, and its work's when it is the last.
                let freed = { (id: UInt64) -> (own: Int, work: (key: UInt64, Work)?) in
                    guard let caller = callers[id] else { return (0, nil) }
                    guard let workKey = caller.work, let work = works[workKey],
                          work.callers - (leftWorks[workKey] ?? 0) == 1 else { return (caller.cost, nil) }
                    return (caller.cost, (workKey, work))
                }
                let victim: UInt64, own: Int, work: (key: UInt64, Work)?
                if let prefetch = prefetches.newest(where: { isCandidate($0) && callers[$0]?.isPrefetch == true }) {
                    victim = prefetch
                    (own, work) = freed(prefetch)
                } else {
                    guard let longest = hostCallers.keys.max(by: { held($0) < held($1) }), longest != host,
                          let newest = hostCallers[longest]?.newest(where: isCandidate) else { return nil }
                    (own, work) = freed(newest)
                    guard held(longest) - own - (work?.1.cost ?? 0) >= held(host) + cost else { return nil }
                    victim = newest
                }
                guard let caller = callers[victim] else { return nil }
                chosen.append(victim)
                removed.insert(victim)
                freedBytes += own
                freedByHost[caller.host, default: 0] += own
                if let workKey = caller.work { leftWorks[workKey, default: 0] += 1 }
                if let (_, work) = work {
                    freedBytes += work.cost
                    freedByHost[work.host, default: 0] += work.cost
                }
            }
            return chosen
        }
    }

    /// The budget, in bytes; `nil` counts without bounding.
    let budget: Int?
    private let books = Mutex(Books())

    init(budget: Int?) {
        self.budget = budget
    }

    /// How many requests are in flight and the bytes they are counted at now.
    var usage: (count: Int, bytes: Int) { books.withLock { ($0.callers.count, $0.bytes) } }

    /// Admits caller `id` for `url` and `key` at `priority`, counted as if it starts work unless
    /// a caller of `key` is in flight; ``attach(_:to:joined:)`` follows once it waits.
    /// - Returns: the callers pushed out to make room, with their errors, for the pipeline to
    ///   fail on the actor (they are uncounted already).
    /// - Throws: ``ImagePipelineError/overloaded(_:limit:detail:)`` when it does not fit.
    func admit(_ id: UInt64, url: URL, key: ImageKey, priority: ImagePriority) throws -> [(WaiterToken, ImagePipelineError)] {
        // Computed before the lock, which every request at the door takes.
        let urlBytes = url.absoluteString.utf8.count, host = url.origin
        let workCost = Self.workCost + 2 * urlBytes, isPrefetch = priority < .visible
        let budget = budget
        return try books.withLock { books in
            let provisional = books.keys[key] == nil ? workCost : 0
            let caller = Caller(url: url, key: key, host: host, cost: Self.callerCost + urlBytes + provisional,
                                workCost: workCost, provisional: provisional, isPrefetch: isPrefetch,
                                inPrefetchLine: isPrefetch, work: nil, token: nil)
            var pushedOut: [(WaiterToken, ImagePipelineError)] = []
            if let budget, books.bytes + caller.cost > budget {
                let detail = "the \(books.callers.count) requests in flight are counted at \(books.bytes) bytes; with this one's "
                    + "\(caller.cost) that is over the budget of \(budget) (requestMemoryBudget)"
                let full = ImagePipelineError.overloaded(url, limit: .requestsInFlight, detail: detail)
                guard priority == .visible, caller.cost <= budget,
                      let victims = books.victims(for: key, host: caller.host, cost: caller.cost, budget: budget) else { throw full }
                for victim in victims {
                    guard let removed = books.remove(victim), let token = removed.token else { continue }
                    let why = removed.isPrefetch ? "pushed out by a visible request" : "pushed out for a host whose requests hold less"
                    pushedOut.append((token, .overloaded(removed.url, limit: .requestsInFlight, detail: why + ": " + detail)))
                }
            }
            books.add(id, caller)
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
        books.withLock { $0.setPriority(id, priority) }
    }

    /// Caller `id` is answered (or failed, or cancelled): its bytes are free; a no-op for one
    /// pushed out.
    func release(_ id: UInt64) {
        books.withLock { _ = $0.remove(id) }
    }
}
