/*
 * zstd.c - Zstandard frames, with or without the frame checksum (compress.h
 * says who wants which).
 */
#include "compress/compress.h"

#include <stdlib.h>
#include <string.h>
#include <zstd.h>

#include "util/xmalloc.h"

#define ZSTD_DEFAULT_LEVEL 3

typedef struct zstd_out {
    out_stream base;
    out_stream *next;
    ZSTD_CCtx *cctx;
    char *dst;
    size_t dst_cap;
    char *name;
} zstd_out;

static void zstd_out_free(zstd_out *z)
{
    ZSTD_freeCCtx(z->cctx);
    free(z->dst);
    free(z->name);
    free(z);
}

/* Feed `len` bytes (possibly 0) with the given directive until zstd is done with them. */
static bool zstd_out_push(zstd_out *z, const void *buf, size_t len, ZSTD_EndDirective mode,
                          pgd_error *err)
{
    ZSTD_inBuffer in = {buf, len, 0};
    size_t remaining;

    do {
        ZSTD_outBuffer out = {z->dst, z->dst_cap, 0};
        remaining = ZSTD_compressStream2(z->cctx, &out, &in, mode);
        if (ZSTD_isError(remaining))
            return err_set(err, "could not compress \"%s\" with zstd: %s", z->name,
                           ZSTD_getErrorName(remaining));
        if (out.pos > 0 && !out_write(z->next, z->dst, out.pos, err))
            return false;
    } while (mode == ZSTD_e_end ? remaining != 0 : in.pos < in.size);
    return true;
}

static bool zstd_out_write(out_stream *s, const void *buf, size_t len, pgd_error *err)
{
    return zstd_out_push((zstd_out *)s, buf, len, ZSTD_e_continue, err);
}

static bool zstd_out_close(out_stream *s, pgd_error *err)
{
    zstd_out *z = (zstd_out *)s;
    bool ok = zstd_out_push(z, NULL, 0, ZSTD_e_end, err);

    if (ok)
        ok = out_close(z->next, err);
    else
        out_abort(z->next);
    zstd_out_free(z);
    return ok;
}

static void zstd_out_abort(out_stream *s)
{
    zstd_out *z = (zstd_out *)s;

    out_abort(z->next);
    zstd_out_free(z);
}

static const out_stream_ops zstd_out_ops = {zstd_out_write, zstd_out_close, zstd_out_abort};

out_stream *zstd_out_new(int level, bool frame_checksum, out_stream *next, const char *name,
                         pgd_error *err)
{
    zstd_out *z = xcalloc(1, sizeof(*z));

    z->name = xstrdup(name);
    z->base.ops = &zstd_out_ops;
    z->next = next;
    z->dst_cap = ZSTD_CStreamOutSize();
    z->dst = xmalloc(z->dst_cap);
    z->cctx = ZSTD_createCCtx();
    if (z->cctx == NULL ||
        ZSTD_isError(
            ZSTD_CCtx_setParameter(z->cctx, ZSTD_c_compressionLevel,
                                   level == COMPRESS_LEVEL_DEFAULT ? ZSTD_DEFAULT_LEVEL : level)) ||
        ZSTD_isError(
            ZSTD_CCtx_setParameter(z->cctx, ZSTD_c_checksumFlag, frame_checksum ? 1 : 0))) {
        err_set(err, "could not set up zstd compression for \"%s\"", name);
        zstd_out_abort(&z->base);
        return NULL;
    }
    return &z->base;
}

typedef struct zstd_in {
    in_stream base;
    in_stream *src;
    ZSTD_DCtx *dctx;
    char *in;
    size_t in_cap;
    ZSTD_inBuffer inbuf;
    size_t last;     /* 0 once a frame is complete */
    unsigned frames; /* frames completed, skippable ones too; at most 2 */
    bool started, src_eof;
    char *name;
} zstd_in;

static bool zstd_in_read(in_stream *s, void *buf, size_t len, size_t *n, pgd_error *err)
{
    zstd_in *z = (zstd_in *)s;

    *n = 0;
    while (*n == 0 && len > 0) {
        ZSTD_outBuffer out = {buf, len, 0};
        bool drained;

        if (z->inbuf.pos == z->inbuf.size && !z->src_eof) {
            size_t got;
            if (!in_read(z->src, z->in, z->in_cap, &got, err))
                return false;
            z->inbuf.src = z->in;
            z->inbuf.size = got;
            z->inbuf.pos = 0;
            z->src_eof = got == 0;
        }
        drained = z->src_eof && z->inbuf.pos == z->inbuf.size;
        if (drained && z->started && z->last == 0)
            return true;
        if (drained && !z->started)
            return err_set(err, "\"%s\" is truncated: the zstd frame does not end", z->name);
        z->last = ZSTD_decompressStream(z->dctx, &out, &z->inbuf);
        if (ZSTD_isError(z->last))
            return err_set(err, "could not decompress \"%s\" (corrupt zstd data): %s", z->name,
                           ZSTD_getErrorName(z->last));
        z->started = true;
        z->frames += z->last == 0 && z->frames < 2; /* 2: "more than one" */
        *n = out.pos;
        if (drained && out.pos == 0 && z->last != 0)
            return err_set(err, "\"%s\" is truncated: the zstd frame does not end", z->name);
    }
    return true;
}

static void zstd_in_close(in_stream *s)
{
    zstd_in *z = (zstd_in *)s;

    in_close(z->src);
    ZSTD_freeDCtx(z->dctx);
    free(z->in);
    free(z->name);
    free(z);
}

static const in_stream_ops zstd_in_ops = {zstd_in_read, zstd_in_close};

unsigned zstd_in_frames(const in_stream *s)
{
    return s->ops == &zstd_in_ops ? ((const zstd_in *)s)->frames : 0;
}

in_stream *zstd_in_new(in_stream *src, const char *name, pgd_error *err)
{
    zstd_in *z = xcalloc(1, sizeof(*z));

    z->base.ops = &zstd_in_ops;
    z->src = src;
    z->in_cap = ZSTD_DStreamInSize();
    z->in = xmalloc(z->in_cap);
    z->name = xstrdup(name);
    z->dctx = ZSTD_createDCtx();
    if (z->dctx == NULL) {
        err_set(err, "could not set up zstd decompression for \"%s\"", name);
        zstd_in_close(&z->base);
        return NULL;
    }
    return &z->base;
}
