/*
 * engine_threads.c - the portable engine: `depth` threads take requests
 * from a queue, pread() them, and put them on a completion queue.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "io/io_engine.h"
#include "util/xmalloc.h"

typedef struct io_engine_threads_queue {
    io_request **items;
    size_t head, count, cap;
} io_engine_threads_queue;

typedef struct io_engine_threads {
    io_engine base;
    pthread_t *threads;
    unsigned nthreads;
    pthread_mutex_t lock;
    pthread_cond_t work, done;
    io_engine_threads_queue pending, completed;
    bool stopping;
} io_engine_threads;

static void io_engine_threads_push(io_engine_threads_queue *q, io_request *r)
{
    q->items[(q->head + q->count) % q->cap] = r;
    q->count++;
}

static io_request *io_engine_threads_pop(io_engine_threads_queue *q)
{
    io_request *r = q->items[q->head];

    q->head = (q->head + 1) % q->cap;
    q->count--;
    return r;
}

static void *io_engine_threads_main(void *arg)
{
    io_engine_threads *e = arg;

    pthread_mutex_lock(&e->lock);
    for (;;) {
        io_request *r;
        ssize_t n;
        size_t done = 0;

        while (e->pending.count == 0 && !e->stopping)
            pthread_cond_wait(&e->work, &e->lock);
        if (e->stopping)
            break;
        r = io_engine_threads_pop(&e->pending);
        pthread_mutex_unlock(&e->lock);
        /* a full read unless the file ends: same contract as io_uring's single read */
        for (;;) {
            n = pread(r->fd, (char *)r->buf + done, r->len - done, (off_t)(r->offset + done));
            if (n < 0 && errno == EINTR)
                continue;
            if (n <= 0)
                break;
            done += (size_t)n;
            if (done == r->len || done % 4096 != 0)
                break;
        }
        r->result = n < 0 ? -errno : (ssize_t)done;
        pthread_mutex_lock(&e->lock);
        io_engine_threads_push(&e->completed, r);
        pthread_cond_signal(&e->done);
    }
    pthread_mutex_unlock(&e->lock);
    return NULL;
}

static bool io_engine_threads_submit(io_engine *base, io_request *r, pgd_error *err)
{
    io_engine_threads *e = (io_engine_threads *)base;

    pthread_mutex_lock(&e->lock);
    if (e->pending.count + e->completed.count >= e->pending.cap) {
        pthread_mutex_unlock(&e->lock);
        return err_set(err, "internal error: more than %u reads submitted", base->depth);
    }
    io_engine_threads_push(&e->pending, r);
    pthread_cond_signal(&e->work);
    pthread_mutex_unlock(&e->lock);
    return true;
}

static bool io_engine_threads_wait(io_engine *base, io_request **out, pgd_error *err)
{
    io_engine_threads *e = (io_engine_threads *)base;

    (void)err;
    pthread_mutex_lock(&e->lock);
    while (e->completed.count == 0)
        pthread_cond_wait(&e->done, &e->lock);
    *out = io_engine_threads_pop(&e->completed);
    pthread_mutex_unlock(&e->lock);
    return true;
}

static void io_engine_threads_free(io_engine *base)
{
    io_engine_threads *e = (io_engine_threads *)base;

    pthread_mutex_lock(&e->lock);
    e->stopping = true;
    pthread_cond_broadcast(&e->work);
    pthread_mutex_unlock(&e->lock);
    for (unsigned i = 0; i < e->nthreads; i++)
        pthread_join(e->threads[i], NULL);
    pthread_mutex_destroy(&e->lock);
    pthread_cond_destroy(&e->work);
    pthread_cond_destroy(&e->done);
    free(e->pending.items);
    free(e->completed.items);
    free(e->threads);
    free(e);
}

static const io_engine_ops io_engine_threads_ops = {io_engine_threads_submit,
                                                    io_engine_threads_wait, io_engine_threads_free};

io_engine *io_engine_threads_new(unsigned depth, pgd_error *err)
{
    io_engine_threads *e = xcalloc(1, sizeof(*e));

    e->base.ops = &io_engine_threads_ops;
    e->base.kind = IO_ENGINE_THREADS;
    e->base.depth = depth;
    e->pending.cap = e->completed.cap = depth;
    e->pending.items = xcalloc(depth, sizeof(io_request *));
    e->completed.items = xcalloc(depth, sizeof(io_request *));
    e->threads = xcalloc(depth, sizeof(pthread_t));
    pthread_mutex_init(&e->lock, NULL);
    pthread_cond_init(&e->work, NULL);
    pthread_cond_init(&e->done, NULL);
    for (; e->nthreads < depth; e->nthreads++) {
        if (pthread_create(&e->threads[e->nthreads], NULL, io_engine_threads_main, e) != 0) {
            io_engine_threads_free(&e->base);
            err_set(err, "could not start reader threads");
            return NULL;
        }
    }
    return &e->base;
}
