import Synchronization

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// What a stage's work sends its subscribers before its final value: the one typed stream of
/// every stage (Nuke's `AsyncTask` events). `Partial` is the stage's partial value: the body's
/// first bytes for a download, a preview picture for a decode or an image work.
enum StageEvent<Partial: Sendable>: Sendable {
    /// Bytes of the download received so far.
    case progress(ImageTask.Progress)
    /// A partial value, each showing more than the one before.
    case partial(Partial)
}

/// One subscriber's terms: the priority it waits at, what it asks of the work beyond its value
/// (`Demand`: a decode's follow-up processors, whether it keeps the original), and where the
/// work's events go.
struct StageSubscription<Partial: Sendable, Demand: Sendable>: Sendable {
    var priority: ImagePriority
    var demand: Demand
    /// Where progress and partial values go; `nil` for a subscriber that wants the value only.
    var events: (@Sendable (StageEvent<Partial>) -> Void)?
    /// Whether it wants partial values (they cost the work something to make).
    var wantsPartials = false
}

/// The shared works of one stage, by key, and their subscribers: the one type every stage uses
/// for "join the work in flight or start it" (Nuke's `TaskPool` and `AsyncTask`). A stage owns
/// its table; the work's task knows only its own stage and the stage below.
///
/// A slot per key holds the work new subscribers join; every running work is also kept by id
/// (a reload can displace a work from its slot while it still has subscribers who may cancel).
/// A shared work runs at the highest priority of its current subscribers, and that priority
/// moves down to the work it waits on (``StageWork/upstream``). A subscriber that cancels
/// leaves at once with `CancellationError`; the work is cancelled when its last subscriber
/// leaves. Thread-safe: its state is behind one lock, held only to read and write it (nothing
/// that may reach another work runs under it: a priority's move, a task's cancellation, a
/// continuation's resumption aside). Each work's stream has a lock of its own, under which its
/// events are delivered in order; they only ever go up (to a higher work's stream, which may
/// be in the same table, or a task's), so those locks are taken bottom up, never in a cycle.
final class StageTable<Key: Hashable & Sendable, Value: Sendable, Partial: Sendable, Demand: Sendable>: WaiterTable {
    typealias Subscription = StageSubscription<Partial, Demand>
    typealias Work = StageWork<Partial>

    private struct Subscriber {
        let continuation: CheckedContinuation<Value, any Error>
        var terms: Subscription
    }

    /// A work in the table: a reference, so the tables hold a pointer per work.
    private final class Entry {
        let key: Key
        let work: Work
        var subscribers: [UInt64: Subscriber] = [:]
        var task: Task<Void, Never>?

        init(key: Key, work: Work) {
            self.key = key
            self.work = work
        }
    }

    private struct State {
        var joinable: [Key: UInt64] = [:]
        var live: [UInt64: Entry] = [:]
        /// The work each subscriber waits on, by subscriber id.
        var waiting: [UInt64: UInt64] = [:]
    }

    /// This table's place in the pipeline's list of tables, carried by its subscribers' tokens.
    let id: Int
    private let state = Mutex(State())

    init(id: Int) {
        self.id = id
    }

