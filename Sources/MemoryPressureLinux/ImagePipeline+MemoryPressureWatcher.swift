import PipelineCore

extension ImagePipeline {
    /// Starts a ``MemoryPressureWatcher`` that calls `trimMemory(for:policy:)` whenever
    /// memory pressure rises: the Linux counterpart of a memory warning. Keep the watcher
    /// (releasing it stops it); it does not keep the pipeline alive.
    ///
    /// ```swift
    /// let watcher = try? pipeline.watchMemoryPressure()  // nil where there is no PSI at all
    /// ```
    /// - Parameters:
    ///   - source: default ``PSIMemoryPressureSource``: the cgroup's `memory.pressure`, else
    ///     `/proc/pressure/memory`, with ``MemoryPressureTrigger/warning`` and
    ///     ``MemoryPressureTrigger/critical``.
    ///   - fallbackInterval: how often to read the averages where triggers cannot be set, or
    ///     `nil` to throw instead. Default 2 s.
    ///   - policy: what a trim sheds.
    /// - Throws: ``MemoryPressureUnavailable`` when pressure cannot be watched here.
    public nonisolated func watchMemoryPressure(source: any MemoryPressureSource = PSIMemoryPressureSource(),
                                                fallbackInterval: Duration? = .seconds(2),
                                                policy: MemoryPressurePolicy = MemoryPressurePolicy())
        throws(MemoryPressureUnavailable) -> MemoryPressureWatcher {
        try MemoryPressureWatcher.start(source: source, fallbackInterval: fallbackInterval) { [weak self] level in
            guard let self else { return }
            Task { await self.trimMemory(for: level, policy: policy) }
        }
    }
}
