#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>
#if defined(__linux__)
#include <linux/openat2.h>
#endif

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

int cachedisk_open_beneath(int dirfd, const char *path) {
#if defined(__linux__) && defined(SYS_openat2)
    struct open_how how = {0};
    how.flags = O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY;
    how.resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS;
    return (int)syscall(SYS_openat2, dirfd, path, &how, sizeof how);
#else
    (void)dirfd; (void)path;
    errno = ENOSYS;
    return -1;
#endif
}
