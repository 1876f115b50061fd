/*
 * compress.c - choose a codec by name or object suffix.
 */
#include "compress/compress.h"

#include <lz4frame.h>
#include <string.h>
#include <zstd.h>

static const struct {
    compress_kind kind;
    const char *name;
    const char *suffix;
    int min_level, max_level;
} codecs[] = {
    {COMPRESS_NONE, "none", "", 0, 0},
    {COMPRESS_LZ4, "lz4", ".lz4", 0, 12},
    {COMPRESS_ZSTD, "zstd", ".zst", 1, 19},
};

#define NCODECS (sizeof(codecs) / sizeof(codecs[0]))

const char *compress_name(compress_kind kind)
{
    return codecs[kind].name;
}

const char *compress_suffix(compress_kind kind)
{
    return codecs[kind].suffix;
}

bool compress_parse(const char *name, compress_kind *out)
{
    for (size_t i = 0; i < NCODECS; i++) {
        if (strcmp(name, codecs[i].name) == 0) {
            *out = codecs[i].kind;
            return true;
        }
    }
    return false;
}

compress_kind compress_from_suffix(const char *object_name)
{
    size_t len = strlen(object_name);

    for (size_t i = 1; i < NCODECS; i++) {
        size_t slen = strlen(codecs[i].suffix);
        if (len > slen && strcmp(object_name + len - slen, codecs[i].suffix) == 0)
            return codecs[i].kind;
    }
    return COMPRESS_NONE;
}

bool compress_level_valid(compress_kind kind, int level, pgd_error *err)
{
    if (level == COMPRESS_LEVEL_DEFAULT)
        return true;
    if (level < codecs[kind].min_level || level > codecs[kind].max_level)
        return err_set(err,
                       "invalid value \"%d\" for option \"--compression-level\": %s accepts "
                       "%d to %d",
                       level, codecs[kind].name, codecs[kind].min_level, codecs[kind].max_level);
    return true;
}

out_stream *compress_out_new(compress_kind kind, int level, out_stream *next, const char *name,
                             pgd_error *err)
{
    switch (kind) {
    case COMPRESS_LZ4:
        return lz4_out_new(level, false, next, name, err);
    case COMPRESS_ZSTD:
        return zstd_out_new(level, false, next, name, err);
    case COMPRESS_NONE:
        break;
    }
    return next;
}

in_stream *decompress_in_new(compress_kind kind, in_stream *src, const char *name, pgd_error *err)
{
    switch (kind) {
    case COMPRESS_LZ4:
        return lz4_in_new(src, name, err);
    case COMPRESS_ZSTD:
        return zstd_in_new(src, name, err);
    case COMPRESS_NONE:
        break;
    }
    return src;
}

size_t compress_memory_estimate(compress_kind kind, int level)
{
    switch (kind) {
    case COMPRESS_LZ4:
        /* output buffer for a 1 MiB input piece, plus the frame context */
        return LZ4F_compressBound(1024 * 1024, NULL) + 256 * 1024;
    case COMPRESS_ZSTD: {
        /* measured: a context that has compressed something holds its tables */
        ZSTD_CCtx *cctx = ZSTD_createCCtx();
        char in[64] = {0}, out[256];
        ZSTD_inBuffer ib = {in, sizeof(in), 0};
        ZSTD_outBuffer ob = {out, sizeof(out), 0};
        size_t bytes;
        if (cctx == NULL)
            return 64 * 1024 * 1024;
        ZSTD_CCtx_setParameter(cctx, ZSTD_c_compressionLevel,
                               level == COMPRESS_LEVEL_DEFAULT ? 3 : level);
        ZSTD_compressStream2(cctx, &ob, &ib, ZSTD_e_flush);
        bytes = ZSTD_sizeof_CCtx(cctx) + ZSTD_CStreamOutSize();
        ZSTD_freeCCtx(cctx);
        return bytes;
    }
    case COMPRESS_NONE:
        break;
    }
    return 0;
}
