#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// What ``ImagePipeline/trimMemory(for:policy:)`` sheds at each ``MemoryPressureLevel``.
public struct MemoryPressurePolicy: Sendable, Hashable {
    /// The share of the memory cache's current cost kept at a warning. Default 0.5: each
    /// warning halves what is held (a stream of warnings empties it step by step).
    public var warningKeeps: Double
    /// The share kept at a critical level. Default 0: the memory cache is emptied.
    public var criticalKeeps: Double
    /// Whether prefetches are cancelled (at either level). Default `true`: work a visible caller
    /// also waits for goes on.
    public var cancelsPrefetches: Bool

    /// Creates a policy.
    public init(warningKeeps: Double = 0.5, criticalKeeps: Double = 0, cancelsPrefetches: Bool = true) {
        self.warningKeeps = warningKeeps
        self.criticalKeeps = criticalKeeps
        self.cancelsPrefetches = cancelsPrefetches
    }
}

extension ImagePipeline {
    /// Sheds memory for `level`: trims the memory cache to `policy`'s share of what it holds
    /// and cancels the prefetches, then emits ``ImagePipelineEvent/memoryTrimmed(_:freedBytes:cancelledPrefetches:)``.
    /// Called by `MemoryPressureLinux`'s watcher (`watchMemoryPressure()`) on Linux; a host
    /// with its own signal (a memory warning, a container orchestrator's hook) calls it too.
    /// - Returns: the bytes freed from the memory cache.
    @discardableResult
    public func trimMemory(for level: MemoryPressureLevel, policy: MemoryPressurePolicy = MemoryPressurePolicy()) -> Int {
        let keeps = min(1, max(0, level == .critical ? policy.criticalKeeps : policy.warningKeeps))
        let target = Double(memoryCache.totalCost) * keeps
        let freed = memoryCache.trim(toCost: target >= Double(Int.max) ? Int.max : Int(target))
        let cancelled = policy.cancelsPrefetches ? cancelAllPrefetches() : 0
        emit(.memoryTrimmed(level, freedBytes: freed, cancelledPrefetches: cancelled))
        return freed
    }
}
