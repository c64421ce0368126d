#include "lazy_runtime.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

/// Records why loading failed and closes what was opened (nothing of it is in use yet).
static void fail(struct lazy_library *library, const char *soname, const char *format, const char *detail,
                 const char *more) {
    snprintf(library->reason, sizeof library->reason, format, detail ? detail : "no reason given", more);
    library->failure = (imgpipe_lazy_failure){library->library, soname, library->package, library->reason};
    for (size_t index = 0; index < LAZY_COUNT(library->handles); index++) {
        if (library->handles[index]) dlclose(library->handles[index]);
        library->handles[index] = NULL;
    }
    atomic_store_explicit(&library->state, 2, memory_order_release);
}

static void load_locked(struct lazy_library *library) {
    for (size_t index = 0; index < library->soname_count && index < LAZY_COUNT(library->handles); index++) {
        const char *soname = library->sonames[index];
        const char *replacement = index == 0 && library->environment ? getenv(library->environment) : NULL;
        if (replacement && *replacement) soname = replacement;
        library->handles[index] = dlopen(soname, RTLD_NOW | RTLD_LOCAL);
        if (!library->handles[index]) {
            fail(library, soname, "%s%s", dlerror(), "");
            return;
        }
    }
    for (size_t index = 0; index < library->count; index++) {
        void *address = lazy_library_symbol(library, library->names[index]);
        if (!address) {
            fail(library, library->sonames[0], "%s has no %s: not the version this was built against",
                 library->sonames[0], library->names[index]);
            return;
        }
        library->slots[index] = (lazy_function)address;
    }
    // The hook calls through the table (not the trampolines, which wait for the state): no other
    // thread calls the library before it has run.
    const char *problem = library->after_load ? library->after_load() : NULL;
    if (problem) {
        fail(library, library->sonames[0], "%s%s", problem, "");
        return;
    }
    atomic_store_explicit(&library->state, 1, memory_order_release);
}

const imgpipe_lazy_failure *lazy_library_load(struct lazy_library *library) {
    int state = atomic_load_explicit(&library->state, memory_order_acquire);
    if (state == 0) {
        pthread_mutex_lock(&library->lock);
        if (atomic_load_explicit(&library->state, memory_order_acquire) == 0) load_locked(library);
        pthread_mutex_unlock(&library->lock);
        state = atomic_load_explicit(&library->state, memory_order_acquire);
    }
    return state == 1 ? NULL : &library->failure;
}

void lazy_library_fail(struct lazy_library *library) {
    const imgpipe_lazy_failure *failure = lazy_library_load(library);
    if (!failure) return;
    fprintf(stderr, "%s (%s) could not be loaded: %s; install the package %s\n", failure->library, failure->soname,
            failure->reason, failure->package);
    abort();
}

void *lazy_library_symbol(struct lazy_library *library, const char *name) {
    void *found = NULL;
    for (size_t index = 0; index < LAZY_COUNT(library->handles) && !found; index++) {
        if (library->handles[index]) found = dlsym(library->handles[index], name);
    }
    return found;
}
