import Foundation

// The two in-flight tables: joining, leaving and finishing shared work.
extension ImagePipeline {
    /// The decode work for `key`: joined when one is in flight, else created and started.
    /// A `reloadIgnoringCaches` request does not join work that may read caches, nor a request
    /// that may load join `returnCacheDataDontLoad` work; each starts its own and takes over the
    /// table slot (the old work still finishes for its own waiters).
    func decodeWork(for request: ImageRequest, key: ImageKey) -> InFlightWork<ImageResponse> {
        if let existing = decodes[key], existing.canServe(request.cachePolicy) {
            return existing
        }
        let work = InFlightWork<ImageResponse>(id: nextID(), priority: request.priority, cachePolicy: request.cachePolicy)
        decodes[key] = work
        liveDecodes[work.id] = work
        work.task = Task(priority: request.priority == .visible ? nil : .low) {
            let result = await capture { try await self.performDecode(request: request, key: key, work: work) }
            self.finish(work, in: .decode(key), with: result)
        }
        return work
    }

    /// The download work for `request`'s fetch URL, joined or created like ``decodeWork``.
    func downloadWork(for request: ImageRequest, url: URL) -> InFlightWork<LoadedData> {
        if let existing = downloads[url], existing.canServe(request.cachePolicy) {
            return existing
        }
        let work = InFlightWork<LoadedData>(id: nextID(), priority: request.priority, cachePolicy: request.cachePolicy)
        downloads[url] = work
        liveDownloads[work.id] = work
        work.task = Task(priority: request.priority == .visible ? nil : .low) {
            var result = await capture { try await self.performDownload(request: request, url: url, priority: work.priority) }
            switch result {
            case .success:  // bytes in hand: a failure remembered for this URL no longer holds
                self.failures[url] = nil
            case .failure(let error) where !(error is CancellationError):
                let wrapped = Self.wrap(error, loading: url)
                self.rememberFailure(wrapped, for: url)
                result = .failure(wrapped)
            case .failure:
                break
            }
            self.finish(work, in: .download(url), with: result)
        }
        return work
    }

    /// Waits for `work` as one more waiter. The waiter is registered before this suspends; if
    /// the calling task is cancelled it leaves at once with `CancellationError`.
    func wait<Value: Sendable>(on work: InFlightWork<Value>, table: WaiterToken.Table) async throws -> Value {
        let token = WaiterToken(table: table, workID: work.id, waiterID: nextID())
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                work.waiters[token.waiterID] = continuation
                if Task.isCancelled { leave(token) }
            }
        } onCancel: {
            Task { await self.leave(token) }
        }
    }

    /// A waiter leaves: it gets `CancellationError` now, and the work is cancelled (and taken
    /// out of its table) if nobody else waits.
    func leave(_ token: WaiterToken) {
        switch token.table {
        case .decode(let key):
            guard let work = liveDecodes[token.workID], leave(token, from: work) else { return }
            liveDecodes[work.id] = nil
            if decodes[key] === work { decodes[key] = nil }
        case .download(let url):
            guard let work = liveDownloads[token.workID], leave(token, from: work) else { return }
            liveDownloads[work.id] = nil
            if downloads[url] === work { downloads[url] = nil }
        }
    }

    /// Returns `true` when `work` has no waiters left and was cancelled.
    private func leave<Value>(_ token: WaiterToken, from work: InFlightWork<Value>) -> Bool {
        work.waiters.removeValue(forKey: token.waiterID)?.resume(throwing: CancellationError())
        guard work.waiters.isEmpty else { return false }
        work.task?.cancel()
        return true
    }

    /// Hands `result` to every waiter of `work` and forgets it; the joinable slot is cleared only
    /// if it still holds this same work (a reload may have taken it over).
    func finish<Value: Sendable>(_ work: InFlightWork<Value>, in table: WaiterToken.Table,
                                 with result: Result<Value, any Error>) {
        switch table {
        case .decode(let key):
            liveDecodes[work.id] = nil
            if decodes[key] === work { decodes[key] = nil }
        case .download(let url):
            liveDownloads[work.id] = nil
            if downloads[url] === work { downloads[url] = nil }
        }
        let waiters = work.waiters
        work.waiters = [:]
        work.task = nil
        for continuation in waiters.values { continuation.resume(with: result) }
    }
}

/// The outcome of an async throwing body as a `Result`.
func capture<Value>(isolation: isolated (any Actor)? = #isolation,
                    _ body: () async throws -> Value) async -> Result<Value, any Error> {
    do { return .success(try await body()) } catch { return .failure(error) }
}
