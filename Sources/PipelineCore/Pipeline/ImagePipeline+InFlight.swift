import Foundation

// The two in-flight tables (one type, ``InFlightTable``): joining, leaving, finishing shared
// work, and its priority, which is the highest of its current waiters'.
extension ImagePipeline {
    /// The decode work for `key`: joined when one is in flight, else created and started.
    /// A `reloadIgnoringCaches` request does not join work that may read caches, nor a request
    /// that may load join `returnCacheDataDontLoad` work; each starts its own and takes over the
    /// table slot (the old work still finishes for its own waiters).
    ///
    /// The request's ``DiskCachePolicy`` decides whether the work makes a rendition (its creator
    /// decides) and whether it keeps loaded bytes as the original (any request that joins may ask
    /// for that). `asBaseStoringOriginal`, for the unprocessed decode a processed work waits on:
    /// no rendition of its own, and originals kept as the processed work's policy says.
    func decodeWork(for request: ImageRequest, key: ImageKey,
                    asBaseStoringOriginal: Bool? = nil) -> InFlightWork<ImageResponse> {
        let decode = work(in: decodes, key: key, request: request) { work in
            try await self.performDecode(request: request, key: key, work: work)
        } completion: { _ in }
        // The work's task runs on this actor, so it starts only after these are set.
        let policy = request.diskCachePolicy ?? configuration.diskCachePolicy
        if decode.makesRendition == nil { decode.makesRendition = asBaseStoringOriginal == nil && policy.makesRendition(for: key) }
        if asBaseStoringOriginal ?? policy.storesOriginal(for: key) { decode.storesOriginal = true }
        return decode
    }

    /// The download work for `request`'s fetch URL `url`, joined or created like ``decodeWork``:
    /// by the URL's cache identity `cacheURL` (two tokens of one picture share one download,
    /// made with the first caller's URL). A download's failure is wrapped with its URL and,
    /// when permanent, remembered for it.
    func downloadWork(for request: ImageRequest, url: URL, cacheURL: URL) -> InFlightWork<LoadedData> {
        work(in: downloads, key: cacheURL, request: request) { work in
            try await self.performDownload(request: request, url: url, cacheURL: cacheURL, work: work)
        } completion: { result in
            switch result {
            case .success:  // bytes in hand: a failure remembered for this URL no longer holds
                self.failures.removeValue(for: url)
            case .failure(let error) where !(error is CancellationError):
                let wrapped = Self.wrap(error, loading: url)
                self.rememberFailure(wrapped, for: url)
                result = .failure(wrapped)
            case .failure:
                break
            }
        }
    }

    /// The one path both stages take: join the slot's work, or create one, put it in the
    /// table and start `perform` as its task; `completion` may adjust the result before every
    /// waiter gets it.
    private func work<Key, Value>(in table: InFlightTable<Key, Value>, key: Key, request: ImageRequest,
                                  perform: @escaping @Sendable (InFlightWork<Value>) async throws -> Value,
                                  completion: @escaping (inout Result<Value, any Error>) -> Void) -> InFlightWork<Value> {
        if let existing = table.joinable(for: key, cachePolicy: request.cachePolicy) { return existing }
        let work = InFlightWork<Value>(id: nextID(), priority: request.priority, cachePolicy: request.cachePolicy)
        table.insert(work, for: key)
        work.task = Task(priority: request.priority == .visible ? nil : .low) {
            var result = await capture { try await perform(work) }
            completion(&result)
            self.finish(work, in: table, key: key, with: result)
        }
        return work
    }

