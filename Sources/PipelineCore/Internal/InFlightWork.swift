import Foundation

/// One piece of shared work (a download or a decode) and the callers waiting for it.
///
/// Only ever touched on the ``ImagePipeline`` actor, which owns the tables that hold it.
final class InFlightWork<Value: Sendable> {
    let id: UInt64
    let priority: PriorityHandle
    /// `false` for work started by a `reloadIgnoringCaches` request: it never reads caches.
    let readsCaches: Bool
    var waiters: [UInt64: CheckedContinuation<Value, any Error>] = [:]
    var task: Task<Void, Never>?
    /// The priority of the work this work waits on (a decode's download), raised together.
    var upstream: PriorityHandle?

    init(id: UInt64, priority: ImagePriority, readsCaches: Bool) {
        self.id = id
        self.priority = PriorityHandle(priority)
        self.readsCaches = readsCaches
    }

    func raise(to priority: ImagePriority) {
        self.priority.raise(to: priority)
        upstream?.raise(to: priority)
    }
}

/// Names one waiter of one piece of work, so a cancellation handler (which runs off the actor)
/// can find it again with only `Sendable` values.
struct WaiterToken: Sendable {
    enum Table: Sendable {
        case decode(ImageKey)
        case download(URL)
    }
    let table: Table
    let workID: UInt64
    let waiterID: UInt64
}

/// Compressed bytes and where they came from: the download table's value.
struct LoadedData: Sendable {
    let data: Data
    let source: ImageSource
}
