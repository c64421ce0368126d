import Synchronization

/// Admits decodes by the memory they will take, not by thread count: an ``AdmissionQueue``
/// whose budget is bytes. A decode starts only while the sum of the estimates of running
/// decodes (``ImageDecodingSession/estimatedPeakMemory(_:)``) plus its own fits ``budget``; the
/// others wait in its line, the highest current priority first (FIFO within a priority). A
/// decode larger than the whole budget starts when nothing else runs, so nothing waits
/// forever. Waiting suspends the task, never a thread.
///
/// An animation's frame sequence (``ImageAnimation/frames()``) is admitted the same way, by
/// its codec's canvases (``AnimatedImageDecoding/estimatedAnimationMemory(_:)``) plus the
/// scaled frame (``cost(_:)``), and holds its bytes from its first frame until it ends, fails
/// or is dropped: those canvases live that long.
final class DecodeAdmission: Sendable {
    private typealias Queue = AdmissionQueue<OneGroup, CheckedContinuation<Void, any Error>>

    /// The most estimated bytes that run at once.
    let budget: Int
    private let queue: Mutex<Queue>
    private let ids = Atomic<UInt64>(0)

    init(budget: Int) {
        self.budget = max(1, budget)
        queue = Mutex(Queue(budget: .init(bytes: max(1, budget))))
    }

    /// What a decode of these parts (the session's estimate, the resampled output, a trimmed
    /// copy, an animation's canvases and scaled frame) is admitted at: their sum, at least 1 and
    /// at most the whole budget (a larger decode runs alone either way).
    func cost(_ parts: Int...) -> Int {
        var total = 0
        for part in parts { total = min(total + min(max(part, 0), budget), budget) }
        return max(1, total)
    }

    /// Takes `bytes` now if they fit (or nothing runs); `false` when the caller must wait
    /// with ``acquire(_:priority:)``. Never jumps ahead of a waiter.
    func tryAcquire(_ bytes: Int) -> Bool {
        queue.withLock { $0.tryAdmit(bytes) }
    }

    /// Suspends until `bytes` fit; throws `CancellationError` if the task is cancelled first.
    func acquire(_ bytes: Int, priority: PriorityHandle) async throws {
        let id = ids.add(1, ordering: .relaxed).newValue
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                let admitted = queue.withLock { queue -> Bool in
                    if queue.tryAdmit(bytes) { return true }
                    queue.append(continuation, id: id, group: .all, cost: .one(bytes), priority: priority)
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
        let admitted = queue.withLock { queue in
            queue.release(bytes)
            return queue.admitWaiting()
        }
        for continuation in admitted { continuation.resume() }
    }

    /// Estimated bytes of the decodes running now.
    var bytesInUse: Int { queue.withLock { $0.admitted.bytes } }
    /// The most estimated bytes that ran at once so far.
    var peakBytesInUse: Int { queue.withLock { $0.peakAdmittedBytes } }
    /// Decodes waiting for memory.
    var waitingCount: Int { queue.withLock { $0.count } }

    private func cancel(_ id: UInt64) {
        let (waiter, admitted) = queue.withLock { queue -> (CheckedContinuation<Void, any Error>?, [CheckedContinuation<Void, any Error>]) in
            guard let waiter = queue.remove(id) else { return (nil, []) }
            // A cancelled head of the line may have held back waiters that fit now.
            return (waiter, queue.admitWaiting())
        }
        waiter?.resume(throwing: CancellationError())
        for continuation in admitted { continuation.resume() }
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