    /// The value of the work for `key`: joined when one is in flight that a request with
    /// `cachePolicy` may join, else created, put in the slot and started with `perform`. The
    /// subscriber is registered (and the work created) before this suspends, so a second
    /// caller finds it. `waiterID` names the subscriber (an admitted caller's id); `dependent`
    /// is the work on whose behalf it waits (its priority moves this subscriber's); `joined` is
    /// told the subscriber's token and whether it joined work already in flight, under the
    /// table's lock, and may return the priority to wait at (an ``ImageTask``'s current one).
    ///
    /// A `reloadIgnoringCaches` request does not join work that may read caches, nor a request
    /// that may load join `returnCacheDataDontLoad` work; each starts its own and takes over the
    /// slot (the old work still finishes for its own subscribers).
    func value(for key: Key, cachePolicy: CachePolicy, subscription: Subscription, waiterID: UInt64 = nextStageID(),
               dependent: (any DependentWork)? = nil, joined: ((WaiterToken, _ existing: Bool) -> ImagePriority?)? = nil,
               perform: @escaping @Sendable (Work) async throws -> Value) async throws -> Value {
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                let (token, work, moved) = state.withLock { state -> (WaiterToken, Work?, Work?) in
                    var terms = subscription
                    var existing = true
                    let workID: UInt64
                    if let id = state.joinable[key], let entry = state.live[id], entry.work.canServe(cachePolicy) {
                        workID = id
                    } else {
                        existing = false
                        let work = Work(priority: subscription.priority, cachePolicy: cachePolicy)
                        workID = work.id
                        state.joinable[key] = work.id
                        let entry = Entry(key: key, work: work)
                        entry.task = Task(priority: subscription.priority == .visible ? nil : .low) {
                            let result: Result<Value, any Error>
                            do { result = .success(try await perform(work)) } catch { result = .failure(error) }
                            self.finish(workID, with: result)
                        }
                        state.live[work.id] = entry
                    }
                    let token = WaiterToken(table: id, workID: workID, waiterID: waiterID)
                    if let priority = joined?(token, existing) { terms.priority = priority }
                    guard let entry = state.live[workID] else { return (token, nil, nil) }
                    entry.subscribers[waiterID] = Subscriber(continuation: continuation, terms: terms)
                    state.waiting[waiterID] = workID
                    return (token, entry.work, Self.updatePriority(of: entry))
                }
                // Outside the table's lock: the work's stream has a lock of its own, taken bottom
                // up (a work's events go to the works above it, which may share this table).
                if let work, let events = subscription.events {
                    work.follow(as: waiterID, events, partials: subscription.wantsPartials)
                }
                dependent?.link(upstream: token, in: self)
                moved?.propagatePriority()
                if Task.isCancelled { leave(token, failing: CancellationError()) }
            }
        } onCancel: {
            leaveWaiter(waiterID)
        }
    }

    /// A subscriber leaves: it gets `error` now (`CancellationError` when its task was
    /// cancelled, `overloaded` when it was pushed out); the work is cancelled (and taken out of
    /// the table) if nobody else waits, else its priority falls to the highest left.
    func leave(_ token: WaiterToken, failing error: any Error) {
        // The work's task is cancelled outside the lock: its cancellation handlers leave the
        // works below it, which may be in this same table.
        let (moved, cancelled, work) = state.withLock { state -> (Work?, Task<Void, Never>?, Work?) in
            guard let entry = state.live[token.workID] else { return (nil, nil, nil) }
            if let subscriber = entry.subscribers.removeValue(forKey: token.waiterID) {
                state.waiting[token.waiterID] = nil
                subscriber.continuation.resume(throwing: error)
            }
            guard entry.subscribers.isEmpty else { return (Self.updatePriority(of: entry), nil, entry.work) }
            Self.remove(token.workID, key: entry.key, from: &state)
            return (nil, entry.task, entry.work)
        }
        work?.unfollow(token.waiterID)
        cancelled?.cancel()
        moved?.propagatePriority()
    }

    /// The cancellation handler's leave: it knows the subscriber, not the work.
    private func leaveWaiter(_ waiterID: UInt64) {
        guard let workID = state.withLock({ $0.waiting[waiterID] }) else { return }
        leave(WaiterToken(table: id, workID: workID, waiterID: waiterID), failing: CancellationError())
    }

    /// Moves one subscriber to `priority`, and its work (and that work's upstream) with it.
    func setWaiterPriority(_ token: WaiterToken, to priority: ImagePriority) {
        let moved = state.withLock { state -> Work? in
            guard let entry = state.live[token.workID], entry.subscribers[token.waiterID] != nil else { return nil }
            entry.subscribers[token.waiterID]?.terms.priority = priority
            return Self.updatePriority(of: entry)
        }
        moved?.propagatePriority()
    }

    /// The demands of `work`'s current subscribers, with the priority each waits at.
    func demands(of work: Work) -> [(demand: Demand, priority: ImagePriority)] {
        state.withLock { state in
            state.live[work.id]?.subscribers.values.map { ($0.terms.demand, $0.terms.priority) } ?? []
        }
    }

    /// The number of subscribers of the work in the slot for `key`.
    func waiterCount(for key: Key) -> Int {
        state.withLock { state in state.joinable[key].flatMap { state.live[$0]?.subscribers.count } ?? 0 }
    }

    /// The current priority of the work in the slot for `key` that a plain request would join.
    func priority(for key: Key) -> ImagePriority? {
        state.withLock { state in
            guard let id = state.joinable[key], let work = state.live[id]?.work, work.canServe(.useCaches) else { return nil }
            return work.priority.current
        }
    }

    /// Hands `result` to every subscriber of the work and forgets it; the slot is cleared only
    /// if it still holds this same work (a reload may have taken it over).
    private func finish(_ workID: UInt64, with result: Result<Value, any Error>) {
        let (work, subscribers) = state.withLock { state -> (Work?, [Subscriber]) in
            guard let entry = state.live[workID] else { return (nil, []) }
            Self.remove(workID, key: entry.key, from: &state)
            for waiterID in entry.subscribers.keys { state.waiting[waiterID] = nil }
            return (entry.work, Array(entry.subscribers.values))
        }
        // Nothing of the stream after the value: a preview still on its way is dropped.
        work?.unfollowAll()
        for subscriber in subscribers { subscriber.continuation.resume(with: result) }
    }

    private static func remove(_ workID: UInt64, key: Key, from state: inout State) {
        state.live[workID] = nil
        if state.joinable[key] == workID { state.joinable[key] = nil }
    }

    /// The work's priority set to the highest of its subscribers'; the work when it changed
    /// (to move its place below, outside the lock).
    private static func updatePriority(of entry: Entry) -> Work? {
        guard let highest = entry.subscribers.values.lazy.map(\.terms.priority).max(),
              entry.work.priority.set(highest) else { return nil }
        return entry.work
    }
}

