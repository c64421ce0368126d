#ifndef CDISKCACHESHIM_H
#define CDISKCACHESHIM_H

/// pread(2) that takes only what the page cache holds: preadv2 with RWF_NOWAIT on Linux. Returns
/// the bytes read, or -1 with errno EAGAIN when the read would wait for the disk (and on systems
/// without the flag, always: the caller then reads on a thread that may wait).
long cachedisk_pread_nowait(int fd, void *buffer, unsigned long count, long long offset);

/// Opens `path` (relative, below the directory `dirfd`) for reading without following a
/// symlink in any of its components and without leaving `dirfd` (openat2 with RESOLVE_BENEATH
/// and RESOLVE_NO_SYMLINKS, Linux 5.6+; O_NOFOLLOW alone guards only the last component). Never
/// blocks on a FIFO (O_NONBLOCK). Returns the descriptor, or -1 with errno (ENOSYS where
/// openat2 does not exist: the caller then checks each component itself).
int cachedisk_open_beneath(int dirfd, const char *path);

#endif
