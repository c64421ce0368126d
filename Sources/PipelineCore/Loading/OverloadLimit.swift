/// Which load limit refused a request, for ``ImagePipelineError/overloaded(_:limit:detail:)``:
/// the pipeline or its loader was too busy to take the request (the requests in flight holding
/// their memory budget; the loader's queue full, its deadline passed while it waited, its
/// downloads holding their memory budget), not the origin failing. Asking again later may
/// succeed.
///
/// Open, like ``ImageFormat``: a loader with a limit of its own names it with
/// `OverloadLimit("…")`, no change here needed.
public struct OverloadLimit: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    /// The limit's name, as messages show it.
    public let rawValue: String

    /// A limit named `rawValue`.
    public init(rawValue: String) { self.rawValue = rawValue }

    /// A limit named `name`.
    public init(_ name: String) { self.rawValue = name }

    /// The most memory the pipeline's requests in flight may hold together
    /// (``ImagePipeline/Configuration/requestMemoryBudget``).
    public static let requestsInFlight = OverloadLimit("requests in flight")
    /// The most requests that may wait for a connection at once.
    public static let queuedRequests = OverloadLimit("queued requests")
    /// The most bytes the requests waiting for a connection may hold together.
    public static let queuedBytes = OverloadLimit("queued bytes")
    /// How long a request may wait for a connection: its deadline passed before it was sent.
    public static let queueTime = OverloadLimit("time in the queue")
    /// The most bytes the downloads in flight may hold together.
    public static let downloadMemory = OverloadLimit("download memory")

    /// ``rawValue``.
    public var description: String { rawValue }
}
