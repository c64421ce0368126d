#if canImport(Glibc)
import Glibc
#endif

/// Gives memory the C allocator keeps for reuse back to the system.
enum FreedMemory {
    /// glibc's `malloc_trim(0)`: every arena's free memory, not only the main one's top, is
    /// returned (`madvise`). A decode on a pool thread allocates in that thread's arena, and
    /// glibc keeps what it frees there (blocks under its mmap threshold, which rises to 32 MiB
    /// after the first large block is freed): a preview decoded on one thread and the final on
    /// another each keep a copy of the decoder's buffers (a progressive JPEG's coefficients for
    /// the whole picture). A no-op where glibc is not the C library; looked up with `dlsym`
    /// (`<malloc.h>` is not part of Swift's Glibc module). imgpipe fixes the mmap threshold
    /// instead (`MallocPolicy`), which a library cannot do for its host.
    static func returnToSystem() {
        #if canImport(Glibc)
        guard let symbol = trim else { return }
        _ = unsafeBitCast(symbol, to: (@convention(c) (Int) -> Int32).self)(0)
        #endif
    }

    #if canImport(Glibc)
    // Immutable after its first read (a `let` global is initialised once, thread-safely).
    nonisolated(unsafe) private static let trim: UnsafeMutableRawPointer? = dlsym(nil, "malloc_trim")
    #endif
}
