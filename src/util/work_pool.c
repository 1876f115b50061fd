/*
 * work_pool.c - a pool of threads over numbered tasks (see work_pool.h).
 */
#include "util/work_pool.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "util/xmalloc.h"

#define WORK_POOL_NS_PER_S 1000000000L

struct work_pool {
    const work_pool_job *job;
    atomic_size_t next_task;
    atomic_bool stopping;
    atomic_bool exhausted; /* every task is taken: parked reserve threads may end */
    atomic_uint_fast64_t advanced;
    pthread_mutex_t lock; /* guards err, running, released */
    pthread_cond_t idle;  /* signalled when the last thread ends */
    pthread_cond_t wake;  /* reserve threads: released, tasks exhausted, or stopping */
    unsigned running;
    unsigned released; /* reserve threads allowed to work */
    pgd_error err;
};

typedef struct work_pool_thread {
    work_pool *pool;
    void *worker;
    unsigned number;
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
    if (next >= pool->job->ntasks) {
        if (!atomic_exchange(&pool->exhausted, true) && pool->job->reserve > 0) {
            pthread_mutex_lock(&pool->lock);
            pthread_cond_broadcast(&pool->wake);
            pthread_mutex_unlock(&pool->lock);
        }
        return false;
    }
    *task = next;
    return true;
}

/* A reserve thread before its first task: wait until released, the tasks are gone, or a stop. */
static void work_pool_park(work_pool *pool, unsigned number)
{
    unsigned rank = number - (pool->job->threads - pool->job->reserve);

    pthread_mutex_lock(&pool->lock);
    while (rank >= pool->released && !atomic_load(&pool->exhausted) && !work_pool_stopping(pool))
        pthread_cond_wait(&pool->wake, &pool->lock);
    pthread_mutex_unlock(&pool->lock);
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
    pthread_mutex_lock(&pool->lock);
    pthread_cond_broadcast(&pool->wake); /* parked reserve threads: the job is over */
    pthread_mutex_unlock(&pool->lock);
}

static void *work_pool_thread_main(void *arg)
{
    work_pool_thread *t = arg;
    work_pool *pool = t->pool;
    const work_pool_job *job = pool->job;
    pgd_error err = {0};
    bool ok = true, reserve = t->number >= job->threads - job->reserve;
    size_t task;

    if (job->thread_start != NULL)
        job->thread_start(job->thread_arg, reserve);
    if (reserve)
        work_pool_park(pool, t->number);
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

/* The controller's answer, applied: reserve threads released (never taken back). */
static void work_pool_control(work_pool *pool)
{
    const work_pool_job *job = pool->job;
    unsigned want = job->control(job->control_arg, clock_seconds(), atomic_load(&pool->advanced));

    if (want > job->reserve)
        want = job->reserve;
    pthread_mutex_lock(&pool->lock);
    if (want > pool->released) {
        pool->released = want;
        pthread_cond_broadcast(&pool->wake);
    }
    pthread_mutex_unlock(&pool->lock);
}

/*
 * Until the last thread ends; meanwhile, at their intervals, redraw the progress line and ask
 * the controller.
 */
static void work_pool_wait(work_pool *pool)
{
    progress_meter *meter = pool->job->progress;
    bool redraw = meter != NULL && meter->enabled, control = pool->job->control != NULL;
    double interval = PROGRESS_INTERVAL_S;

    if (control && (!redraw || pool->job->control_interval_s < interval))
        interval = pool->job->control_interval_s;
    pthread_mutex_lock(&pool->lock);
    while (pool->running > 0) {
        struct timespec until;
        if (!redraw && !control) {
            pthread_cond_wait(&pool->idle, &pool->lock);
            continue;
        }
        clock_gettime(CLOCK_MONOTONIC, &until);
        until.tv_nsec += (long)(interval * WORK_POOL_NS_PER_S);
        until.tv_sec += until.tv_nsec / WORK_POOL_NS_PER_S;
        until.tv_nsec %= WORK_POOL_NS_PER_S;
        pthread_cond_timedwait(&pool->idle, &pool->lock, &until);
        pthread_mutex_unlock(&pool->lock);
        if (redraw)
            progress_update(meter, atomic_load(&pool->advanced));
        if (control)
            work_pool_control(pool);
        pthread_mutex_lock(&pool->lock);
    }
    pthread_mutex_unlock(&pool->lock);
}

bool work_pool_run(const work_pool_job *job, uint64_t *advanced, pgd_error *err)
{
    work_pool pool = {.job = job,
                      .released = job->released < job->reserve ? job->released : job->reserve};
    work_pool_thread *threads = xcalloc(job->threads ? job->threads : 1, sizeof(*threads));
    pthread_condattr_t attr;
    unsigned started = 0;

    pthread_mutex_init(&pool.lock, NULL);
    pthread_condattr_init(&attr);
    pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
    pthread_cond_init(&pool.idle, &attr);
    pthread_cond_init(&pool.wake, NULL);
    pthread_condattr_destroy(&attr);
    for (unsigned i = 0; i < job->threads && !work_pool_stopping(&pool); i++) {
        int rc;
        threads[i] = (work_pool_thread){
            .pool = &pool, .worker = (char *)job->workers + i * job->worker_size, .number = i};
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
    pthread_cond_destroy(&pool.wake);
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
