/*
 * work_pool.c - a pool of threads over numbered tasks (see work_pool.h).
 */
#include "util/work_pool.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define WORK_POOL_NS_PER_S 1000000000L

struct work_pool {
    const work_pool_job *job;
    atomic_size_t next_task;
    atomic_bool stopping;
    atomic_uint_fast64_t advanced;
    pthread_mutex_t lock; /* guards err, running */
    pthread_cond_t idle;  /* signalled when the last thread ends */
    unsigned running;
    pgd_error err;
};

typedef struct work_pool_thread {
    work_pool *pool;
    void *worker;
    pthread_t id;
} work_pool_thread;

bool work_pool_stopping(const work_pool *pool)
{
    const volatile sig_atomic_t *cancel = pool->job->cancel;

    return atomic_load(&((work_pool *)pool)->stopping) || (cancel != NULL && *cancel != 0);
}

bool work_pool_claim(work_pool *pool, size_t *task)
{
    size_t next;

    if (work_pool_stopping(pool))
        return false;
    next = atomic_fetch_add(&pool->next_task, 1);
    if (next >= pool->job->ntasks)
        return false;
    *task = next;
    return true;
}

void work_pool_advance(work_pool *pool, uint64_t units)
{
    atomic_fetch_add_explicit(&pool->advanced, units, memory_order_relaxed);
}

/*
 * Record why the job fails, unless a reason is known already, and stop
 * every thread. A task that gave up because the job was stopping has
 * nothing to add; one that failed without a word is reported as such.
 */
static void work_pool_fail(work_pool *pool, const pgd_error *err)
{
    const volatile sig_atomic_t *cancel = pool->job->cancel;

    pthread_mutex_lock(&pool->lock);
    if (!pool->err.set) {
        if (err != NULL && err->set)
            pool->err = *err;
        else if (cancel != NULL && *cancel != 0)
            err_set(&pool->err, "interrupted by signal %d", (int)*cancel);
        else if (!atomic_load(&pool->stopping))
            err_set(&pool->err, "a %s stopped without saying why", pool->job->thread_name);
    }
    pthread_mutex_unlock(&pool->lock);
    atomic_store(&pool->stopping, true);
}

static void *work_pool_thread_main(void *arg)
{
    work_pool_thread *t = arg;
    work_pool *pool = t->pool;
    const work_pool_job *job = pool->job;
    pgd_error err = {0};
    bool ok = true;
    size_t task;

    while (ok && work_pool_claim(pool, &task))
        ok = job->run(pool, t->worker, task, &err);
    if (ok && work_pool_stopping(pool))
        ok = false; /* stopped early: what was begun is not finished */
    if (job->finish != NULL && !job->finish(pool, t->worker, ok, &err))
        ok = false;
    if (!ok)
        work_pool_fail(pool, &err);
    pthread_mutex_lock(&pool->lock);
    if (--pool->running == 0)
        pthread_cond_signal(&pool->idle);
    pthread_mutex_unlock(&pool->lock);
    return NULL;
}

/* Until the last thread ends; with a progress line, redraw it at its interval meanwhile. */
static void work_pool_wait(work_pool *pool)
{
    progress_meter *meter = pool->job->progress;
    bool redraw = meter != NULL && meter->enabled;

    pthread_mutex_lock(&pool->lock);
    while (pool->running > 0) {
        struct timespec until;
        if (!redraw) {
            pthread_cond_wait(&pool->idle, &pool->lock);
            continue;
        }
        clock_gettime(CLOCK_MONOTONIC, &until);
        until.tv_nsec += (long)(PROGRESS_INTERVAL_S * WORK_POOL_NS_PER_S);
        until.tv_sec += until.tv_nsec / WORK_POOL_NS_PER_S;
        until.tv_nsec %= WORK_POOL_NS_PER_S;
        pthread_cond_timedwait(&pool->idle, &pool->lock, &until);
        pthread_mutex_unlock(&pool->lock);
        progress_update(meter, atomic_load(&pool->advanced));
        pthread_mutex_lock(&pool->lock);
    }
    pthread_mutex_unlock(&pool->lock);
}

bool work_pool_run(const work_pool_job *job, uint64_t *advanced, pgd_error *err)
{
    work_pool pool = {.job = job};
    work_pool_thread *threads = calloc(job->threads ? job->threads : 1, sizeof(*threads));
    pthread_condattr_t attr;
    unsigned started = 0;

    if (threads == NULL)
        return err_set(err, "out of memory");
    pthread_mutex_init(&pool.lock, NULL);
    pthread_condattr_init(&attr);
    pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
    pthread_cond_init(&pool.idle, &attr);
    pthread_condattr_destroy(&attr);
    for (unsigned i = 0; i < job->threads && !work_pool_stopping(&pool); i++) {
        int rc;
        threads[i] = (work_pool_thread){.pool = &pool,
                                        .worker = (char *)job->workers + i * job->worker_size};
        pthread_mutex_lock(&pool.lock);
        pool.running++;
        pthread_mutex_unlock(&pool.lock);
        rc = pthread_create(&threads[i].id, NULL, work_pool_thread_main, &threads[i]);
        if (rc != 0) {
            pgd_error start_err = {0};
            pthread_mutex_lock(&pool.lock);
            pool.running--;
            pthread_mutex_unlock(&pool.lock);
            err_errno(&start_err, rc, "could not start %s %u", job->thread_name, i + 1);
            work_pool_fail(&pool, &start_err);
            break;
        }
        started++;
    }
    work_pool_wait(&pool);
    for (unsigned i = 0; i < started; i++)
        pthread_join(threads[i].id, NULL);
    free(threads);
    pthread_cond_destroy(&pool.idle);
    pthread_mutex_destroy(&pool.lock);
    if (advanced != NULL)
        *advanced = atomic_load(&pool.advanced);
    if (pool.err.set || atomic_load(&pool.stopping)) {
        if (!pool.err.set)
            err_set(&pool.err, "the %ss stopped without saying why", job->thread_name);
        *err = pool.err;
        return false;
    }
    return true;
}
