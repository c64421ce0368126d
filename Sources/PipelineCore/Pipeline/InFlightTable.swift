import Foundation
import Synchronization

/// The shared works of one stage, by key, and the callers waiting for them: the one type every
/// stage uses for "join the work in flight or start it" (Nuke's `TaskPool`). A stage owns its
/// table; a new stage makes a table of its own and registers it with the pipeline
/// (``ImagePipeline/tables``), nothing else changes.
///
/// A slot per key holds the work new callers join; every running work is also kept by id (a
/// reload can displace a work from its slot while it still has waiters who may cancel). A
/// shared work runs at the highest priority of its current waiters. Only ever touched on the
/// ``ImagePipeline`` actor: every method takes the pipeline as its isolation.
final class InFlightTable<Key: Hashable & Sendable, Value: Sendable>: WaiterTable {
    /// This table's place in ``ImagePipeline/tables``, carried by its waiters' tokens.
    let id: Int
    private var joinable: [Key: InFlightWork<Value>] = [:]
    private var live: [UInt64: (work: InFlightWork<Value>, key: Key)] = [:]

    init(id: Int) {
        self.id = id
    }

    /// The work for `key`: joined when one is in flight that a request with `cachePolicy` may
    /// join, else created, put in the slot and started with `perform` as its task. A
    /// `reloadIgnoringCaches` request does not join work that may read caches, nor a request
    /// that may load join `returnCacheDataDontLoad` work; each starts its own and takes over
    /// the slot (the old work still finishes for its own waiters). `completion` may adjust the
    /// result before every waiter gets it.
    ///
    /// Why "straight away": the work goes into the table before the caller's first `await`, so
    /// a second caller arriving while the first is suspended finds it and joins.
    func work(for key: Key, priority: ImagePriority, cachePolicy: CachePolicy, in pipeline: isolated ImagePipeline,
              perform: @escaping @Sendable (isolated ImagePipeline, InFlightWork<Value>) async throws -> Value,
              completion: @escaping @Sendable (isolated ImagePipeline, inout Result<Value, any Error>) -> Void = { _, _ in })
        -> InFlightWork<Value> {
        if let existing = joinable(for: key, cachePolicy: cachePolicy) { return existing }
        let work = InFlightWork<Value>(id: pipeline.nextID(), priority: priority, cachePolicy: cachePolicy)
        joinable[key] = work
        live[work.id] = (work, key)
        // The task runs on the actor (it uses `pipeline`, the isolated parameter), so it starts
        // only after the caller has set the work up.
        work.task = Task(priority: priority == .visible ? nil : .low) {
            var result = await capture(isolation: pipeline) { try await perform(pipeline, work) }
            completion(pipeline, &result)
            self.finish(work, with: result, in: pipeline)
        }
        return work
    }

    /// The work in flight for `key` that a request with `cachePolicy` would join, if any.
    func joinable(for key: Key, cachePolicy: CachePolicy) -> InFlightWork<Value>? {
        guard let existing = joinable[key], existing.canServe(cachePolicy) else { return nil }
        return existing
    }

    /// Waits for `work` as one more waiter at `priority`, which counts toward the work's
    /// priority while this waiter stays. The waiter is registered before this suspends; if the
    /// calling task is cancelled it leaves at once with `CancellationError`. `dependent`, when
    /// given, is the work on whose behalf this waits (a decode waiting for its download): its
    /// priority changes move this waiter's, and this work's progress is forwarded to its own.
    /// `task`, for an ``ImageTask``'s caller: the waiter takes the task's current priority
    /// (which the task may change later) and the task gets the work's progress. `waiterID`, when
    /// given, names the waiter (a caller admitted under that id, ``RequestAdmission``).
    func wait(on work: InFlightWork<Value>, priority: ImagePriority, upstreamOf dependent: (any UpstreamLinked)? = nil,
              task: ImageTask? = nil, as waiterID: UInt64? = nil, in pipeline: isolated ImagePipeline) async throws -> Value {
        let token = WaiterToken(table: id, workID: work.id, waiterID: waiterID ?? pipeline.nextID())
        dependent?.link(upstream: token)
        let sink = dependent?.progress ?? task?.relay
        // Previews go to a task's stream, or feed the dependent work's own previews.
        let previewSink = dependent == nil ? task?.previewRelay : nil
        dependent?.previewFeed?.follow(body: work.body, previews: work.previews)
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation(isolation: pipeline) { continuation in
                let priority = task?.joined(as: token) ?? priority
                work.waiters[token.waiterID] = .init(continuation: continuation, priority: priority)
                if let sink { work.waiters[token.waiterID]?.progress = work.progress.subscribe(send: sink.send) }
                if let previewSink { work.waiters[token.waiterID]?.previews = work.previews.subscribe(send: previewSink.send) }
                if work.updatePriority() { pipeline.propagatePriority(of: work) }
                if Task.isCancelled { leave(token, failing: CancellationError(), in: pipeline) }
            }
        } onCancel: { [pipeline] in
            Task { await pipeline.leave(token) }
        }
    }

    /// A waiter leaves: it gets `error` now (`CancellationError` when its task was cancelled,
    /// `overloaded` when it was pushed out); the work is cancelled (and taken out of the table)
    /// if nobody else waits, else its priority falls to the highest left.
    func leave(_ token: WaiterToken, failing error: any Error, in pipeline: isolated ImagePipeline) {
        guard let (work, key) = live[token.workID] else { return }
        if let waiter = work.waiters.removeValue(forKey: token.waiterID) {
            if let subscription = waiter.progress { work.progress.unsubscribe(subscription) }
            if let subscription = waiter.previews { work.previews.unsubscribe(subscription) }
            waiter.continuation.resume(throwing: error)
        }
        guard work.waiters.isEmpty else {
            if work.updatePriority() { pipeline.propagatePriority(of: work) }
            return
        }
        work.task?.cancel()
        remove(work, for: key)
    }

    /// Moves one waiter to `priority`, and its work (and that work's upstream) with it.
    func setWaiterPriority(_ token: WaiterToken, to priority: ImagePriority, in pipeline: isolated ImagePipeline) {
        guard let work = live[token.workID]?.work, work.waiters[token.waiterID] != nil else { return }
        work.waiters[token.waiterID]?.priority = priority
        if work.updatePriority() { pipeline.propagatePriority(of: work) }
    }

    /// The number of callers waiting for the work in the slot for `key`.
    func waiterCount(for key: Key) -> Int { joinable[key]?.waiters.count ?? 0 }

    /// The current priority of the work in the slot for `key` that a plain request would join.
    func priority(for key: Key) -> ImagePriority? {
        guard let work = joinable[key], work.canServe(.useCaches) else { return nil }
        return work.priority.current
    }

    /// Hands `result` to every waiter of `work` and forgets it; the slot is cleared only if it
    /// still holds this same work (a reload may have taken it over).
    private func finish(_ work: InFlightWork<Value>, with result: Result<Value, any Error>, in pipeline: isolated ImagePipeline) {
        if let key = live[work.id]?.key { remove(work, for: key) }
        let waiters = work.waiters
        work.waiters = [:]
        work.task = nil
        for waiter in waiters.values { waiter.continuation.resume(with: result) }
    }

    private func remove(_ work: InFlightWork<Value>, for key: Key) {
        live[work.id] = nil
        if joinable[key] === work { joinable[key] = nil }
    }
}

