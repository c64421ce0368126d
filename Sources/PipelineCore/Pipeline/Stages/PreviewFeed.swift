import Foundation
import Synchronization

/// The previews of one decode or processing work, sent to its waiters through the work's
/// ``InFlightWork/previews`` (``ImagePipeline/PreviewPolicy``).
///
/// A decode work's previews come from its download's body as it arrives (``StreamedBody``):
/// the decoder's ``ProgressiveDecoding/preview(of:)`` closes what has arrived into a picture,
/// decoded at the key's size on the decode pool (``PoolDecoder/preview(of:key:after:priority:)``).
/// A processing work's come from its unprocessed decode's previews, through its processors.
/// One is made at a time: bytes or a preview that arrive meanwhile wait for the next chance,
/// so nothing queues. ``finish()`` (the download ended, or the work did) stops them: none is
/// sent after it, so none reaches a waiter after the final picture, and a preview still being
/// decoded is cancelled.
final class PreviewFeed: Sendable {
    /// Where the previews come from.
    enum Source: Sendable {
        /// The download's bytes, decoded at this key's size.
        case decoding(ImageKey)
        /// The unprocessed decode's previews, through these processors, in this pixel format.
        case processing([ImageProcessor], PixelFormat)
    }

    private struct State {
        var busy = false
        var lastStart: Date?
        /// The steps (completed scans) of the last preview sent.
        var steps = 0
        /// The bytes the last preview sent was decoded from (``ImagePipeline/PreviewPolicy/minimumGrowth``).
        var bytes = 0
        var task: Task<Void, Never>?
        var finished = false
        /// A decode feed's download body, once it follows it.
        var body: StreamedBody?
        /// Stops following the work waited on (its body or its previews).
        var unfollow: (@Sendable () -> Void)?
        /// A processing feed's newest unprocessed preview that arrived while it was busy.
        var pending: ImageResponse?
    }

    let source: Source
    private let policy: ImagePipeline.PreviewPolicy
    private let decoder: PoolDecoder
    /// The work's priority: previews are made only while it is visible.
    private let priority: PriorityHandle
    /// The work's previews, which its waiters follow.
    private let output: Relay<ImageResponse>
    /// The pipeline's ``ImagePipeline/Configuration/eventHandler``.
    private let events: (@Sendable (ImagePipelineEvent) -> Void)?
    private let state = Mutex(State())

    init(_ source: Source, policy: ImagePipeline.PreviewPolicy, decoder: PoolDecoder, priority: PriorityHandle,
         output: Relay<ImageResponse>, events: (@Sendable (ImagePipelineEvent) -> Void)?) {
        self.source = source
        self.policy = policy
        self.decoder = decoder
        self.priority = priority
        self.output = output
        self.events = events
    }

    /// Follows the work this feed's work waits on: a download's body (a decode feed) or a
    /// decode's previews (a processing feed).
    func follow(body: StreamedBody, previews: Relay<ImageResponse>) {
        let unfollow: @Sendable () -> Void, followed: StreamedBody?
        switch source {
        case .decoding:
            body.keepBytes()
            let id = body.listen { [weak self] in self?.bodyGrew() }
            (unfollow, followed) = ({ body.stopListening(id) }, body)
        case .processing:
            let id = previews.subscribe(send: { [weak self] in self?.upstreamPreview($0) })
            (unfollow, followed) = ({ previews.unsubscribe(id) }, nil)
        }
        let finished = state.withLock { state -> Bool in
            guard !state.finished else { return true }
            state.body = followed
            state.unfollow = unfollow
            return false
        }
        if finished { unfollow() }
    }

    /// Stops the previews: nothing is sent from now on, and a preview being made is cancelled.
    func finish() {
        let (task, unfollow) = state.withLock { state in
            state.finished = true
            state.pending = nil
            defer { state.task = nil; state.body = nil; state.unfollow = nil }
            return (state.task, state.unfollow)
        }
        output.finish(keepingLatest: false)
        task?.cancel()
        unfollow?()
    }

    /// Marks the feed busy when a preview may start now (not finished, not busy, visible and,
    /// for a decode of `bytes`, the policy's interval and growth since the last one): the steps
    /// to beat when it did. A processing feed is not throttled (`bytes` `nil`): its decode's
    /// previews already are.
    private func start(bytes: Int?) -> Int? {
        let now = Date()
        return state.withLock { state -> Int? in
            guard !state.finished, !state.busy, priority.current == .visible else { return nil }
            if let bytes {
                if let last = state.lastStart, now.timeIntervalSince(last) < policy.minimumInterval { return nil }
                if state.bytes > 0, Double(bytes) < Double(state.bytes) * policy.minimumGrowth { return nil }
            }
            state.busy = true
            state.lastStart = now
            return state.steps
        }
    }

    /// Runs `make` as the feed's one task, then sends its preview if it shows more than the
    /// last one (`steps`) and the feed is still open, as made from `bytes` bytes; then `next`,
    /// for what arrived meanwhile.
    private func run(bytes: Int = 0, _ make: @escaping @Sendable () async -> (ImageResponse, Int)?,
                     then next: @escaping @Sendable () -> Void) {
        let task = Task { [self] in
            let made = await make()
            let send = state.withLock { state -> ImageResponse? in
                state.busy = false
                state.task = nil
                guard !state.finished, let (preview, steps) = made, steps > state.steps else { return nil }
                state.steps = steps
                state.bytes = bytes
                return preview
            }
            // Outside the lock; a finish in between makes the relay drop it.
            if let send { output.send(send) }
            next()
        }
        let late = state.withLock { state -> Bool in
            guard !state.finished else { return true }
            if state.busy { state.task = task }
            return false
        }
        if late { task.cancel() }
    }

    /// A decode feed's download has more bytes: decode a preview of them if it is time.
    private func bodyGrew() {
        guard case .decoding(let key) = source, let body = state.withLock({ $0.body }) else { return }
        let partial = body.bytes
        guard let steps = start(bytes: partial.count) else { return }
        let decoder = decoder, priority = priority, events = events
        run(bytes: partial.count) {
            await decoder.preview(of: partial, key: key, after: steps, priority: priority, events: events)
        } then: { [weak self] in
            // Bytes that arrived during the decode announced themselves to a busy feed.
            if body.bytes.count > partial.count { self?.bodyGrew() }
        }
    }

    /// A processing feed's decode sent a preview: process it, or keep it for when the one
    /// being processed is done.
    private func upstreamPreview(_ preview: ImageResponse) {
        guard case .processing(let processors, let pixelFormat) = source else { return }
        guard let steps = start(bytes: nil) else {
            state.withLock { if !$0.finished && $0.busy { $0.pending = preview } }
            return
        }
        let decoder = decoder, priority = priority
        run {
            guard let (processed, _) = try? await decoder.process(preview, with: processors, pixelFormat: pixelFormat,
                                                                 priority: priority)
            else { return nil }
            return (processed, steps + 1)
        } then: { [weak self] in
            guard let self, let next = state.withLock({ state -> ImageResponse? in
                defer { state.pending = nil }
                return state.pending
            }) else { return }
            upstreamPreview(next)
        }
    }
}
