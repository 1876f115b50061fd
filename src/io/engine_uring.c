/*
 * engine_uring.c - io_uring: one ring per pipeline worker, `depth` reads
 * submitted without a thread per read.
 */
#include <errno.h>
#include <liburing.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "io/io_engine.h"
#include "util/xmalloc.h"

/*
 * The kernel fills io_uring buffers behind valgrind's back; tell memcheck
 * they hold data (a no-op outside valgrind).
 */
#if defined(__has_include)
#if __has_include(<valgrind/memcheck.h>)
#include <valgrind/memcheck.h>
#define MARK_DEFINED(p, n) VALGRIND_MAKE_MEM_DEFINED((p), (n))
#endif
#endif
#ifndef MARK_DEFINED
#define MARK_DEFINED(p, n) ((void)(p), (void)(n))
#endif

typedef struct io_engine_uring {
    io_engine base;
    struct io_uring ring;
    unsigned inflight;
} io_engine_uring;

static bool io_engine_uring_submit(io_engine *base, io_request *r, pgd_error *err)
{
    io_engine_uring *e = (io_engine_uring *)base;
    struct io_uring_sqe *sqe = io_uring_get_sqe(&e->ring);
    int rc;

    if (sqe == NULL)
        return err_set(err, "internal error: io_uring submission queue full");
    io_uring_prep_read(sqe, r->fd, r->buf, (unsigned)r->len, r->offset);
    io_uring_sqe_set_data(sqe, r);
    rc = io_uring_submit(&e->ring);
    if (rc < 0)
        return err_errno(err, -rc, "io_uring_submit failed");
    e->inflight++;
    return true;
}

static bool io_engine_uring_wait(io_engine *base, io_request **out, pgd_error *err)
{
    io_engine_uring *e = (io_engine_uring *)base;
    struct io_uring_cqe *cqe;
    int rc;

    do {
        rc = io_uring_wait_cqe(&e->ring, &cqe);
    } while (rc == -EINTR);
    if (rc < 0)
        return err_errno(err, -rc, "io_uring_wait_cqe failed");
    *out = io_uring_cqe_get_data(cqe);
    (*out)->result = cqe->res;
    if (cqe->res > 0)
        MARK_DEFINED((*out)->buf, (size_t)cqe->res);
    io_uring_cqe_seen(&e->ring, cqe);
    e->inflight--;
    return true;
}

static void io_engine_uring_free(io_engine *base)
{
    io_engine_uring *e = (io_engine_uring *)base;

    io_uring_queue_exit(&e->ring);
    free(e);
}

static const io_engine_ops io_engine_uring_ops = {io_engine_uring_submit, io_engine_uring_wait,
                                                  io_engine_uring_free};

io_engine *io_engine_uring_new(unsigned depth, pgd_error *err)
{
    io_engine_uring *e = xcalloc(1, sizeof(*e));
    int rc;

    e->base.ops = &io_engine_uring_ops;
    e->base.kind = IO_ENGINE_URING;
    e->base.depth = depth;
    rc = io_uring_queue_init(depth, &e->ring, 0);
    if (rc < 0) {
        free(e);
        err_errno(err, -rc, "could not set up io_uring with %u entries", depth);
        return NULL;
    }
    return &e->base;
}

bool io_engine_uring_available(char *why, size_t whylen)
{
    struct io_uring ring;
    FILE *f = fopen("/proc/sys/kernel/io_uring_disabled", "r");
    int disabled = 0, rc;

    if (f != NULL) {
        if (fscanf(f, "%d", &disabled) != 1)
            disabled = 0;
        fclose(f);
    }
    if (disabled == 2) {
        snprintf(why, whylen, "io_uring is disabled (kernel.io_uring_disabled = 2)");
        return false;
    }
    rc = io_uring_queue_init(2, &ring, 0);
    if (rc < 0) {
        snprintf(why, whylen, "io_uring_setup refused: %s", strerror(-rc));
        return false;
    }
    io_uring_queue_exit(&ring);
    snprintf(why, whylen, "io_uring works here");
    return true;
}
