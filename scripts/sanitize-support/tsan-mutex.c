// Teaches ThreadSanitizer the contended paths of Synchronization.Mutex on Linux. Preloaded by
// scripts/sanitize into the TSan test run (LD_PRELOAD); not part of the Swift package.
//
// Why: Mutex's lock and unlock fast paths are inlined into the caller (one compare-exchange,
// instrumented like any atomic), but under contention the lock is handed over by the kernel:
// _lockSlow spins in the uninstrumented libswiftSynchronization.so and then blocks in
// futex(FUTEX_LOCK_PI), and _unlockSlow calls futex(FUTEX_UNLOCK_PI), which gives the lock
// straight to a waiter. TSan sees no release/acquire pair for that handover, so it reports a
// race on the protected value (a "Swift access race" inside withLock) whenever two threads
// contend. The frames of such a report name only the caller's closure (withLock is inlined), so
// a `race:` suppression cannot single out Mutex without also hiding real races in the callers.
//
// What: these three functions take the place of the stdlib's (same mangled names; a preloaded
// library wins symbol lookup), call the real ones, and add the missing edges on the address of
// the Mutex's lock word: __tsan_acquire after a slow lock or successful slow try-lock,
// __tsan_release before a slow unlock. The fast paths already synchronise on that same address.
// Outside a TSan process the __tsan_* functions are absent (weak, null) and this does nothing.
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

extern void __tsan_acquire(void *addr) __attribute__((weak));
extern void __tsan_release(void *addr) __attribute__((weak));

// Swift methods use the swiftcall convention with `self` (here: the lock word's address) in the
// swiftself register.
#define SWIFTCC __attribute__((swiftcall))
#define SELF __attribute__((swift_context))
#define LOCK_SLOW "$s15Synchronization12_MutexHandleV9_lockSlowyys6UInt32VF"
#define TRY_LOCK_SLOW "$s15Synchronization12_MutexHandleV12_tryLockSlowSbyF"
#define UNLOCK_SLOW "$s15Synchronization12_MutexHandleV11_unlockSlowyyF"

typedef SWIFTCC void (*lock_slow_fn)(uint32_t, SELF void *);
typedef SWIFTCC bool (*try_lock_slow_fn)(SELF void *);
typedef SWIFTCC void (*unlock_slow_fn)(SELF void *);

static void *real(const char *name) {
    void *function = dlsym(RTLD_NEXT, name);
    if (!function) {
        fprintf(stderr, "tsan-mutex: %s not found in libswiftSynchronization (toolchain changed?)\n", name);
        abort();
    }
    return function;
}

SWIFTCC void lock_slow(uint32_t self_id, SELF void *handle) __asm__(LOCK_SLOW);
SWIFTCC void lock_slow(uint32_t self_id, SELF void *handle) {
    static lock_slow_fn function;
    if (!function) function = (lock_slow_fn)real(LOCK_SLOW);
    function(self_id, handle);
    if (__tsan_acquire) __tsan_acquire(handle);
}

SWIFTCC bool try_lock_slow(SELF void *handle) __asm__(TRY_LOCK_SLOW);
SWIFTCC bool try_lock_slow(SELF void *handle) {
    static try_lock_slow_fn function;
    if (!function) function = (try_lock_slow_fn)real(TRY_LOCK_SLOW);
    bool locked = function(handle);
    if (locked && __tsan_acquire) __tsan_acquire(handle);
    return locked;
}

SWIFTCC void unlock_slow(SELF void *handle) __asm__(UNLOCK_SLOW);
SWIFTCC void unlock_slow(SELF void *handle) {
    static unlock_slow_fn function;
    if (!function) function = (unlock_slow_fn)real(UNLOCK_SLOW);
    if (__tsan_release) __tsan_release(handle);
    function(handle);
}
