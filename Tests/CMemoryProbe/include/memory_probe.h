// Test-only: makes glibc serve every large block from mmap and return it on free, so that a
// test's peak-RSS measurement sees each large allocation instead of reused heap.
#ifndef MEMORY_PROBE_H
#define MEMORY_PROBE_H

/// Fixes glibc's mmap threshold at `bytes` (turning off its dynamic growth). Returns 1 on success.
int memory_probe_fix_mmap_threshold(int bytes);

/// The bytes malloc has handed out and not had back, in every arena and in mmap'd blocks
/// (glibc's `mallinfo2`: `uordblks + hblkhd`): what a count of live allocations measures,
/// whatever the heap reuses or keeps.
long long memory_probe_heap_in_use(void);

#endif