    /// Waits for `work` as one more waiter at `priority`, which counts toward the work's
    /// priority while this waiter stays. The waiter is registered before this suspends; if the
    /// calling task is cancelled it leaves at once with `CancellationError`. `upstreamOf`, when
    /// given, is the work on whose behalf this waits (a decode waiting for its download): its
    /// priority changes move this waiter's, and the work's progress is forwarded to its own.
    /// `task`, for an ``ImageTask``'s caller: the waiter takes the task's current priority
    /// (which the task may change later) and the task gets the work's progress.
    func wait<Key, Value>(on work: InFlightWork<Value>, in table: InFlightTable<Key, Value>, key: Key,
                          priority: ImagePriority, upstreamOf dependent: (any UpstreamLinked)? = nil,
                          task: ImageTask? = nil) async throws -> Value {
        let token = WaiterToken(table: table.tokenTable(key), workID: work.id, waiterID: nextID())
        dependent?.link(upstream: token)
        let sink = dependent?.progress ?? task?.relay
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                let priority = task?.joined(as: token) ?? priority
                work.waiters[token.waiterID] = .init(continuation: continuation, priority: priority)
                if let sink { work.waiters[token.waiterID]?.progress = work.progress.subscribe(send: sink.send) }
                if work.updatePriority() { propagatePriority(of: work) }
                if Task.isCancelled { leave(token) }
            }
        } onCancel: {
            Task { await self.leave(token) }
        }
    }

    /// A waiter leaves: it gets `CancellationError` now; the work is cancelled (and taken out
    /// of its table) if nobody else waits, else its priority falls to the highest left.
    func leave(_ token: WaiterToken) {
        switch token.table {
        case .decode(let key): leave(token, table: decodes, key: key)
        case .download(let url): leave(token, table: downloads, key: url)
        }
    }

    private func leave<Key, Value>(_ token: WaiterToken, table: InFlightTable<Key, Value>, key: Key) {
        guard let work = table.work(id: token.workID) else { return }
        if let waiter = work.waiters.removeValue(forKey: token.waiterID) {
            if let subscription = waiter.progress { work.progress.unsubscribe(subscription) }
            waiter.continuation.resume(throwing: CancellationError())
        }
        guard work.waiters.isEmpty else {
            if work.updatePriority() { propagatePriority(of: work) }
            return
        }
        work.task?.cancel()
        table.remove(work, for: key)
    }

    /// Moves the waiter a work holds in its upstream work (a decode's in its download) to the
    /// work's new priority, and so on up.
    private func propagatePriority<Value>(of work: InFlightWork<Value>) {
        guard let token = work.upstream else { return }
        let priority = work.priority.current
        switch token.table {
        case .decode(let key): setWaiterPriority(token, to: priority, table: decodes, key: key)
        case .download(let url): setWaiterPriority(token, to: priority, table: downloads, key: url)
        }
    }

    /// Moves one waiter to `priority` (an ``ImageTask``'s new priority), and its work with it.
    func setWaiterPriority(_ token: WaiterToken, to priority: ImagePriority) {
        switch token.table {
        case .decode(let key): setWaiterPriority(token, to: priority, table: decodes, key: key)
        case .download(let url): setWaiterPriority(token, to: priority, table: downloads, key: url)
        }
    }

    private func setWaiterPriority<Key, Value>(_ token: WaiterToken, to priority: ImagePriority,
                                               table: InFlightTable<Key, Value>, key: Key) {
        guard let work = table.work(id: token.workID), work.waiters[token.waiterID] != nil else { return }
        work.waiters[token.waiterID]?.priority = priority
        if work.updatePriority() { propagatePriority(of: work) }
    }

    /// Hands `result` to every waiter of `work` and forgets it; the joinable slot is cleared only
    /// if it still holds this same work (a reload may have taken it over).
    private func finish<Key, Value>(_ work: InFlightWork<Value>, in table: InFlightTable<Key, Value>, key: Key,
                                    with result: Result<Value, any Error>) {
        table.remove(work, for: key)
        let waiters = work.waiters
        work.waiters = [:]
        work.task = nil
        for waiter in waiters.values { waiter.continuation.resume(with: result) }
    }

    /// The number of callers waiting for the decode `request` would join (0 when none is in
    /// flight): for diagnostics, and for tests that must know a caller has joined before they
    /// go on, instead of sleeping.
    public func waiterCount(for request: ImageRequest) -> Int {
        decodes.waiterCount(for: key(for: request))
    }

    /// The number of callers (decodes) waiting for the download of `url`.
    public func downloadWaiterCount(for url: URL) -> Int {
        downloads.waiterCount(for: url)
    }

    /// How many permanent failures the negative cache remembers (fetch URLs and keys); bounded
    /// by ``Configuration/negativeCacheLimit`` per kind.
    public var rememberedFailureCount: Int { failures.count + decodeFailures.count }

    /// The current priority of the decode `request` would join, if one is in flight.
    public func inFlightPriority(for request: ImageRequest) -> ImagePriority? {
        decodes.joinable(for: key(for: request), cachePolicy: .useCaches)?.priority.current
    }
}

/// Work that waits on other work and must know its place there (a decode in its download).
protocol UpstreamLinked: AnyObject {
    /// Records this work's waiter token in the work it waits on.
    func link(upstream: WaiterToken)
    /// Where the progress of the work waited on goes.
    var progress: ProgressRelay { get }
}

extension InFlightWork: UpstreamLinked {
    func link(upstream token: WaiterToken) { upstream = token }
}

/// The outcome of an async throwing body as a `Result`.
func capture<Value>(isolation: isolated (any Actor)? = #isolation,
                    _ body: () async throws -> Value) async -> Result<Value, any Error> {
    do { return .success(try await body()) } catch { return .failure(error) }
}
