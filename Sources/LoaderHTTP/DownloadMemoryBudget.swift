import PipelineCore
import Synchronization

/// The body bytes all transfers of one engine hold together, against
/// ``HTTPDataLoader/Configuration/maxDownloadMemory``.
///
/// A transfer claims room before its body grows into it (``CurlTransfer``: doubling as its
/// bytes arrive, up to its declared length) and gives it all back when it ends. A claim that does not fit is
/// refused at once, never waited for: a refused transfer fails
/// (`ImagePipelineError.overloaded`, `Limit.downloadMemory`) and frees
/// what it held, so no set of transfers can wait on one another. A claim by the transfer that
/// holds every byte in flight always fits (its own ``HTTPDataLoader/Configuration/maxBodyBytes``
/// still bounds it), so a large picture alone loads whatever the budget, as a decode larger
/// than its budget runs alone in the core's decode admission: the arithmetic is the core's
/// (`AdmissionQueue.Budget`).
///
/// Claims and returns happen on the engine thread only (in curl's callbacks and when a
/// transfer ends), so a load and a store need no compare-and-swap; the atomics are for readers
/// on other threads (tests, diagnostics).
final class DownloadMemoryBudget: Sendable {
    /// The most bytes held together, but for a transfer alone.
    let limit: Int64
    /// The same bound as the core's admission budgets, with their arithmetic.
    private let budget: AdmissionQueue<OneGroup, Never>.Budget
    private let held = Atomic<Int64>(0)
    private let peak = Atomic<Int64>(0)

    init(limit: Int64) {
        self.limit = max(1, limit)
        budget = .init(bytes: Int(clamping: max(1, limit)))
    }

    /// Bytes held by the transfers in flight now.
    var inUse: Int64 { held.load(ordering: .relaxed) }
    /// The most bytes held at once so far.
    var peakInUse: Int64 { peak.load(ordering: .relaxed) }

    /// Adds `bytes` to a transfer that holds `holding` now, if the total stays within
    /// ``limit`` or that transfer holds every byte in flight. Engine thread only.
    func claim(_ bytes: Int64, holding: Int64) -> Bool {
        let inUse = held.load(ordering: .relaxed)
        guard budget.admits(Int(clamping: bytes), inUse: Int(clamping: inUse), alone: inUse == holding) else { return false }
        held.store(inUse + bytes, ordering: .relaxed)
        if inUse + bytes > peak.load(ordering: .relaxed) { peak.store(inUse + bytes, ordering: .relaxed) }
        return true
    }

    /// Gives back `bytes` a transfer claimed. Engine thread only.
    func release(_ bytes: Int64) {
        held.store(held.load(ordering: .relaxed) - bytes, ordering: .relaxed)
    }
}
