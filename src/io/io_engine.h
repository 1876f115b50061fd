/*
 * io_engine.h - asynchronous reads behind one interface: a pool of threads
 * calling pread(), or io_uring. The backup pipeline keeps several reads in
 * flight within one file (and across files) through it, so one large
 * relation segment is read at the device's speed, not at one request's.
 *
 * A request is submitted with its buffer; completions come back in any
 * order through io_engine_wait. The engine never copies data.
 */
#ifndef PGD_IO_ENGINE_H
#define PGD_IO_ENGINE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "util/error.h"

typedef enum { IO_ENGINE_THREADS, IO_ENGINE_URING } io_engine_kind;

typedef struct io_request {
    int fd;
    void *buf;
    size_t len;
    uint64_t offset;
    ssize_t result; /* bytes read, or -errno */
    void *user;
} io_request;

typedef struct io_engine io_engine;

typedef struct io_engine_ops {
    bool (*submit)(io_engine *e, io_request *r, pgd_error *err);
    /* Block until a request completes; *done is it (its result filled in). */
    bool (*wait)(io_engine *e, io_request **done, pgd_error *err);
    void (*free)(io_engine *e);
} io_engine_ops;

struct io_engine {
    const io_engine_ops *ops;
    io_engine_kind kind;
    unsigned depth; /* requests in flight at most */
};

const char *io_engine_name(io_engine_kind kind);

/* Whether io_uring can be used here (kernel support, not disabled, not blocked by seccomp). */
bool io_engine_uring_available(char *why, size_t whylen);

io_engine *io_engine_new(io_engine_kind kind, unsigned depth, pgd_error *err);

static inline bool io_engine_submit(io_engine *e, io_request *r, pgd_error *err)
{
    return e->ops->submit(e, r, err);
}

static inline bool io_engine_wait(io_engine *e, io_request **done, pgd_error *err)
{
    return e->ops->wait(e, done, err);
}

static inline void io_engine_free(io_engine *e)
{
    if (e != NULL)
        e->ops->free(e);
}

io_engine *io_engine_threads_new(unsigned depth, pgd_error *err);
io_engine *io_engine_uring_new(unsigned depth, pgd_error *err);

#endif
