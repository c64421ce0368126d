import Synchronization

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// How many requests are processed at once and how many may wait: imgproxy's
/// `IMGPROXY_WORKERS` and `IMGPROXY_REQUESTS_QUEUE_SIZE`. A request beyond both is refused at
/// once (429), never queued without bound. Waiters are admitted first come, first served; a
/// waiter whose task is cancelled (its deadline passed, its client left) leaves the line.
///
/// Only the picture work passes through it: `/health`, `/metrics`, refusals and answers from
/// the result cache do not wait for a worker.
final class RequestGate: Sendable {
    private struct State {
        var running = 0
        var waiters: [(id: UInt64, continuation: CheckedContinuation<Void, any Error>)] = []
        var nextID: UInt64 = 0
    }

    let workers: Int
    /// 0: no limit on waiters.
    let queueSize: Int
    private let state = Mutex(State())

    init(workers: Int, queueSize: Int) {
        self.workers = max(1, workers)
        self.queueSize = max(0, queueSize)
    }

    /// Requests running and waiting now.
    var load: (running: Int, waiting: Int) { state.withLock { ($0.running, $0.waiters.count) } }

    /// Runs `body` once a worker is free.
    /// - Throws: ``ServerError/Kind/tooManyRequests`` at once when the line is full,
    ///   `CancellationError` when the task is cancelled while it waits, or what `body` throws.
    func run<T: Sendable>(_ body: () async throws -> T) async throws -> T {
        try await enter()
        defer { leave() }
        return try await body()
    }

    private func enter() async throws {
        enum Decision { case run, wait(UInt64), refuse }
        let decision: Decision = state.withLock { state in
            if state.running < workers {
                state.running += 1
                return .run
            }
            if queueSize > 0, state.waiters.count >= queueSize { return .refuse }
            state.nextID += 1
            return .wait(state.nextID)
        }
        switch decision {
        case .run: return
        case .refuse:
            throw ServerError(.tooManyRequests, "too many requests: \(workers) in progress and \(queueSize) waiting")
        case .wait(let id):
            try await withTaskCancellationHandler {
                try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                    let cancelled: Bool = state.withLock { state in
                        if Task.isCancelled { return true }
                        state.waiters.append((id, continuation))
                        return false
                    }
                    if cancelled { continuation.resume(throwing: CancellationError()) }
                }
            } onCancel: {
                let waiter = state.withLock { state -> CheckedContinuation<Void, any Error>? in
                    guard let index = state.waiters.firstIndex(where: { $0.id == id }) else { return nil }
                    return state.waiters.remove(at: index).continuation
                }
                waiter?.resume(throwing: CancellationError())
            }
        }
    }

    /// Hands the worker to the first waiter, or frees it.
    private func leave() {
        let next = state.withLock { state -> CheckedContinuation<Void, any Error>? in
            guard !state.waiters.isEmpty else {
                state.running -= 1
                return nil
            }
            return state.waiters.removeFirst().continuation
        }
        next?.resume()
    }
}

/// Runs `body`, cancelling it and throwing `onTimeout` when `seconds` pass first. The body's
/// task is cancelled, so the pipeline drops this caller's interest (work another caller still
/// needs goes on).
func withDeadline<T: Sendable>(_ seconds: Double, onTimeout: ServerError,
                               _ body: @escaping @Sendable () async throws -> T) async throws -> T {
    try await withThrowingTaskGroup(of: T.self) { group in
        group.addTask { try await body() }
        group.addTask {
            try await Task.sleep(nanoseconds: UInt64(max(0, seconds) * 1e9))
            throw onTimeout
        }
        defer { group.cancelAll() }
        guard let first = try await group.next() else { throw onTimeout }
        return first
    }
}
