import Foundation
import Synchronization

/// The processors of the processing works waiting on one decode, run by the decode in its own
/// decode-pool job straight after decoding: a processed picture follows its own decode at once
/// instead of queueing behind every decode not yet started (thirty round avatars asked for at
/// once would otherwise all wait for the thirtieth decode). Each decode work has one
/// (``InFlightWork/followUps``), shared with its job: a processing work adds its processors on
/// the actor while the decode waits in the queue, and the job takes those present once it has
/// decoded.
///
/// The job runs only the follow-ups at the decode's own priority: a prefetch's processors do
/// not delay the picture a visible caller of the same decode waits for; they run in a job of
/// their own, as do those added after the job took its list, or whose decode failed. A waiter of
/// the decode gets its picture once the follow-ups it runs are done: they are the small steps
/// after a decode (a circle, a blur), a fraction of its cost.
final class ProcessingFollowUps: Sendable {
    private struct FollowUp {
        let processors: [ImageProcessor]
        let pixelFormat: PixelFormat
        /// The processing work's priority.
        let priority: PriorityHandle
        var outcome: Result<ProcessedPixels, any Error>?
    }

    private let entries = Mutex<[ImageKey: FollowUp]>([:])

    /// Asks for `key`'s processors (and pixel format) to run after the decode, unless they are
    /// asked for already.
    func add(_ key: ImageKey, priority: PriorityHandle) {
        entries.withLock { entries in
            if entries[key] == nil {
                entries[key] = FollowUp(processors: key.processors, pixelFormat: key.processing.pixelFormat, priority: priority)
            }
        }
    }

    /// Takes back `key`'s request: its processing work left (cancelled, or the decode failed).
    func remove(_ key: ImageKey) {
        _ = entries.withLock { $0.removeValue(forKey: key) }
    }

    /// What the decode's job made for `key`: the processed pixels or the processors' error;
    /// `nil` when the job did not run them.
    func outcome(for key: ImageKey) -> Result<ProcessedPixels, any Error>? {
        entries.withLock { $0[key]?.outcome }
    }

    /// Runs, in the decode's job, the processors of every follow-up not yet run whose work is
    /// at `priority` (the decode's, the highest of its waiters) on `bitmap`, and keeps their
    /// outcomes. The processors run outside the lock.
    func run(on bitmap: Bitmap, priority: ImagePriority, clock: @Sendable () -> Date) {
        let due = entries.withLock { entries in
            entries.filter { $0.value.outcome == nil && $0.value.priority.current >= priority }
        }
        guard !due.isEmpty else { return }
        let outcomes = due.mapValues { followUp in
            Result { try PoolDecoder.process(bitmap, with: followUp.processors, pixelFormat: followUp.pixelFormat, clock: clock) }
        }
        entries.withLock { entries in
            for (key, outcome) in outcomes { entries[key]?.outcome = outcome }
        }
    }
}

/// Pixels a list of processors made, and the seconds it took.
struct ProcessedPixels: Sendable {
    let bitmap: Bitmap
    let seconds: TimeInterval
}
