#ifndef MALLOC_TUNING_H
#define MALLOC_TUNING_H

/// Fixes glibc's mmap threshold at `bytes` (turning off its dynamic growth), so that every
/// larger block is mapped on allocation and unmapped on free and a peak-RSS measurement sees
/// each one. Returns 1 on success.
int malloc_tuning_fix_mmap_threshold(int bytes);

#endif
