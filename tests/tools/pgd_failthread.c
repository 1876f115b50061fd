/*
 * pgd_failthread.c - LD_PRELOAD shim for the integration tests: the Nth
 * pthread_create of the process ($PGD_FAILTHREAD_AT, counted from 1) fails
 * with EAGAIN, as it does when the process reaches RLIMIT_NPROC or the
 * kernel's thread limit; every other works as usual. As root a test cannot
 * make that happen for real, and not for one thread of one process.
 *
 *   LD_PRELOAD=pgd-failthread.so PGD_FAILTHREAD_AT=2 pgdirect wal-push ...
 *
 * (With an ASan-built pgdirect, also ASAN_OPTIONS=verify_asan_link_order=0.)
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

static atomic_uint failthread_calls;

int pthread_create(pthread_t *id, const pthread_attr_t *attr, void *(*run)(void *), void *arg)
{
    int (*real)(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *);
    const char *at = getenv("PGD_FAILTHREAD_AT");
    unsigned n = atomic_fetch_add(&failthread_calls, 1) + 1;

    if (at != NULL && strtoul(at, NULL, 10) == n) {
        memset(id, 0xA5, sizeof(*id)); /* what a caller must never join */
        return EAGAIN;
    }
    *(void **)&real = dlsym(RTLD_NEXT, "pthread_create");
    return real(id, attr, run, arg);
}
