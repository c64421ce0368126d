import Synchronization

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// A handle on one running image request (``ImagePipeline/imageTask(for:)``): its download
/// progress, a priority that can change while it runs, cancellation, and the response.
///
/// The work starts when the handle is made. Several handles for the same picture share one
/// download and one decode like any callers of ``ImagePipeline/image(for:)``; each sees the
/// download's progress (one that joins late sees the latest value first), and cancelling one
/// never cancels work another still needs.
public final class ImageTask: Sendable, Hashable, CustomStringConvertible {
    /// Bytes of the download received so far, and the total when the source announced it.
    public struct Progress: Hashable, Sendable, CustomStringConvertible {
        /// Bytes received.
        public let completed: Int64
        /// Bytes expected (`Content-Length`, a file's size), or `nil` when unknown.
        public let total: Int64?

        /// Creates a progress value.
        public init(completed: Int64, total: Int64?) {
            self.completed = completed
            self.total = total
        }

        /// `completed / total` between 0 and 1, or `nil` when the total is unknown (or 0).
        public var fraction: Double? {
            guard let total, total > 0 else { return nil }
            return min(1, Double(completed) / Double(total))
        }

        /// `"1200/4000 bytes"`, or `"1200 bytes"` with no total.
        public var description: String {
            total.map { "\(completed)/\($0) bytes" } ?? "\(completed) bytes"
        }
    }

    /// The request this task answers.
    public let request: ImageRequest
    let relay = Relay<Progress>()
    /// The previews of the work the task waits on (``previews``).
    let previewRelay = Relay<ImageResponse>()
    private struct State {
        var priority: ImagePriority
        /// The caller's place among the waiters of the decode it joined, once it joined one.
        var waiter: WaiterToken?
        var task: Task<ImageResponse, any Error>?
    }
    private let state: Mutex<State>
    private let pipeline: ImagePipeline

    init(request: ImageRequest, pipeline: ImagePipeline) {
        self.request = request
        self.pipeline = pipeline
        self.state = Mutex(State(priority: request.priority))
        let task = Task(priority: request.priority == .visible ? nil : .low) { [self] in
            defer {
                previewRelay.finish(keepingLatest: false)
                relay.finish()
            }
            return try await pipeline.image(for: request, task: self)
        }
        state.withLock { $0.task = task }
    }

    /// The priority the task's work runs at (as a waiter: shared work runs at the highest
    /// priority of its current waiters). Setting it moves the work in flight — the loader's
    /// queue and the decode pool — at once, without waiting; ``setPriority(_:)`` waits until it
    /// has. Starts at the request's priority.
    public var priority: ImagePriority {
        get { state.withLock { $0.priority } }
        set {
            let changed = state.withLock { state -> Bool in
                defer { state.priority = newValue }
                return state.priority != newValue
            }
            guard changed else { return }
            pipeline.applyPriority(of: self)
        }
    }

    /// Sets ``priority`` and returns once the work in flight (if any) has it.
    public func setPriority(_ priority: ImagePriority) async {
        state.withLock { $0.priority = priority }
        pipeline.applyPriority(of: self)
    }

    /// The download's progress: the latest value first (if any), then each new one, finishing
    /// when the task does. A consumer that falls behind gets the newest value only (nothing
    /// queues up). Nothing comes for a memory or disk hit; a file or HTTP load reports as its
    /// bytes arrive, and the last value then equals the total (values rise, except that a loader's
    /// retry, such as `HTTPDataLoader`'s, starts again from 0). Each access is a sequence of its
    /// own, so several consumers may iterate at once.
    public var progress: AsyncStream<Progress> {
        AsyncStream(bufferingPolicy: .bufferingNewest(1)) { continuation in
            let id = relay.subscribe(send: { continuation.yield($0) }, finish: { continuation.finish() })
            continuation.onTermination = { [relay] _ in relay.unsubscribe(id) }
        }
    }

    /// Previews of the picture while it downloads (``ImagePipeline/Configuration/previewPolicy``):
    /// coarser decodes of what has arrived, at the requested size and through the request's
    /// processors (``ImageResponse/isPreview``), each showing more than the one before. A
    /// consumer that falls behind gets the newest only, one that starts late the latest first.
    /// The stream finishes when the task does, so every preview comes before ``response``:
    /// `for await preview in task.previews { show(preview) }`, then `try await task.response`.
    /// Nothing comes without a preview policy, for a memory or disk hit, for a picture that is
    /// not progressive (a baseline JPEG, PNG, WebP), or while the work runs below visible
    /// priority. Each access is a sequence of its own.
    public var previews: AsyncStream<ImageResponse> {
        AsyncStream(bufferingPolicy: .bufferingNewest(1)) { continuation in
            let id = previewRelay.subscribe(send: { continuation.yield($0) }, finish: { continuation.finish() })
            continuation.onTermination = { [previewRelay] _ in previewRelay.unsubscribe(id) }
        }
    }

    /// The latest progress value, or `nil` before the first.
    public var currentProgress: Progress? { relay.latest }

    /// Cancels the task: its caller gets `CancellationError` at once; shared work goes on while
    /// another caller still waits for it.
    public func cancel() {
        state.withLock { $0.task }?.cancel()
    }

    /// Whether ``cancel()`` was called.
    public var isCancelled: Bool { state.withLock { $0.task }?.isCancelled ?? false }

    /// The response, once the task has it. Cancelling the task that awaits this cancels the
    /// image task too (as in Nuke).
    /// - Throws: what ``ImagePipeline/image(for:)`` throws.
    public var response: ImageResponse {
        get async throws {
            guard let task = state.withLock({ $0.task }) else { throw CancellationError() }
            return try await withTaskCancellationHandler {
                try await task.value
            } onCancel: {
                task.cancel()
            }
        }
    }

    /// `"ImageTask(<request>, visible, 1200/4000 bytes)"`.
    public var description: String {
        "ImageTask(\(request), \(priority)\(currentProgress.map { ", \($0)" } ?? ""))"
    }

    /// Identity.
    public static func == (lhs: ImageTask, rhs: ImageTask) -> Bool { lhs === rhs }
    /// Hashes the identity.
    public func hash(into hasher: inout Hasher) { hasher.combine(ObjectIdentifier(self)) }

    /// Records where the caller waits (the pipeline, when it joins an image work); returns the
    /// priority to wait at.
    func joined(as token: WaiterToken) -> ImagePriority {
        state.withLock {
            $0.waiter = token
            return $0.priority
        }
    }

    /// Where the work's stream goes: progress to ``progress``, partial pictures to ``previews``.
    @Sendable func follow(_ event: StageEvent<ImageResponse>) {
        switch event {
        case .progress(let progress): relay.send(progress)
        case .partial(let preview): previewRelay.send(preview)
        }
    }

    /// Where the caller waits, and at which priority now.
    var placement: (waiter: WaiterToken?, priority: ImagePriority) {
        state.withLock { ($0.waiter, $0.priority) }
    }
}

extension ImagePipeline {
    /// Starts loading `request` and returns a handle on it: progress, priority, cancellation
    /// and the response (`try await task.response`). The same work as ``image(for:)``.
    public nonisolated func imageTask(for request: ImageRequest) -> ImageTask {
        ImageTask(request: request, pipeline: self)
    }

    /// Moves `task`'s waiter (and so the work it waits on, and that work's upstream) to the
    /// task's current priority.
    nonisolated func applyPriority(of task: ImageTask) {
        let (token, priority) = task.placement
        guard let token else { return }
        setWaiterPriority(token, to: priority)
    }
}
