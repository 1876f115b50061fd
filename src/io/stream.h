/*
 * stream.h - byte streams that chain: a tar writer writes into a compressor,
 * which writes into a storage object; a restore reads a storage object
 * through a decompressor into the tar reader.
 *
 * Each stream owns the next one in its chain: closing (or aborting) the head
 * closes the whole chain. Adding a step is adding a filter, not editing a
 * copy loop.
 */
#ifndef PGD_STREAM_H
#define PGD_STREAM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "util/error.h"

typedef struct out_stream out_stream;
typedef struct in_stream in_stream;

typedef struct out_stream_ops {
    bool (*write)(out_stream *s, const void *buf, size_t len, pgd_error *err);
    /* Flush, commit (make visible) and free the chain. */
    bool (*close)(out_stream *s, pgd_error *err);
    /* Discard what was written and free the chain. */
    void (*abort)(out_stream *s);
} out_stream_ops;

struct out_stream {
    const out_stream_ops *ops;
};

typedef struct in_stream_ops {
    /* Up to len bytes; *n == 0 only at the end of the stream. */
    bool (*read)(in_stream *s, void *buf, size_t len, size_t *n, pgd_error *err);
    void (*close)(in_stream *s);
} in_stream_ops;

struct in_stream {
    const in_stream_ops *ops;
};

static inline bool out_write(out_stream *s, const void *buf, size_t len, pgd_error *err)
{
    return s->ops->write(s, buf, len, err);
}

static inline bool out_close(out_stream *s, pgd_error *err)
{
    return s->ops->close(s, err);
}

static inline void out_abort(out_stream *s)
{
    if (s != NULL)
        s->ops->abort(s);
}

static inline bool in_read(in_stream *s, void *buf, size_t len, size_t *n, pgd_error *err)
{
    return s->ops->read(s, buf, len, n, err);
}

static inline void in_close(in_stream *s)
{
    if (s != NULL)
        s->ops->close(s);
}

/* Read exactly len bytes unless the stream ends first (*n tells how many). */
bool in_read_full(in_stream *s, void *buf, size_t len, size_t *n, pgd_error *err);

/*
 * Filters that count bytes and compute CRC-32C of what passes through.
 * The out filter stores its results in *size / *crc when it is closed.
 * The in filter compares with the expected values when the stream ends and
 * fails, naming `name`, on a mismatch. Never NULL (a failed allocation ends
 * the process, util/xmalloc.h).
 */
out_stream *crc_out_new(out_stream *next, uint64_t *size, uint32_t *crc);
in_stream *crc_in_new(in_stream *src, const char *name, uint64_t expect_size, uint32_t expect_crc);

/* An in_stream over a memory buffer (not copied, not freed); never NULL. */
in_stream *mem_in_new(const void *data, size_t len);

#endif
