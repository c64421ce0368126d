// Test-only: makes glibc serve every large block from mmap and return it on free, so that a
// test's peak-RSS measurement sees each large allocation instead of reused heap.
#ifndef MEMORY_PROBE_H
#define MEMORY_PROBE_H

/// Fixes glibc's mmap threshold at `bytes` (turning off its dynamic growth). Returns 1 on success.
int memory_probe_fix_mmap_threshold(int bytes);

#endif
