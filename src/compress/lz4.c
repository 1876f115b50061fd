/*
 * lz4.c - LZ4 frame format (what the lz4 command line tool reads), with or
 * without the frame's content checksum (compress.h says who wants which).
 *
 * Blocks are independent (no match reaches into the block before) and
 * whole 1 MiB pieces are compressed straight from the caller's buffer: LZ4F
 * copies into its own buffer only what does not fill a block. A piece that
 * would join bytes LZ4F holds (a tar header before a file's first read) is
 * preceded by a flush of those bytes as a block of their own; otherwise
 * every byte of a large file was copied once more (7 % of a backup's CPU
 * in perf) and, with linked blocks, 64 KiB of history after every block.
 */
#include "compress/compress.h"

#include <lz4frame.h>
#include <stdlib.h>
#include <string.h>

#include "util/xmalloc.h"

/* Input is fed to LZ4F in pieces of at most this size, which bounds dst. */
#define LZ4_CHUNK       (1024 * 1024)
#define LZ4_IN_BUF_SIZE (256 * 1024)

typedef struct lz4_out {
    out_stream base;
    out_stream *next;
    LZ4F_cctx *cctx;
    LZ4F_preferences_t prefs;
    size_t held; /* bytes LZ4F holds in its own buffer, short of a block */
    char *dst;
    size_t dst_cap;
    char *name;
} lz4_out;

static void lz4_out_free(lz4_out *z)
{
    LZ4F_freeCompressionContext(z->cctx);
    free(z->dst);
    free(z->name);
    free(z);
}

/* What LZ4F holds, out as a block of its own. */
static bool lz4_out_flush(lz4_out *z, pgd_error *err)
{
    size_t n = LZ4F_flush(z->cctx, z->dst, z->dst_cap, NULL);

    if (LZ4F_isError(n))
        return err_set(err, "could not compress \"%s\" with lz4: %s", z->name,
                       LZ4F_getErrorName(n));
    z->held = 0;
    return n == 0 || out_write(z->next, z->dst, n, err);
}

static bool lz4_out_write(out_stream *s, const void *buf, size_t len, pgd_error *err)
{
    lz4_out *z = (lz4_out *)s;
    const char *p = buf;

    while (len > 0) {
        size_t piece = len < LZ4_CHUNK ? len : LZ4_CHUNK;
        size_t n;

        if (piece == LZ4_CHUNK && z->held > 0 && !lz4_out_flush(z, err))
            return false;
        n = LZ4F_compressUpdate(z->cctx, z->dst, z->dst_cap, p, piece, NULL);
        if (LZ4F_isError(n))
            return err_set(err, "could not compress \"%s\" with lz4: %s", z->name,
                           LZ4F_getErrorName(n));
        if (n > 0 && !out_write(z->next, z->dst, n, err))
            return false;
        z->held = (z->held + piece) % LZ4_CHUNK;
        p += piece;
        len -= piece;
    }
    return true;
}

static bool lz4_out_close(out_stream *s, pgd_error *err)
{
    lz4_out *z = (lz4_out *)s;
    size_t n = LZ4F_compressEnd(z->cctx, z->dst, z->dst_cap, NULL);
    bool ok;

    if (LZ4F_isError(n)) {
        err_set(err, "could not finish lz4 frame of \"%s\": %s", z->name, LZ4F_getErrorName(n));
        out_abort(z->next);
        lz4_out_free(z);
        return false;
    }
    ok = out_write(z->next, z->dst, n, err);
    if (ok)
        ok = out_close(z->next, err);
    else
        out_abort(z->next);
    lz4_out_free(z);
    return ok;
}

static void lz4_out_abort(out_stream *s)
{
    lz4_out *z = (lz4_out *)s;

    out_abort(z->next);
    lz4_out_free(z);
}

static const out_stream_ops lz4_out_ops = {lz4_out_write, lz4_out_close, lz4_out_abort};