/// One piece of shared work, as its task sees it: its priority (shared with the loader's queue
/// or the decode pool, which read it when they pick work), what the requests that made it
/// allow, and the one stream it sends its subscribers.
final class StageWork<Partial: Sendable>: Sendable {
    let id = nextStageID()
    /// The highest priority among the current subscribers.
    let priority: PriorityHandle
    /// `false` for work started by a `reloadIgnoringCaches` request: it never reads caches.
    let readsCaches: Bool
    /// `false` for work started by a `returnCacheDataDontLoad` request: it never starts a load.
    let mayLoad: Bool
    /// Whether a subscriber ever asked for partial values.
    private let partialsWanted = Atomic<Bool>(false)
    /// The subscribers that follow the stream, and its latest values for those that come later.
    private let stream = Mutex(Stream())

    private struct Stream {
        var sinks: [UInt64: (send: @Sendable (StageEvent<Partial>) -> Void, partials: Bool)] = [:]
        var progress: ImageTask.Progress?
        /// Boxed: most works never send one, and a picture is large.
        var partial: Latest?
    }

    private final class Latest: Sendable {
        let value: Partial
        init(_ value: Partial) { self.value = value }
    }
    /// This work's own place among the subscribers of the work it waits on, and that table.
    private let upstream = Mutex<(WaiterToken, any WaiterTable)?>(nil)

    fileprivate init(priority: ImagePriority, cachePolicy: CachePolicy) {
        self.priority = PriorityHandle(priority)
        self.readsCaches = cachePolicy != .reloadIgnoringCaches
        self.mayLoad = cachePolicy != .returnCacheDataDontLoad
    }

    /// Whether a request with `cachePolicy` may join this work: a reload joins only work that
    /// does not read caches, and a request that may load joins only work that may load too
    /// (a cache-only miss would answer it `notCached`).
    func canServe(_ cachePolicy: CachePolicy) -> Bool {
        (!readsCaches || cachePolicy != .reloadIgnoringCaches) && (mayLoad || cachePolicy == .returnCacheDataDontLoad)
    }

