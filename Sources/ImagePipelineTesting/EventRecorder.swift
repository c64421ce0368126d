import Foundation
import PipelineCore
import Synchronization

/// Collects pipeline events for assertions.
public final class EventRecorder: Sendable {
    private let events = Mutex<[ImagePipelineEvent]>([])

    /// An empty recorder.
    public init() {}

    /// The handler to put in a configuration.
    public var handler: @Sendable (ImagePipelineEvent) -> Void {
        { event in self.events.withLock { $0.append(event) } }
    }

    /// Every event so far.
    public var all: [ImagePipelineEvent] { events.withLock { $0 } }

    /// How many events match `predicate`.
    public func count(where predicate: (ImagePipelineEvent) -> Bool) -> Int {
        events.withLock { $0.filter(predicate).count }
    }
}
