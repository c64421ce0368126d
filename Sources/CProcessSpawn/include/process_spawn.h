#ifndef PROCESS_SPAWN_H
#define PROCESS_SPAWN_H

#include <sys/types.h>

/// Starts `path` with `argv` and `envp` (both NULL-terminated) by posix_spawn, in `directory`
/// when it is not NULL, with descriptors 0, 1 and 2 taken from `in`, `out` and `err` and every
/// other descriptor closed in the child, its signal mask empty and the usual signals at their
/// default actions (a test thread may block SIGTERM, and the test process ignores SIGPIPE).
/// Returns 0 with the child's pid in `*pid`, or an errno value.
int process_spawn(const char *path, char *const argv[], char *const envp[], const char *directory, int in, int out,
                  int err, pid_t *pid);

/// A pipe whose two ends are close-on-exec (`pipe2(O_CLOEXEC)`): 0, or -1 with errno set.
int process_pipe(int ends[2]);

/// In a child: asks for SIGKILL when the parent dies (Linux `PR_SET_PDEATHSIG`), then returns
/// 0, or -1 when the parent is already gone (or where the platform has no such request: 0).
int process_die_with_parent(void);

#endif
