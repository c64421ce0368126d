import Synchronization

/// Admits decodes by the memory they will take, not by thread count: a decode starts only
/// while the sum of the estimates of running decodes (``ImageDecodingSession/estimatedPeakMemory(_:)``)
/// plus its own fits ``budget``; the others wait, the highest current priority first (FIFO
/// within a priority). A decode larger than the whole budget starts when nothing else runs,
/// so nothing waits forever. Waiting suspends the task, never a thread.
///
/// An animation's frame sequence (``ImageAnimation/frames()``) is admitted the same way, by
/// its codec's canvases (``AnimatedImageDecoding/estimatedAnimationMemory(_:)``) plus the
/// scaled frame, and holds its bytes from its first frame until it ends, fails or is dropped:
/// those canvases live that long.
final class DecodeAdmission: Sendable {
    private struct Waiter {
        let id: UInt64
        let bytes: Int
        let priority: PriorityHandle
        let continuation: CheckedContinuation<Void, any Error>
    }

    private struct State {
        var inUse = 0
        var running = 0
        var waiters: [Waiter] = []
        var nextID: UInt64 = 0
        var peakInUse = 0
    }

    /// The most estimated bytes that run at once.
    let budget: Int
    private let state = Mutex(State())

    init(budget: Int) {
        self.budget = max(1, budget)
    }

    /// Takes `bytes` now if they fit (or nothing runs); `false` when the caller must wait
    /// with ``acquire(_:priority:)``. Never jumps ahead of a waiter.
    func tryAcquire(_ bytes: Int) -> Bool {
        state.withLock { state in
            guard state.waiters.isEmpty, Self.fits(bytes, in: state, budget: budget) else { return false }
            Self.take(bytes, in: &state)
            return true
        }
    }

    /// Suspends until `bytes` fit; throws `CancellationError` if the task is cancelled first.
    func acquire(_ bytes: Int, priority: PriorityHandle) async throws {
        let id = state.withLock { state -> UInt64 in
            state.nextID += 1
            return state.nextID
        }
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                let admitted = state.withLock { state -> Bool in
                    if state.waiters.isEmpty, Self.fits(bytes, in: state, budget: budget) {
                        Self.take(bytes, in: &state)
                        return true
                    }
                    state.waiters.append(Waiter(id: id, bytes: bytes, priority: priority, continuation: continuation))
                    return false
                }
                if admitted { continuation.resume() } else if Task.isCancelled { cancel(id) }
            }
        } onCancel: {
            cancel(id)
        }
    }

    /// Gives back `bytes` taken by ``tryAcquire(_:)`` or ``acquire(_:priority:)`` and admits
    /// the waiters that now fit, most urgent first.
    func release(_ bytes: Int) {
        let admitted = state.withLock { state -> [CheckedContinuation<Void, any Error>] in
            state.inUse -= bytes
            state.running -= 1
            return admitFitting(&state)
        }
        for continuation in admitted { continuation.resume() }
    }

    /// Estimated bytes of the decodes running now.
    var bytesInUse: Int { state.withLock { $0.inUse } }
    /// The most estimated bytes that ran at once so far.
    var peakBytesInUse: Int { state.withLock { $0.peakInUse } }
    /// Decodes waiting for memory.
    var waitingCount: Int { state.withLock { $0.waiters.count } }

    private func cancel(_ id: UInt64) {
        let (waiter, admitted) = state.withLock { state -> (Waiter?, [CheckedContinuation<Void, any Error>]) in
            guard let index = state.waiters.firstIndex(where: { $0.id == id }) else { return (nil, []) }
            let waiter = state.waiters.remove(at: index)
            // A cancelled head of the line may have held back waiters that fit now.
            return (waiter, admitFitting(&state))
        }
        waiter?.continuation.resume(throwing: CancellationError())
        for continuation in admitted { continuation.resume() }
    }

    /// Takes the most urgent waiters off the line while they fit; their continuations are
    /// resumed by the caller, outside the lock.
    private func admitFitting(_ state: inout State) -> [CheckedContinuation<Void, any Error>] {
        var admitted: [CheckedContinuation<Void, any Error>] = []
        while let index = Self.mostUrgent(state.waiters), Self.fits(state.waiters[index].bytes, in: state, budget: budget) {
            let waiter = state.waiters.remove(at: index)
            Self.take(waiter.bytes, in: &state)
            admitted.append(waiter.continuation)
        }
        return admitted
    }

    private static func fits(_ bytes: Int, in state: State, budget: Int) -> Bool {
        state.running == 0 || state.inUse + bytes <= budget
    }

    private static func take(_ bytes: Int, in state: inout State) {
        state.inUse += bytes
        state.running += 1
        state.peakInUse = max(state.peakInUse, state.inUse)
    }

    /// The waiter with the highest current priority, the earliest among equals.
    private static func mostUrgent(_ waiters: [Waiter]) -> Int? {
        guard !waiters.isEmpty else { return nil }
        var best = 0
        var bestPriority = waiters[0].priority.current
        for index in waiters.indices.dropFirst() where waiters[index].priority.current > bestPriority {
            best = index
            bestPriority = waiters[index].priority.current
        }
        return best
    }
}

/// The state of a pipeline's decode admission (``ImagePipeline/decodeMemory``), by the
/// decoders' estimates.
public struct DecodeMemoryUsage: Hashable, Sendable {
    /// Estimated bytes held by the decodes running now.
    public var bytesInUse: Int
    /// The most estimated bytes held at once since the pipeline was created.
    public var peakBytesInUse: Int
    /// Decodes waiting for memory.
    public var waitingDecodes: Int
    /// The budget, or `nil` when decodes are not admitted by memory.
    public var budget: Int?
}
