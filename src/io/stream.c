/*
 * stream.c - generic stream helpers and the counting/CRC-32C filters.
 */
#include "io/stream.h"

#include <stdlib.h>
#include <string.h>

#include "util/crc32c.h"
#include "util/xmalloc.h"

bool in_read_full(in_stream *s, void *buf, size_t len, size_t *n, pgd_error *err)
{
    size_t done = 0;

    while (done < len) {
        size_t got;
        if (!in_read(s, (char *)buf + done, len - done, &got, err))
            return false;
        if (got == 0)
            break;
        done += got;
    }
    *n = done;
    return true;
}

/* ---- CRC out filter ---- */

typedef struct stream_crc_out {
    out_stream base;
    out_stream *next;
    uint64_t bytes;
    uint32_t crc;
    uint64_t *size_result;
    uint32_t *crc_result;
} stream_crc_out;

static bool stream_crc_out_write(out_stream *s, const void *buf, size_t len, pgd_error *err)
{
    stream_crc_out *c = (stream_crc_out *)s;

    c->crc = crc32c_update(c->crc, buf, len);
    c->bytes += len;
    return out_write(c->next, buf, len, err);
}

static bool stream_crc_out_close(out_stream *s, pgd_error *err)
{
    stream_crc_out *c = (stream_crc_out *)s;
    bool ok = out_close(c->next, err);

    *c->size_result = c->bytes;
    *c->crc_result = crc32c_final(c->crc);
    free(c);
    return ok;
}

static void stream_crc_out_abort(out_stream *s)
{
    stream_crc_out *c = (stream_crc_out *)s;

    out_abort(c->next);
    free(c);
}

static const out_stream_ops stream_crc_out_ops = {stream_crc_out_write, stream_crc_out_close,
                                                  stream_crc_out_abort};

out_stream *crc_out_new(out_stream *next, uint64_t *size, uint32_t *crc)
{
    stream_crc_out *c = xcalloc(1, sizeof(*c));

    c->base.ops = &stream_crc_out_ops;
    c->next = next;
    c->crc = CRC32C_INIT;
    c->size_result = size;
    c->crc_result = crc;
    return &c->base;
}

/* ---- CRC in filter ---- */

typedef struct stream_crc_in {
    in_stream base;
    in_stream *src;
    char *name;
    uint64_t bytes, expect_size;
    uint32_t crc, expect_crc;
    bool checked;
} stream_crc_in;

static bool stream_crc_in_read(in_stream *s, void *buf, size_t len, size_t *n, pgd_error *err)
{
    stream_crc_in *c = (stream_crc_in *)s;

    if (!in_read(c->src, buf, len, n, err))
        return false;
    c->crc = crc32c_update(c->crc, buf, *n);
    c->bytes += *n;
    if (*n == 0 && !c->checked) {
        c->checked = true;
        if (c->bytes != c->expect_size)
            return err_set(err, "\"%s\" is %llu bytes, the manifest says %llu", c->name,
                           (unsigned long long)c->bytes, (unsigned long long)c->expect_size);
        if (crc32c_final(c->crc) != c->expect_crc)
            return err_set(err, "checksum mismatch in \"%s\": %08x, the manifest says %08x",
                           c->name, crc32c_final(c->crc), c->expect_crc);
    }
    return true;
}

static void stream_crc_in_close(in_stream *s)
{
    stream_crc_in *c = (stream_crc_in *)s;

    in_close(c->src);
    free(c->name);
    free(c);
}

static const in_stream_ops stream_crc_in_ops = {stream_crc_in_read, stream_crc_in_close};

in_stream *crc_in_new(in_stream *src, const char *name, uint64_t expect_size, uint32_t expect_crc)
{
    stream_crc_in *c = xcalloc(1, sizeof(*c));

    c->name = xstrdup(name);
    c->base.ops = &stream_crc_in_ops;
    c->src = src;
    c->crc = CRC32C_INIT;
    c->expect_size = expect_size;
    c->expect_crc = expect_crc;
    return &c->base;
}

/* ---- memory in stream ---- */

typedef struct stream_mem_in {
    in_stream base;
    const char *data;
    size_t len, pos;
} stream_mem_in;

static bool stream_mem_in_read(in_stream *s, void *buf, size_t len, size_t *n, pgd_error *err)
{
    stream_mem_in *m = (stream_mem_in *)s;
    size_t left = m->len - m->pos;

    (void)err;
    *n = len < left ? len : left;
    memcpy(buf, m->data + m->pos, *n);
    m->pos += *n;
    return true;
}

static void stream_mem_in_close(in_stream *s)
{
    free(s);
}

static const in_stream_ops stream_mem_in_ops = {stream_mem_in_read, stream_mem_in_close};

in_stream *mem_in_new(const void *data, size_t len)
{
    stream_mem_in *m = xcalloc(1, sizeof(*m));

    m->base.ops = &stream_mem_in_ops;
    m->data = data;
    m->len = len;
    return &m->base;
}
