// The loader every generated trampoline file (lazy_*.c, scripts/gen-lazy-symbols) shares: one
// library = its shared objects, the names of the functions we call and a table of their
// addresses, filled once by dlopen + dlsym under a lock.
#ifndef LAZY_RUNTIME_H
#define LAZY_RUNTIME_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>

#include "CLazyLibraries.h"

/// Hidden: the executable never exports a trampoline, so a library loaded later never binds
/// its own calls (heif_* inside libheif) to ours.
#define LAZY_HIDDEN __attribute__((visibility("hidden")))

typedef void (*lazy_function)(void);

struct lazy_library {
    const char *library;            // "libheif"
    const char *package;            // "libheif1"
    const char *environment;        // names a replacement for the first soname (tests)
    const char *const *sonames;     // opened in order; dlsym searches them (and what they load) in order
    size_t soname_count;
    const char *const *names;       // the functions we call
    lazy_function *slots;           // their addresses, in the same order
    size_t count;
    const char *(*after_load)(void);  // run once under the lock after dlsym; an error text or NULL
    pthread_mutex_t lock;
    atomic_int state;               // 0 not tried, 1 loaded, 2 failed (final)
    void *handles[4];
    imgpipe_lazy_failure failure;
    char reason[512];
};

#define LAZY_COUNT(array) (sizeof(array) / sizeof((array)[0]))
#define LAZY_LIBRARY(library, package, environment, sonames, names, slots, after_load) \
    {library, package, environment, sonames, LAZY_COUNT(sonames), names, slots, LAZY_COUNT(names), after_load, \
     PTHREAD_MUTEX_INITIALIZER, 0, {0}, {0}, {0}}

/// Loads `library` the first time (thread-safe; every later call is one atomic load): NULL when
/// it is loaded, else the failure, the same on every call.
LAZY_HIDDEN const imgpipe_lazy_failure *lazy_library_load(struct lazy_library *library);

/// A trampoline's guard: loads the library if nobody has, and aborts with the failure's text if
/// it cannot be loaded. Swift callers load first (and turn a failure into a typed error), so this
/// only stops a call that skipped that.
LAZY_HIDDEN void lazy_library_fail(struct lazy_library *library);
static inline void lazy_library_require(struct lazy_library *library) {
    if (__builtin_expect(atomic_load_explicit(&library->state, memory_order_acquire) != 1, 0)) {
        lazy_library_fail(library);
    }
}

/// dlsym over the library's handles (NULL unless loaded).
LAZY_HIDDEN void *lazy_library_symbol(struct lazy_library *library, const char *name);

#endif
