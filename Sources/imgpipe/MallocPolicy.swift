#if canImport(Glibc)
import Glibc
#endif

/// How imgpipe asks glibc's allocator for large blocks.
enum MallocPolicy {
    /// A fixed 1 MiB mmap threshold (`mallopt(M_MMAP_THRESHOLD)`), unless
    /// `MALLOC_MMAP_THRESHOLD_` is set in the environment.
    ///
    /// glibc starts at 128 KiB and raises its threshold to the size of every mmap'ed block that
    /// is freed (up to 32 MiB), so after a codec frees its first large buffer the next ones
    /// (libde265's 24 MB planes of a 24 MP HEIC) come from malloc's arenas, which keep freed
    /// memory for reuse instead of giving it back: a 6000×4000 HEIC thumbnail peaked at
    /// 268 MiB, 189 MiB with the threshold fixed (`Benchmarks/where-memory.sh`). Blocks under
    /// 1 MiB, a batch's small thumbnails among them, are reused from the arenas as before. A
    /// no-op where glibc is not the C library. `mallopt` is looked up with `dlsym` (`<malloc.h>`
    /// is not part of Swift's Glibc module).
    static func apply() {
        #if canImport(Glibc)
        guard getenv("MALLOC_MMAP_THRESHOLD_") == nil, let symbol = dlsym(nil, "mallopt") else { return }
        typealias Mallopt = @convention(c) (Int32, Int32) -> Int32
        let mmapThreshold: Int32 = -3  // M_MMAP_THRESHOLD in <malloc.h>
        _ = unsafeBitCast(symbol, to: Mallopt.self)(mmapThreshold, 1 << 20)
        #endif
    }
}