out_stream *lz4_out_new(int level, bool frame_checksum, out_stream *next, const char *name,
                        pgd_error *err)
{
    lz4_out *z = xcalloc(1, sizeof(*z));
    size_t n;

    z->name = xstrdup(name);
    z->base.ops = &lz4_out_ops;
    z->next = next;
    z->prefs.frameInfo.blockSizeID = LZ4F_max1MB; /* LZ4_CHUNK */
    z->prefs.frameInfo.blockMode = LZ4F_blockIndependent;
    z->prefs.frameInfo.contentChecksumFlag =
        frame_checksum ? LZ4F_contentChecksumEnabled : LZ4F_noContentChecksum;
    z->prefs.compressionLevel = level == COMPRESS_LEVEL_DEFAULT ? 0 : level;
    z->dst_cap = LZ4F_compressBound(LZ4_CHUNK, &z->prefs);
    if (z->dst_cap < LZ4F_HEADER_SIZE_MAX)
        z->dst_cap = LZ4F_HEADER_SIZE_MAX;
    z->dst = xmalloc(z->dst_cap);
    if (LZ4F_isError(LZ4F_createCompressionContext(&z->cctx, LZ4F_VERSION))) {
        err_set(err, "could not set up lz4 compression for \"%s\"", name);
        lz4_out_abort(&z->base);
        return NULL;
    }
    n = LZ4F_compressBegin(z->cctx, z->dst, z->dst_cap, &z->prefs);
    if (LZ4F_isError(n) || !out_write(next, z->dst, n, err)) {
        err_set(err, "could not start lz4 frame for \"%s\"", name);
        lz4_out_abort(&z->base);
        return NULL;
    }
    return &z->base;
}

typedef struct lz4_in {
    in_stream base;
    in_stream *src;
    LZ4F_dctx *dctx;
    char *in;
    size_t in_pos, in_len;
    size_t hint;     /* 0 once a frame is complete */
    unsigned frames; /* frames completed, skippable ones too; at most 2 */
    bool started, src_eof;
    char *name;
} lz4_in;

static bool lz4_in_read(in_stream *s, void *buf, size_t len, size_t *n, pgd_error *err)
{
    lz4_in *z = (lz4_in *)s;

    *n = 0;
    while (*n == 0 && len > 0) {
        size_t dst_size = len, src_size;
        bool drained;

        if (z->in_pos == z->in_len && !z->src_eof) {
            if (!in_read(z->src, z->in, LZ4_IN_BUF_SIZE, &z->in_len, err))
                return false;
            z->in_pos = 0;
            z->src_eof = z->in_len == 0;
        }
        drained = z->src_eof && z->in_pos == z->in_len;
        if (drained && z->started && z->hint == 0)
            return true;
        if (drained && !z->started)
            return err_set(err, "\"%s\" is truncated: the lz4 frame does not end", z->name);
        src_size = z->in_len - z->in_pos;
        z->hint = LZ4F_decompress(z->dctx, buf, &dst_size, z->in + z->in_pos, &src_size, NULL);
        if (LZ4F_isError(z->hint))
            return err_set(err, "could not decompress \"%s\" (corrupt lz4 data): %s", z->name,
                           LZ4F_getErrorName(z->hint));
        z->started = true;
        z->frames += z->hint == 0 && z->frames < 2; /* 2: "more than one" */
        z->in_pos += src_size;
        *n = dst_size;
        if (drained && dst_size == 0 && z->hint != 0)
            return err_set(err, "\"%s\" is truncated: the lz4 frame does not end", z->name);
    }
    return true;
}

static void lz4_in_close(in_stream *s)
{
    lz4_in *z = (lz4_in *)s;

    in_close(z->src);
    LZ4F_freeDecompressionContext(z->dctx);
    free(z->in);
    free(z->name);
    free(z);
}

static const in_stream_ops lz4_in_ops = {lz4_in_read, lz4_in_close};

unsigned lz4_in_frames(const in_stream *s)
{
    return s->ops == &lz4_in_ops ? ((const lz4_in *)s)->frames : 0;
}

in_stream *lz4_in_new(in_stream *src, const char *name, pgd_error *err)
{
    lz4_in *z = xcalloc(1, sizeof(*z));

    z->base.ops = &lz4_in_ops;
    z->src = src;
    z->in = xmalloc(LZ4_IN_BUF_SIZE);
    z->name = xstrdup(name);
    if (LZ4F_isError(LZ4F_createDecompressionContext(&z->dctx, LZ4F_VERSION))) {
        err_set(err, "could not set up lz4 decompression for \"%s\"", name);
        lz4_in_close(&z->base);
        return NULL;
    }
    return &z->base;
}
