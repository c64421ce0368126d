#define _GNU_SOURCE
#include <errno.h>
#include <sys/uio.h>

#include "CDiskCacheShim.h"

long cachedisk_pread_nowait(int fd, void *buffer, unsigned long count, long long offset) {
#if defined(__linux__) && defined(RWF_NOWAIT)
    struct iovec vector = {buffer, count};
    return preadv2(fd, &vector, 1, offset, RWF_NOWAIT);
#else
    (void)fd; (void)buffer; (void)count; (void)offset;
    errno = EAGAIN;
    return -1;
#endif
}
