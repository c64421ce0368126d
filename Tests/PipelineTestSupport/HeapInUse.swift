import CMemoryProbe

/// The bytes malloc has handed out and not had back (glibc's `mallinfo2`), for tests that
/// count what live objects hold: unlike resident memory, it does not hide allocations that
/// reuse pages an earlier test freed.
public func heapBytesInUse() -> Int { Int(memory_probe_heap_in_use()) }