    /// Whether any subscriber wants partial values (a download keeps its body's bytes then).
    var wantsPartials: Bool { partialsWanted.load(ordering: .relaxed) }

    /// Sends download progress to the subscribers.
    func progress(_ progress: ImageTask.Progress) { send(.progress(progress)) }

    /// Sends a partial value to the subscribers that want them.
    func partial(_ partial: Partial) { send(.partial(partial)) }

    /// Delivers `event` in order, under the stream's lock, and keeps it for later subscribers.
    /// A subscriber's sink only ever goes up (to a higher work's stream, a task's), so the
    /// stream locks are taken bottom up.
    private func send(_ event: StageEvent<Partial>) {
        stream.withLock { stream in
            switch event {
            case .progress(let progress): stream.progress = progress
            case .partial(let partial): stream.partial = Latest(partial)
            }
            for sink in stream.sinks.values {
                if case .partial = event, !sink.partials { continue }
                sink.send(event)
            }
        }
    }

    /// Adds subscriber `id`'s sink, which gets the latest values first.
    fileprivate func follow(as id: UInt64, _ send: @escaping @Sendable (StageEvent<Partial>) -> Void, partials: Bool) {
        if partials { partialsWanted.store(true, ordering: .relaxed) }
        stream.withLock { stream in
            if let progress = stream.progress { send(.progress(progress)) }
            if partials, let partial = stream.partial { send(.partial(partial.value)) }
            stream.sinks[id] = (send, partials)
        }
    }

    /// Removes subscriber `id`'s sink: nothing reaches it after this returns.
    fileprivate func unfollow(_ id: UInt64) {
        _ = stream.withLock { $0.sinks.removeValue(forKey: id) }
    }

    /// Removes every sink (the work has its value).
    fileprivate func unfollowAll() {
        stream.withLock { $0.sinks = [:] }
    }

    /// Forwards an event of the work this one waits on: progress as is; a partial value through
    /// `partial` (what this work makes of it), when given.
    func forward<Upstream>(_ event: StageEvent<Upstream>, partial: ((Upstream) -> Void)? = nil) {
        switch event {
        case .progress(let value): progress(value)
        case .partial(let value): partial?(value)
        }
    }

    func link(upstream token: WaiterToken, in table: any WaiterTable) {
        upstream.withLock { $0 = (token, table) }
    }

    /// Moves this work's place in the work it waits on to its priority now (read here, not
    /// when it changed: two changes racing each other still leave the latest below).
    fileprivate func propagatePriority() {
        guard let (token, table) = upstream.withLock({ $0 }) else { return }
        table.setWaiterPriority(token, to: priority.current)
    }
}

/// A work that subscribes to a lower stage's work: its place there follows its priority.
protocol DependentWork: AnyObject, Sendable {
    /// Records this work's token in the work it waits on, and that work's table.
    func link(upstream token: WaiterToken, in table: any WaiterTable)
}

extension StageWork: DependentWork {}

/// What the pipeline asks of a table through a subscriber's token alone, whatever the table's
/// types: a push-out, and an ``ImageTask``'s priority change.
protocol WaiterTable: AnyObject, Sendable {
    /// The table's place in the pipeline's list of tables.
    var id: Int { get }
    func leave(_ token: WaiterToken, failing error: any Error)
    func setWaiterPriority(_ token: WaiterToken, to priority: ImagePriority)
}

/// Names one subscriber of one piece of work.
struct WaiterToken: Sendable {
    /// The table's ``StageTable/id``.
    let table: Int
    let workID: UInt64
    let waiterID: UInt64
}

private let lastStageID = Atomic<UInt64>(0)

/// A new id for a work or a subscriber, unique in the process.
func nextStageID() -> UInt64 {
    lastStageID.add(1, ordering: .relaxed).newValue
}
