/*
 * piece_upload.c - an object written in numbered pieces (see piece_upload.h).
 */
#include "storage/http/piece_upload.h"

#include <stdlib.h>
#include <string.h>

#include "util/big_buffer.h"
#include "util/threads.h"
#include "util/xmalloc.h"

uint64_t piece_upload_size(uint64_t size, unsigned number, unsigned per_size, uint64_t max)
{
    unsigned doublings = number > 0 ? (number - 1) / per_size : 0;

    while (doublings-- > 0 && size < max)
        size *= 2;
    return size < max ? size : max;
}

void piece_upload_init(piece_upload *u, const piece_upload_ops *ops, void *owner, const char *path,
                       const piece_upload_limits *lim)
{
    memset(u, 0, sizeof(*u));
    u->ops = ops;
    u->owner = owner;
    u->path = path;
    u->lim = *lim;
    u->npieces = lim->threads + 1;
    u->pieces = xcalloc(u->npieces, sizeof(upload_piece));
    pthread_mutex_init(&u->lock, NULL);
    pthread_cond_init(&u->changed, NULL);
    u->current = &u->pieces[0];
    u->current->number = u->count = 1;
    u->cap = lim->size;
    u->current->buf = big_buffer_alloc(u->cap);
}

static void *piece_upload_thread(void *arg)
{
    piece_upload *u = arg;

    pthread_mutex_lock(&u->lock);
    for (;;) {
        upload_piece *p;
        pgd_error err = {0};
        bool ok;

        while (u->qlen == 0 && !u->stopping)
            pthread_cond_wait(&u->changed, &u->lock);
        if (u->qlen == 0 && u->stopping)
            break;
        p = u->queue[0];
        memmove(u->queue, u->queue + 1, (--u->qlen) * sizeof(upload_piece *));
        ok = u->err.set; /* after a failure the rest is not sent */
        pthread_mutex_unlock(&u->lock);
        ok = ok || u->ops->send(u->owner, p, &err);
        pthread_mutex_lock(&u->lock);
        if (!ok && !u->err.set)
            u->err = err;
        p->busy = false;
        u->inflight--;
        pthread_cond_broadcast(&u->changed);
    }
    pthread_mutex_unlock(&u->lock);
    return NULL;
}

/* Keep `err` as the upload's failure unless one came first: later writes and finish fail. */
static bool piece_upload_latch(piece_upload *u, const pgd_error *err)
{
    pthread_mutex_lock(&u->lock);
    if (!u->err.set)
        u->err = *err;
    pthread_mutex_unlock(&u->lock);
    return false;
}

static bool piece_upload_begin(piece_upload *u, pgd_error *err)
{
    if (u->ops->begin != NULL && !u->ops->begin(u->owner, err))
        return false;
    u->begun = true;
    u->threads = xcalloc(u->lim.threads, sizeof(pthread_t));
    u->queue = xcalloc(u->npieces, sizeof(upload_piece *));
    /* what was begun must not be finished as if sent */
    return threads_start(u->threads, u->lim.threads, piece_upload_thread, u, "upload thread",
                         &u->nthreads, err) ||
           piece_upload_latch(u, err);
}

static void piece_upload_enqueue(piece_upload *u, upload_piece *p)
{
    pthread_mutex_lock(&u->lock);
    p->busy = true;
    u->queue[u->qlen++] = p;
    u->inflight++;
    pthread_cond_broadcast(&u->changed);
    pthread_mutex_unlock(&u->lock);
}

/* The first failure of a send (true, in *err), or false. Called with the lock held. */
static bool piece_upload_failed(const piece_upload *u, pgd_error *err)
{
    if (!u->err.set)
        return false;
    *err = u->err;
    return true;
}

/* Hand the current piece to the upload threads and take a free buffer (waits for one). */
static bool piece_upload_ship(piece_upload *u, pgd_error *err)
{
    upload_piece *p = u->current;
    bool failed;

    if (!u->begun && !piece_upload_begin(u, err))
        return false;
    piece_upload_enqueue(u, p);
    pthread_mutex_lock(&u->lock);
    u->current = NULL;
    while (u->current == NULL && !u->err.set) {
        for (unsigned i = 0; i < u->npieces; i++) {
            if (!u->pieces[i].busy && &u->pieces[i] != p) {
                u->current = &u->pieces[i];
                break;
            }
        }
        if (u->current == NULL)
            pthread_cond_wait(&u->changed, &u->lock);
    }
    failed = piece_upload_failed(u, err);
    pthread_mutex_unlock(&u->lock);
    if (failed)
        return false;
    u->current->len = 0;
    u->current->number = ++u->count;
    u->cap = piece_upload_size(u->lim.size, u->count, u->lim.per_size, u->lim.max_size);
    if (u->count > u->lim.max_pieces) {
        err_set(err, "\"%s\" would need more than %u %s", u->path, u->lim.max_pieces, u->lim.unit);
        return piece_upload_latch(u, err); /* finish must not complete it */
    }
    if (u->current->buf == NULL || u->cap > u->lim.size)
        u->current->buf =
            u->current->buf == NULL ? big_buffer_alloc(u->cap) : xrealloc(u->current->buf, u->cap);
    return true;
}

bool piece_upload_write(piece_upload *u, const void *buf, size_t len, pgd_error *err)
{
    const char *p = buf;

    while (len > 0) {
        size_t room = (size_t)(u->cap - u->current->len), n = len < room ? len : room;
        memcpy(u->current->buf + u->current->len, p, n);
        u->current->len += n;
        p += n;
        len -= n;
        if (u->current->len == u->cap && !piece_upload_ship(u, err))
            return false;
    }
    return true;
}

void piece_upload_stop(piece_upload *u)
{
    if (u->threads == NULL)
        return;
    pthread_mutex_lock(&u->lock);
    while (u->inflight > 0 && u->nthreads > 0) /* (none started: nothing will be sent) */
        pthread_cond_wait(&u->changed, &u->lock);
    pthread_mutex_unlock(&u->lock);
    threads_stop(&u->lock, &u->changed, &u->stopping, u->threads, u->nthreads);
    free(u->threads);
    u->threads = NULL;
}

bool piece_upload_finish(piece_upload *u, pgd_error *err)
{
    bool failed;

    if (!u->begun)
        return true; /* the caller sends u->current in one request */
    pthread_mutex_lock(&u->lock);
    failed = piece_upload_failed(u, err);
    pthread_mutex_unlock(&u->lock);
    if (failed || u->current == NULL) { /* (NULL: a ship failed; its error is latched) */
        piece_upload_stop(u);
        return false;
    }
    if (u->current->len > 0)
        piece_upload_enqueue(u, u->current);
    else
        u->count--; /* the empty last buffer is not a piece */
    piece_upload_stop(u);
    pthread_mutex_lock(&u->lock);
    failed = piece_upload_failed(u, err);
    pthread_mutex_unlock(&u->lock);
    return !failed;
}

void piece_upload_free(piece_upload *u)
{
    piece_upload_stop(u);
    for (unsigned i = 0; i < u->npieces; i++)
        free(u->pieces[i].buf);
    free(u->pieces);
    free(u->queue);
    pthread_mutex_destroy(&u->lock);
    pthread_cond_destroy(&u->changed);
}
