/*
 * work_pool.h - threads that take numbered tasks in order until none is
 * left; the first failure (or a signal) stops them all.
 *
 * The backup pipeline (files to read) and the restore's extraction
 * (partitions to unpack) are both this shape: each thread takes the next
 * task, an error must win once and stop the others, and the starting
 * thread redraws a progress line while it waits. It waits on a condition
 * variable until the last thread ends, waking only at the progress line's
 * interval, or the controller's, when there is one: nothing polls.
 *
 * Reserve threads (a backup's deadline, backup/pipeline.h) are started
 * with the others but take no task until the controller releases them,
 * and end without one when the tasks run out first.
 */
#ifndef PGD_WORK_POOL_H
#define PGD_WORK_POOL_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "util/error.h"
#include "util/progress.h"

typedef struct work_pool work_pool;

typedef struct work_pool_job {
    unsigned threads;
    size_t ntasks;
    /* per thread state, threads x worker_size bytes: thread i gets workers + i * worker_size */
    void *workers;
    size_t worker_size;
    /* Task number `task` on a thread's state; false fails the job (err says why). */
    bool (*run)(work_pool *pool, void *worker, size_t task, pgd_error *err);
    /* Optional: after a thread's last task; ok is false once the job is failing. */
    bool (*finish)(work_pool *pool, void *worker, bool ok, pgd_error *err);
    const char *thread_name;             /* in errors: "could not start reader thread 2" */
    const volatile sig_atomic_t *cancel; /* optional: non-zero (a signal) stops the job */
    progress_meter *progress;            /* optional: redrawn with what work_pool_advance adds */
    /* Optional: first thing each thread runs, told whether it is a reserve thread. */
    void (*thread_start)(void *arg, bool reserve);
    void *thread_arg;
    /* The last `reserve` of `threads` wait for the controller before their first task... */
    unsigned reserve;
    unsigned released; /* ...but for the first `released` of them, which work from the start */
    /*
     * Optional: asked every control_interval_s with the time (clock_seconds) and the units
     * advanced so far; returns how many reserve threads are to work from now on (never fewer
     * than before).
     */
    unsigned (*control)(void *arg, double now, uint64_t advanced);
    void *control_arg;
    double control_interval_s;
} work_pool_job;

/*
 * Run every task; true when all succeeded. *advanced (may be NULL) is the
 * sum of work_pool_advance, for the caller's totals. On failure err holds
 * the first error: a task's, "interrupted by signal N", or a thread that
 * could not start.
 */
bool work_pool_run(const work_pool_job *job, uint64_t *advanced, pgd_error *err);

/*
 * Take the next task for the calling thread, to run within the task it is
 * running (a reader that keeps reads in flight across files opens the next
 * file before the current one is done). False when none is left or the job
 * is stopping. A task taken this way is the caller's: it runs it or fails.
 */
bool work_pool_claim(work_pool *pool, size_t *task);

/* A task that takes long asks this between steps: true when it should give up. */
bool work_pool_stopping(const work_pool *pool);

/* Units of work done (bytes), for the progress line. Cheap: an atomic add. */
void work_pool_advance(work_pool *pool, uint64_t units);

#endif
