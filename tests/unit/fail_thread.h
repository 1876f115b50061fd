/*
 * fail_thread.h - for tests linked with -Wl,--wrap=pthread_create: a
 * thread that cannot be started, on demand. Set fail_thread_at to N and the
 * Nth pthread_create from then on fails with EAGAIN, as it does when the
 * process reaches RLIMIT_NPROC or the kernel's thread limit.
 */
#ifndef PGD_TEST_FAIL_THREAD_H
#define PGD_TEST_FAIL_THREAD_H

#include <errno.h>
#include <pthread.h>
#include <string.h>

static unsigned fail_thread_at; /* 0: every thread starts */

int __real_pthread_create(pthread_t *id, const pthread_attr_t *attr, void *(*run)(void *),
                          void *arg);
int __wrap_pthread_create(pthread_t *id, const pthread_attr_t *attr, void *(*run)(void *),
                          void *arg);

int __wrap_pthread_create(pthread_t *id, const pthread_attr_t *attr, void *(*run)(void *),
                          void *arg)
{
    if (fail_thread_at != 0 && --fail_thread_at == 0) {
        /* what glibc may leave behind: a handle that must never be joined */
        memset(id, 0xA5, sizeof(*id));
        return EAGAIN;
    }
    return __real_pthread_create(id, attr, run, arg);
}

#endif