/// What the pipeline asks of a table through a waiter's token alone, whatever the table's key
/// and value types: the cancellation handler and an ``ImageTask``'s priority change only have
/// the token.
protocol WaiterTable: AnyObject {
    /// The table's place in ``ImagePipeline/tables``.
    var id: Int { get }
    func leave(_ token: WaiterToken, failing error: any Error, in pipeline: isolated ImagePipeline)
    func setWaiterPriority(_ token: WaiterToken, to priority: ImagePriority, in pipeline: isolated ImagePipeline)
}

/// Names one waiter of one piece of work, so a cancellation handler (which runs off the actor)
/// can find it again with only `Sendable` values.
struct WaiterToken: Sendable {
    /// The table's ``InFlightTable/id``.
    let table: Int
    let workID: UInt64
    let waiterID: UInt64
}

/// One piece of shared work and the callers waiting for it.
///
/// Only ever touched on the ``ImagePipeline`` actor, which owns the tables that hold it.
final class InFlightWork<Value: Sendable>: UpstreamLinked {
    /// One caller waiting, at the priority it asked for.
    struct Waiter {
        let continuation: CheckedContinuation<Value, any Error>
        var priority: ImagePriority
        /// Its subscription to ``InFlightWork/progress``, if it follows it.
        var progress: UInt64?
        /// Its subscription to ``InFlightWork/previews``, if it follows them (an ``ImageTask``).
        var previews: UInt64?
    }

    let id: UInt64
    /// The highest priority among the current waiters (the creator's until the first joins):
    /// shared with the loader's queue or the decode pool, which read it when they pick work.
    let priority: PriorityHandle
    /// `false` for work started by a `reloadIgnoringCaches` request: it never reads caches.
    let readsCaches: Bool
    /// `false` for work started by a `returnCacheDataDontLoad` request: it never starts a load.
    let mayLoad: Bool
    var waiters: [UInt64: Waiter] = [:]
    var task: Task<Void, Never>?
    /// This work's own place among the waiters of the work it waits on (a decode's, in its
    /// download): moved when this work's priority moves.
    var upstream: WaiterToken?
    /// The download progress of this work (a download's own; a decode's, forwarded from its
    /// download), for the waiters that follow it.
    let progress = Relay<ImageTask.Progress>()
    /// A download's body as it arrives, kept while a decode that shows previews follows it.
    let body = StreamedBody()
    /// The previews of a decode or processing work, for the waiters that follow them.
    let previews = Relay<ImageResponse>()
    /// Makes a decode or processing work's ``previews``, when the pipeline shows previews.
    var previewFeed: PreviewFeed?
    /// What an image work keeps on disk (``DiskCachePolicy``).
    var disk = DiskIntent()
    /// A decode's processing works' processors, to run in the decode's own job.
    let followUps = ProcessingFollowUps()

    init(id: UInt64, priority: ImagePriority, cachePolicy: CachePolicy) {
        self.id = id
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

    /// Sets the priority to the highest of the current waiters' (unchanged with none left);
    /// `true` when it changed.
    func updatePriority() -> Bool {
        guard let highest = waiters.values.lazy.map(\.priority).max() else { return false }
        return priority.set(highest)
    }

    func link(upstream token: WaiterToken) { upstream = token }
}

/// Work that waits on other work and must know its place there (a decode in its download).
protocol UpstreamLinked: AnyObject {
    /// Records this work's waiter token in the work it waits on.
    func link(upstream: WaiterToken)
    /// Where the progress of the work waited on goes.
    var progress: Relay<ImageTask.Progress> { get }
    /// What makes this work's previews from the work waited on, if it shows previews.
    var previewFeed: PreviewFeed? { get }
}

/// The outcome of an async throwing body as a `Result`.
func capture<Value>(isolation: isolated (any Actor)? = #isolation,
                    _ body: () async throws -> Value) async -> Result<Value, any Error> {
    do { return .success(try await body()) } catch { return .failure(error) }
}
