import Foundation

/// The requests in flight in the pipeline, each counted at the memory it holds, and the bound on
/// them all: ``ImagePipeline/Configuration/requestMemoryBudget``. A request is in flight from
/// when it passes the memory cache and the remembered failures until its work answers it; a
/// memory hit or a remembered failure is never counted, and a request refused here has
/// started nothing.
///
/// What a request holds is mostly its tasks' async frames (the Swift task allocator keeps each
/// task's largest frames until the task ends), which no API reports, so it is counted at sizes
/// measured (`MemoryBudgetTests`, `Benchmarks/load.sh`): ``callerCost`` for the caller, and
/// ``workCost`` once for the work it starts (its decode and download tasks), both with the
/// URL's bytes. A caller joining work in flight adds only its own cost, so ten thousand
/// callers of one picture hold a third of what ten thousand pictures do.
///
/// Over the budget a request fails at once with ``ImagePipelineError/overloaded(_:limit:detail:)``
/// (``OverloadLimit/requestsInFlight``), unless it is visible and room can be made: the newest
/// prefetch in flight is pushed out first, then the newest request of the host whose requests
/// hold the most, while that host still holds at least as much as the newcomer's afterwards.
/// A flood to a few slow hosts therefore cannot keep a healthy host out, and two hosts never
/// push each other out in turn. A request pushed out fails with `overloaded` too; work another
/// caller still waits for goes on. Room is sought on a copy of the books, so nobody is pushed
/// out unless that makes room.
///
/// Only ever touched on the ``ImagePipeline`` actor (as ``InFlightTable`` is).
final class RequestAdmission {
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
        let host: String
        /// Its own bytes (``callerCost`` and the URL's).
        let cost: Int
        let isPrefetch: Bool
        /// The work whose cost it shares (the key of ``Books/works``), or `nil` for work in
        /// flight that no counted caller started (a processed request's base decode).
        var work: UInt64?
        /// Where it waits, once it does: how it is pushed out.
        var token: WaiterToken?
    }

    /// A started work's cost, held while any counted caller waits for it.
    private struct Work {
        let host: String
        let cost: Int
        var callers: Int
    }

    /// The callers of one host, or every prefetch, in arrival order: ids only, those of callers
    /// gone since are skipped when met, and swept out once they outnumber the rest.
    private struct Arrivals {
        private var ids: [UInt64] = []
        private var gone = 0

        var isEmpty: Bool { ids.count == gone }

        mutating func append(_ id: UInt64) { ids.append(id) }

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

        /// The newest live id that `isCandidate` accepts.
        func newest(isLive: (UInt64) -> Bool, isCandidate: (UInt64) -> Bool) -> UInt64? {
            ids.last { isLive($0) && isCandidate($0) }
        }
    }

    /// Everything counted, as one value: room is sought on a copy.
    private struct Books {
        var bytes = 0
        var callers: [UInt64: Caller] = [:]
        var works: [UInt64: Work] = [:]
        var hostBytes: [String: Int] = [:]
        var hostCallers: [String: Arrivals] = [:]
        var prefetches = Arrivals()

        mutating func add(_ id: UInt64, _ caller: Caller, startingWorkOf cost: Int) {
            var caller = caller
            if cost > 0 {
                // Keyed by the caller's id until the work exists (``attach(_:to:startedWork:)``).
                works[id] = Work(host: caller.host, cost: cost, callers: 1)
                caller.work = id
            } else if let work = caller.work {
                works[work]?.callers += 1
            }
            callers[id] = caller
            bytes += caller.cost + cost
            hostBytes[caller.host, default: 0] += caller.cost + cost
            hostCallers[caller.host, default: Arrivals()].append(id)
            if caller.isPrefetch { prefetches.append(id) }
        }

        @discardableResult
        mutating func remove(_ id: UInt64) -> Caller? {
            guard let caller = callers.removeValue(forKey: id) else { return nil }
            uncount(caller.cost, of: caller.host)
            if let key = caller.work, var work = works[key] {
                work.callers -= 1
                works[key] = work.callers == 0 ? nil : work
                if work.callers == 0 { uncount(work.cost, of: work.host) }
            }
            let isLive = { [callers] (id: UInt64) in callers[id] != nil }
            hostCallers[caller.host]?.remove(id, isLive: isLive)
            if hostCallers[caller.host]?.isEmpty == true { hostCallers[caller.host] = nil }
            if caller.isPrefetch { prefetches.remove(id, isLive: isLive) }
            return caller
        }

        private mutating func uncount(_ cost: Int, of host: String) {
            bytes -= cost
            hostBytes[host, default: 0] -= cost
            if hostBytes[host] == 0 { hostBytes[host] = nil }
        }

        /// What removing caller `id` frees: its own cost, and its work's when it is the last.
        func freed(by id: UInt64) -> Int {
            guard let caller = callers[id] else { return 0 }
            guard let key = caller.work, let work = works[key], work.callers == 1 else { return caller.cost }
            return caller.cost + work.cost
        }

        /// The caller to push out for a newcomer of `host` costing `cost`: the newest prefetch
        /// (never one waiting for `sparing`, the work the newcomer joins), else the newest
        /// caller of the host holding the most bytes, if that host is another and would still
        /// hold at least as much as `host` afterwards.
        func victim(for host: String, cost: Int, sparing: UInt64?) -> UInt64? {
            let isLive = { (id: UInt64) in callers[id]?.token != nil }
            let spared = { (id: UInt64) in sparing != nil && callers[id]?.work == sparing }
            if let prefetch = prefetches.newest(isLive: isLive, isCandidate: { !spared($0) }) { return prefetch }
            guard let (longest, held) = hostBytes.max(by: { $0.value < $1.value }), longest != host,
                  let newest = hostCallers[longest]?.newest(isLive: isLive, isCandidate: { _ in true }),
                  held - freed(by: newest) >= hostBytes[host, default: 0] + cost else { return nil }
            return newest
        }
    }

    /// The budget, in bytes; `nil` counts without bounding.
    let budget: Int?
    private var books = Books()

    init(budget: Int?) {
        self.budget = budget
    }

    /// The bytes the requests in flight are counted at now, and how many there are.
    var bytesInUse: Int { books.bytes }
    var count: Int { books.callers.count }

    /// Admits caller `id` for `url` at `priority`, joining the work `joining` (its id) or, when
    /// `nil`, about to start one; ``attach(_:to:startedWork:)`` follows once it waits.
    /// - Returns: the callers pushed out to make room, with their errors: the pipeline fails
    ///   them (they are already uncounted).
    /// - Throws: ``ImagePipelineError/overloaded(_:limit:detail:)`` when it does not fit.
    func admit(_ id: UInt64, url: URL, priority: ImagePriority, joining: UInt64?) throws -> [(WaiterToken, ImagePipelineError)] {
        let host = Self.host(of: url)
        let urlBytes = url.absoluteString.utf8.count
        let joined = joining.flatMap { books.works[$0] != nil ? $0 : nil }
        let workCost = joining == nil ? Self.workCost + 2 * urlBytes : 0
        let caller = Caller(url: url, host: host, cost: Self.callerCost + urlBytes, isPrefetch: priority < .visible,
                            work: joined, token: nil)
        let cost = caller.cost + workCost
        var pushedOut: [(WaiterToken, ImagePipelineError)] = []
        if let budget, books.bytes + cost > budget {
            let detail = "the \(books.callers.count) requests in flight are counted at \(books.bytes) bytes; with this one's "
                + "\(cost) that is over the budget of \(budget) (requestMemoryBudget)"
            let full = ImagePipelineError.overloaded(url, limit: .requestsInFlight, detail: detail)
            guard priority == .visible, cost <= budget else { throw full }
            var trial = books
            while trial.bytes + cost > budget, let victim = trial.victim(for: host, cost: cost, sparing: joining),
                  let removed = trial.remove(victim), let token = removed.token {
                let why = removed.isPrefetch ? "pushed out by a visible request" : "pushed out for a host whose requests hold less"
                pushedOut.append((token, .overloaded(removed.url, limit: .requestsInFlight, detail: why + ": " + detail)))
            }
            guard trial.bytes + cost <= budget else { throw full }
            books = trial
        }
        books.add(id, caller, startingWorkOf: workCost)
        return pushedOut
    }

    /// Records where caller `id` waits; `startedWork` when it made the work it waits for (whose
    /// cost it was admitted with), which later callers may join.
    func attach(_ id: UInt64, to token: WaiterToken, startedWork: Bool) {
        guard books.callers[id] != nil else { return }
        books.callers[id]?.token = token
        if startedWork, let work = books.works.removeValue(forKey: id) {
            books.works[token.workID] = work
            books.callers[id]?.work = token.workID
        }
    }

    /// Caller `id` is answered (or failed, or cancelled): its bytes are free; a no-op for one
    /// pushed out.
    func release(_ id: UInt64) {
        books.remove(id)
    }

    /// What fairness groups requests by: the fetch URL's host, else its scheme (`data:`, `file:`).
    static func host(of url: URL) -> String {
        url.host?.lowercased() ?? (url.scheme.map { $0 + ":" } ?? "")
    }
}
