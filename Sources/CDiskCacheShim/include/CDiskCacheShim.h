#ifndef CDISKCACHESHIM_H
#define CDISKCACHESHIM_H

/// pread(2) that takes only what the page cache holds: preadv2 with RWF_NOWAIT on Linux. Returns
/// the bytes read, or -1 with errno EAGAIN when the read would wait for the disk (and on systems
/// without the flag, always: the caller then reads on a thread that may wait).
long cachedisk_pread_nowait(int fd, void *buffer, unsigned long count, long long offset);

#endif
