/*
 * piece_upload.h - an object written in numbered pieces (S3's multipart
 * parts, Azure's blocks): the writer fills one buffer while upload threads
 * send the full ones, from (threads + 1) buffers in all, so memory stays
 * bounded by (threads + 1) x the piece size whatever the object's size.
 * Pieces grow: the size doubles every `per_size` pieces up to `max_size`,
 * so that an object needs at most `max_pieces`.
 *
 * The store's own requests stay with its driver, through two calls: `begin`
 * before the first piece is sent (S3 starts its multipart upload there) and
 * `send` for each piece, from the upload threads, several at once. After a
 * failure no further piece is sent, and the first error is the one told.
 */
#ifndef PGD_PIECE_UPLOAD_H
#define PGD_PIECE_UPLOAD_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "util/error.h"

typedef struct upload_piece {
    char *buf;
    size_t len;
    unsigned number; /* from 1 */
    bool busy;       /* queued or being sent */
} upload_piece;

typedef struct piece_upload_ops {
    bool (*begin)(void *owner, pgd_error *err); /* NULL: nothing to do */
    bool (*send)(void *owner, const upload_piece *piece, pgd_error *err);
} piece_upload_ops;

typedef struct piece_upload_limits {
    uint64_t size;       /* the first pieces' size */
    uint64_t max_size;   /* the largest piece */
    unsigned per_size;   /* pieces of each size before it doubles */
    unsigned max_pieces; /* the store's limit */
    unsigned threads;    /* pieces in flight */
    const char *unit;    /* "parts", "blocks": for messages */
} piece_upload_limits;

typedef struct piece_upload {
    const piece_upload_ops *ops;
    void *owner;
    const char *path; /* the object, for messages */
    piece_upload_limits lim;
    upload_piece *pieces; /* lim.threads + 1 buffers */
    unsigned npieces;
    upload_piece *current; /* being filled */
    uint64_t cap;          /* its size */
    unsigned count;        /* pieces begun: the current one's number */
    bool begun;            /* `begin` succeeded: the object goes in pieces */
    pthread_mutex_t lock;
    pthread_cond_t changed;
    unsigned inflight;
    pgd_error err; /* the first failure of a send */
    pthread_t *threads;
    unsigned nthreads; /* started */
    upload_piece **queue;
    unsigned qlen;
    bool stopping;
} piece_upload;

/* The size of piece `number` (from 1): `size`, doubled every `per_size` pieces up to `max`. */
uint64_t piece_upload_size(uint64_t size, unsigned number, unsigned per_size, uint64_t max);

void piece_upload_init(piece_upload *u, const piece_upload_ops *ops, void *owner, const char *path,
                       const piece_upload_limits *lim);

/* Append bytes; a full piece is handed to the upload threads (the first after `begin`). */
bool piece_upload_write(piece_upload *u, const void *buf, size_t len, pgd_error *err);

/*
 * Once begun: queue the last piece (an empty one is no piece, u->count
 * says how many there are) and wait until every piece is sent; false with
 * the first failure (a failed write's too). Not begun it does nothing: the
 * whole object is u->current, for the caller to send in one request.
 */
bool piece_upload_finish(piece_upload *u, pgd_error *err);

/* Wait for the pieces in flight and stop the threads (once: again, nothing). */
void piece_upload_stop(piece_upload *u);

/* piece_upload_stop, then free the buffers. */
void piece_upload_free(piece_upload *u);

#endif
