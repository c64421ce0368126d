#include "memory_probe.h"

#include <malloc.h>

int memory_probe_fix_mmap_threshold(int bytes) { return mallopt(M_MMAP_THRESHOLD, bytes); }
