/*
 * threads.c - a fixed set of threads that share one argument: see threads.h.
 */
#include "util/threads.h"

bool threads_start(pthread_t *ids, unsigned n, void *(*run)(void *), void *arg, const char *what,
                   unsigned *started, pgd_error *err)
{
    for (*started = 0; *started < n; (*started)++) {
        int rc = pthread_create(&ids[*started], NULL, run, arg);

        if (rc != 0)
            return err_errno(err, rc, "could not start %s %u of %u", what, *started + 1, n);
    }
    return true;
}

void threads_stop(pthread_mutex_t *lock, pthread_cond_t *changed, bool *stop, pthread_t *ids,
                  unsigned started)
{
    pthread_mutex_lock(lock);
    *stop = true;
    pthread_cond_broadcast(changed);
    pthread_mutex_unlock(lock);
    for (unsigned i = 0; i < started; i++)
        pthread_join(ids[i], NULL);
}
