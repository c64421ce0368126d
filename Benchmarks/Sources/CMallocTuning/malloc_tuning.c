#include "malloc_tuning.h"

#include <malloc.h>

// mallopt is not visible to Swift through Glibc (malloc.h is not in its module map).
int malloc_tuning_fix_mmap_threshold(int bytes) { return mallopt(M_MMAP_THRESHOLD, bytes); }
