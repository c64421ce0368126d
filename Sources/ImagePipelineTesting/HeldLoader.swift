import Foundation
import PipelineCore
import Synchronization

/// A loader whose replies are held until the test releases them, or answered at once by a
/// reply function. It counts loads per URL, remembers priorities and validators, and sees
/// cancellations — so tests can assert exactly how many loads happened and which were cancelled.
public final class HeldLoader: DataLoading {
    /// A reply the test hands out.
    public typealias Reply = Result<DataLoadResult, any Error>

    private struct Pending {
        let id: Int
        let url: URL
        let continuation: CheckedContinuation<DataLoadResult, any Error>
    }

    private struct State {
        var pending: [Pending] = []
        var loads: [URL: Int] = [:]
        var cancelled: [URL: Int] = [:]
        var order: [URL] = []
        var requests: [DataLoadRequest] = []
        var nextID = 0
    }

    private let state = Mutex(State())
    private let autoReply: (@Sendable (DataLoadRequest) -> Reply?)?
    /// The schemes served. Default `["test"]`.
    public let schemes: Set<String>

    /// Creates a loader. When `autoReply` returns a reply for a request, it is answered at once;
    /// otherwise (or without `autoReply`) the request is held until ``release(_:with:)``.
    public init(schemes: Set<String> = ["test"], autoReply: (@Sendable (DataLoadRequest) -> Reply?)? = nil) {
        self.schemes = schemes
        self.autoReply = autoReply
    }

    /// A loader that answers every URL at once with `FakeImage` data whose size and colour come
    /// from the URL's path (`test:///640x480/7` → 640×480, colour 7). It stands for a network
    /// loader: its answers say `origin: .network` (`LoadOrigin`).
    public static func immediate(schemes: Set<String> = ["test", "http", "https"]) -> HeldLoader {
        HeldLoader(schemes: schemes) { .success(.data(fakeData(for: $0.url), ResponseMetadata(origin: .network))) }
    }

    /// FakeImage bytes described by a URL path `/WxH/N` (default 64×64, colour 0).
    public static func fakeData(for url: URL) -> Data {
        let parts = url.path.split(separator: "/")
        let dims = parts.first?.split(separator: "x").compactMap { Int($0) } ?? []
        let n = parts.count > 1 ? Int(parts[1]) ?? 0 : 0
        let width = dims.count == 2 ? dims[0] : 64, height = dims.count == 2 ? dims[1] : 64
        return FakeImage.data(width: width, height: height, color: FakeImage.color(for: n))
    }

    /// Loads: counts, then answers or holds.
    public func load(_ request: DataLoadRequest) async throws -> DataLoadResult {
        let id = state.withLock { state -> Int in
            state.loads[request.url, default: 0] += 1
            state.order.append(request.url)
            state.requests.append(request)
            state.nextID += 1
            return state.nextID
        }
        if let reply = autoReply?(request) { return try reply.get() }
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                let cancelledAlready = state.withLock { state -> Bool in
                    if Task.isCancelled { return true }
                    state.pending.append(Pending(id: id, url: request.url, continuation: continuation))
                    return false
                }
                if cancelledAlready { cancelled(id: id, url: request.url, continuation: continuation) }
            }
        } onCancel: {
            let pending = state.withLock { state -> Pending? in
                guard let index = state.pending.firstIndex(where: { $0.id == id }) else { return nil }
                return state.pending.remove(at: index)
            }
            if let pending { cancelled(id: id, url: pending.url, continuation: pending.continuation) }
        }
    }

    private func cancelled(id: Int, url: URL, continuation: CheckedContinuation<DataLoadResult, any Error>) {
        state.withLock { $0.cancelled[url, default: 0] += 1 }
        continuation.resume(throwing: CancellationError())
    }

    /// Answers every held load for `url` with `reply`; returns how many were answered.
    @discardableResult
    public func release(_ url: URL, with reply: Reply) -> Int {
        let matching = state.withLock { state -> [Pending] in
            let matching = state.pending.filter { $0.url == url }
            state.pending.removeAll { $0.url == url }
            return matching
        }
        for pending in matching { pending.continuation.resume(with: reply) }
        return matching.count
    }

    /// Answers every held load for `url` with ``fakeData(for:)``.
    @discardableResult
    public func releaseWithFakeData(_ url: URL) -> Int {
        release(url, with: .success(.data(Self.fakeData(for: url), ResponseMetadata(origin: .network))))
    }

    /// Loads started for `url`.
    public func loadCount(_ url: URL) -> Int { state.withLock { $0.loads[url, default: 0] } }
    /// Loads started for all URLs.
    public var totalLoads: Int { state.withLock { $0.loads.values.reduce(0, +) } }
    /// Held loads that were cancelled, for `url`.
    public func cancelCount(_ url: URL) -> Int { state.withLock { $0.cancelled[url, default: 0] } }
    /// URLs held and not yet answered.
    public var heldURLs: [URL] { state.withLock { $0.pending.map(\.url) } }
    /// The URLs in the order their loads started.
    public var loadOrder: [URL] { state.withLock { $0.order } }
    /// Every request received.
    public var requests: [DataLoadRequest] { state.withLock { $0.requests } }

    /// Waits (polling every millisecond, at most `timeout` seconds) until `condition` holds.
    public func waitUntil(timeout: TimeInterval = 120, _ condition: @Sendable (HeldLoader) -> Bool) async -> Bool {
        await eventually(timeout: timeout) { condition(self) }
    }
}

/// A loader's own error type, as a third-party loader would throw: the pipeline must hand it
/// to callers unchanged inside `loadingFailed`, and negatively cache it when it says it is
/// permanent (a status of 404 or 410).
public enum FakeLoadError: PipelineFailure, Equatable, CustomStringConvertible {
    /// The fake server's status.
    case status(Int)
    /// The fake network is down.
    case offline

    /// 404 and 410 are permanent.
    public var isPermanent: Bool {
        if case .status(let code) = self { return code == 404 || code == 410 }
        return false
    }

    /// The status's kind (`ImagePipelineError.Kind(httpStatus:)`: 404 is `.notFound`), as a
    /// custom HTTP loader would say it; `nil` when offline (the pipeline takes it as `.unavailable`).
    public var failureKind: ImagePipelineError.Kind? {
        if case .status(let code) = self { return ImagePipelineError.Kind(httpStatus: code) }
        return nil
    }

    /// A line for messages.
    public var description: String {
        switch self {
        case .status(let code): return "fake status \(code)"
        case .offline: return "fake network offline"
        }
    }
}
