import PipelineCore
import Synchronization

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// A finished response body kept for repeats: its bytes, format, `ETag` and how long it may be
/// served.
struct StoredResult: Sendable {
    var data: Data
    var format: ImageFormat
    var etag: String
    var freshUntil: Date
}

/// Processed results by their key (``key(options:source:choice:)``): a byte-bounded memory LRU
/// in front of the configured ``ImageServer/Configuration/resultCache`` (a disk cache, or one
/// tiered with Redis so every replica shares the results). A repeat is answered without
/// loading or decoding anything.
///
/// An entry lives for the server's TTL (the `max-age` clients are told, so a browser or CDN keeps
/// the same bytes as long); a changed source is seen once it expires. The stored bytes carry no
/// side data: the format is read back from their signature, the `ETag` and freshness from the
/// cache's own entry info.
struct ResultStore: Sendable {
    let memory: MemoryCache<String, StoredResult>
    let shared: (any DataCaching)?
    let decoders: DecoderRegistry

    init(memoryBytes: Int, shared: (any DataCaching)?, decoders: DecoderRegistry) {
        memory = MemoryCache(costLimit: max(0, memoryBytes))
        self.shared = shared
        self.decoders = decoders
    }

    /// The key of a result: the options' canonical text, the source and the output choice,
    /// hashed (SHA-256, hex).
    static func key(options: RenderOptions, source: URL, choice: OutputChoice) -> String {
        let accepted = choice.accepted.map(\.description).sorted().joined(separator: ",")
        let output = choice.explicit.map { "format=\($0)" } ?? "accept=\(accepted)"
        return SHA256.hexDigest(Array("imgpipe-result v1\n\(options.canonical)\n\(source.absoluteString)\n\(output)".utf8))
    }

    /// The entry's URL in ``shared`` (`DataCaching` is keyed by URL).
    private static func url(_ key: String) -> URL? { URL(string: "imgpipe-result:///\(key)") }

    /// A fresh stored result, and the tier that had it.
    func lookup(_ key: String, now: Date) async -> (StoredResult, tier: String)? {
        if let hit = memory.value(for: key) {
            if hit.freshUntil > now { return (hit, "result_memory") }
            memory.removeValue(for: key)
        }
        guard let shared, let url = Self.url(key), let entry = await shared.cachedData(for: url),
              let etag = entry.info.etag, let freshUntil = entry.info.freshUntil, freshUntil > now,
              let format = decoders.format(of: entry.data)
        else { return nil }
        let result = StoredResult(data: entry.data, format: format, etag: etag, freshUntil: freshUntil)
        memory.insert(result, for: key, cost: result.data.count)
        return (result, "result_store")
    }

    /// Keeps `result` in memory and in ``shared``.
    func store(_ result: StoredResult, for key: String) async {
        memory.insert(result, for: key, cost: result.data.count)
        guard let shared, let url = Self.url(key) else { return }
        await shared.storeData(result.data, info: CacheEntryInfo(etag: result.etag, freshUntil: result.freshUntil), for: url)
    }
}

/// Joins identical requests in flight: the first starts the work, later ones wait for the same
/// answer (imagor's `singleflight`), so one URL asked by every client at once is made once.
/// A waiter that is cancelled leaves at once; the work is cancelled only when its last waiter
/// leaves.
final class SingleFlight<Value: Sendable>: Sendable {
    private typealias Waiter = CheckedContinuation<Value, any Error>

    private struct Flight {
        var id: UInt64
        var task: Task<Void, Never>?
        var waiters: [UInt64: Waiter] = [:]
    }

    private struct State {
        var flights: [String: Flight] = [:]
        var nextID: UInt64 = 0
    }

    private let state = Mutex(State())

    /// The value of the work for `key`, started with `work` unless already in flight.
    func value(for key: String, _ work: @escaping @Sendable () async throws -> Value) async throws -> Value {
        let waiterID = state.withLock { state -> UInt64 in
            state.nextID += 1
            return state.nextID
        }
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: Waiter) in
                let start: UInt64? = state.withLock { state in
                    if Task.isCancelled {
                        continuation.resume(throwing: CancellationError())
                        return nil
                    }
                    if state.flights[key] != nil {
                        state.flights[key]?.waiters[waiterID] = continuation
                        return nil
                    }
                    state.nextID += 1
                    state.flights[key] = Flight(id: state.nextID, waiters: [waiterID: continuation])
                    return state.nextID
                }
                guard let flightID = start else { return }
                let task = Task { [self] in
                    let result: Result<Value, any Error>
                    do { result = .success(try await work()) } catch { result = .failure(error) }
                    finish(key, flightID: flightID, with: result)
                }
                let abandoned = state.withLock { state -> Bool in
                    guard state.flights[key]?.id == flightID else { return true }
                    state.flights[key]?.task = task
                    return false
                }
                if abandoned { task.cancel() }  // every waiter left before the work had its task
            }
        } onCancel: {
            leave(key, waiterID: waiterID)
        }
    }

    /// Hands `result` to every waiter of the flight and forgets it.
    private func finish(_ key: String, flightID: UInt64, with result: Result<Value, any Error>) {
        let waiters = state.withLock { state -> [Waiter] in
            guard let flight = state.flights[key], flight.id == flightID else { return [] }
            state.flights[key] = nil
            return Array(flight.waiters.values)
        }
        for waiter in waiters { waiter.resume(with: result) }
    }

    /// A cancelled waiter leaves at once; the last one cancels the work.
    private func leave(_ key: String, waiterID: UInt64) {
        let (waiter, orphaned) = state.withLock { state -> (Waiter?, Task<Void, Never>?) in
            guard var flight = state.flights[key], let waiter = flight.waiters.removeValue(forKey: waiterID) else { return (nil, nil) }
            if flight.waiters.isEmpty {
                state.flights[key] = nil
                return (waiter, flight.task)
            }
            state.flights[key] = flight
            return (waiter, nil)
        }
        waiter?.resume(throwing: CancellationError())
        orphaned?.cancel()
    }
}
