import Synchronization

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// How one work makes its previews from the partial values it receives (``ImagePipeline/PreviewPolicy``):
/// the decode stage from the download's arriving body, the image stage from its decode's
/// previews. One is made at a time: input that arrives meanwhile is kept (the newest only) and
/// made next, so nothing queues. Only while the work runs at visible priority; each preview
/// sent shows more than the one before (more refinement steps). After ``finish()`` (the bytes
/// are all here, or the work ended) nothing is sent and a preview being made is cancelled, so
/// none reaches a subscriber after the final picture.
final class PreviewThrottle: Sendable {
    /// Makes a preview that shows more than `steps` refinement steps, or `nil`.
    typealias Make = @Sendable (_ steps: Int) async -> (preview: ImageResponse, steps: Int)?

    private struct State {
        var busy = false
        var finished = false
        var lastStart: Date?
        /// The steps of the last preview sent.
        var steps = 0
        /// The input size of the last preview sent (``ImagePipeline/PreviewPolicy/minimumGrowth``).
        var bytes = 0
        /// Input that arrived while a preview was being made.
        var pending: (bytes: Int?, make: Make)?
        var task: Task<Void, Never>?
    }

    private let state = Mutex(State())
    private let policy: ImagePipeline.PreviewPolicy
    private let priority: PriorityHandle
    private let send: @Sendable (ImageResponse) -> Void

    /// A throttle for a work at `priority` that sends its previews to `send`.
    init(policy: ImagePipeline.PreviewPolicy, priority: PriorityHandle, send: @escaping @Sendable (ImageResponse) -> Void) {
        self.policy = policy
        self.priority = priority
        self.send = send
    }

    /// New input: `bytes` of a body (throttled by the policy's interval and growth), or `nil`
    /// for a preview from below (already throttled there). `make` runs now if it may.
    func offer(bytes: Int?, _ make: @escaping Make) {
        let now = Date()
        let steps = state.withLock { state -> Int? in
            guard !state.finished, priority.current == .visible else { return nil }
            guard !state.busy else {
                state.pending = (bytes, make)
                return nil
            }
            if let bytes {
                if let last = state.lastStart, now.timeIntervalSince(last) < policy.minimumInterval { return nil }
                if state.bytes > 0, Double(bytes) < Double(state.bytes) * policy.minimumGrowth { return nil }
            }
            state.busy = true
            state.lastStart = now
            return state.steps
        }
        guard let steps else { return }
        let task = Task { [self] in
            let made = await make(steps)
            let (preview, next) = state.withLock { state -> (ImageResponse?, (bytes: Int?, make: Make)?) in
                state.busy = false
                state.task = nil
                defer { state.pending = nil }
                guard !state.finished else { return (nil, nil) }
                guard let made, made.steps > state.steps else { return (nil, state.pending) }
                state.steps = made.steps
                state.bytes = bytes ?? 0
                return (made.preview, state.pending)
            }
            // Outside the lock; a finish in between leaves the subscribers gone.
            if let preview { send(preview) }
            if let next { offer(bytes: next.bytes, next.make) }
        }
        let late = state.withLock { state -> Bool in
            guard !state.finished else { return true }
            if state.busy { state.task = task }
            return false
        }
        if late { task.cancel() }
    }

    /// Stops the previews: nothing is sent from now on, and a preview being made is cancelled.
    func finish() {
        let task = state.withLock { state in
            state.finished = true
            state.pending = nil
            defer { state.task = nil }
            return state.task
        }
        task?.cancel()
    }
}
