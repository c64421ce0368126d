// The process start the tests and the SVG worker (CodecSVG) share: Foundation's Process.run on
// Linux reads 256 bytes of every /proc/self/fd entry it lists, past the end of glibc's buffer when
// the last entry sits at the edge of a mapping (swift-corelibs-foundation #5472), and a test
// process with a thousand open descriptors crashed there. posix_spawn with closefrom needs no
// listing (Apple platforms have no addclosefrom_np: POSIX_SPAWN_CLOEXEC_DEFAULT does the same).
#define _GNU_SOURCE
#include "process_spawn.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <unistd.h>

#ifdef __linux__
#include <sys/prctl.h>
#endif

int process_spawn(const char *path, char *const argv[], char *const envp[], const char *directory, int in, int out,
                  int err, pid_t *pid) {
    posix_spawn_file_actions_t actions;
    posix_spawnattr_t attributes;
    int status = posix_spawn_file_actions_init(&actions);
    if (status != 0) return status;
    status = posix_spawnattr_init(&attributes);
    if (status != 0) {
        posix_spawn_file_actions_destroy(&actions);
        return status;
    }
    sigset_t none, defaults;
    sigemptyset(&none);
    sigemptyset(&defaults);
    const int reset[] = {SIGPIPE, SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGCHLD, SIGALRM, SIGUSR1, SIGUSR2};
    for (unsigned i = 0; i < sizeof reset / sizeof reset[0]; i++) sigaddset(&defaults, reset[i]);
    if (status == 0) status = posix_spawnattr_setsigmask(&attributes, &none);
    if (status == 0) status = posix_spawnattr_setsigdefault(&attributes, &defaults);
    short flags = POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF;
#ifdef __APPLE__
    flags |= POSIX_SPAWN_CLOEXEC_DEFAULT;
#endif
    if (status == 0) status = posix_spawnattr_setflags(&attributes, flags);
    if (status == 0) status = posix_spawn_file_actions_adddup2(&actions, in, 0);
    if (status == 0) status = posix_spawn_file_actions_adddup2(&actions, out, 1);
    if (status == 0) status = posix_spawn_file_actions_adddup2(&actions, err, 2);
    if (status == 0 && directory != NULL) status = posix_spawn_file_actions_addchdir_np(&actions, directory);
#ifndef __APPLE__
    if (status == 0) status = posix_spawn_file_actions_addclosefrom_np(&actions, 3);
#endif
    if (status == 0) status = posix_spawn(pid, path, &actions, &attributes, argv, envp);
    posix_spawnattr_destroy(&attributes);
    posix_spawn_file_actions_destroy(&actions);
    return status;
}

int process_pipe(int ends[2]) {
#ifdef __linux__
    return pipe2(ends, O_CLOEXEC);
#else
    if (pipe(ends) != 0) return -1;
    fcntl(ends[0], F_SETFD, FD_CLOEXEC);
    fcntl(ends[1], F_SETFD, FD_CLOEXEC);
    return 0;
#endif
}

int process_die_with_parent(void) {
#ifdef __linux__
    pid_t parent = getppid();
    if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0) return -1;
    // The parent may have died before the request: then this process was reparented.
    return getppid() == parent && parent != 1 ? 0 : -1;
#else
    return 0;
#endif
}
