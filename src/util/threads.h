/*
 * threads.h - a fixed set of threads that share one argument, started in
 * order and stopped together.
 *
 * The WAL pusher, the WAL prefetcher and the S3 writer each run N workers
 * on one shared state and stop them by setting a flag under the state's
 * lock. What they must all get right: a thread that could not be started
 * is never joined (pthread_create leaves its pthread_t undefined on
 * failure), and the ones that were started always are.
 */
#ifndef PGD_THREADS_H
#define PGD_THREADS_H

#include <pthread.h>
#include <stdbool.h>

#include "util/error.h"

/*
 * Starts ids[0..n) running run(arg), in order. *started is how many run,
 * also on failure, when err names "what" and the thread that could not be
 * started (for example "could not start upload thread 2 of 4: Resource
 * temporarily unavailable"). The threads started keep running: the caller
 * stops them with threads_stop.
 */
bool threads_start(pthread_t *ids, unsigned n, void *(*run)(void *), void *arg, const char *what,
                   unsigned *started, pgd_error *err);

/*
 * Sets *stop under lock and wakes every thread waiting on changed, then
 * joins the first "started" of ids.
 */
void threads_stop(pthread_mutex_t *lock, pthread_cond_t *changed, bool *stop, pthread_t *ids,
                  unsigned started);

#endif
