/*
 * compress.h - lz4, zstd and none behind one interface: a compressing
 * out_stream filter and a decompressing in_stream filter.
 *
 * Frames carry their own content checksum (lz4 content checksum, zstd
 * checksum flag), so corruption of a stored object is caught even before
 * the per-file CRC-32C is compared.
 */
#ifndef PGD_COMPRESS_H
#define PGD_COMPRESS_H

#include <stdbool.h>

#include "io/stream.h"
#include "util/error.h"

typedef enum { COMPRESS_NONE, COMPRESS_LZ4, COMPRESS_ZSTD } compress_kind;

#define COMPRESS_LEVEL_DEFAULT (-1000)

const char *compress_name(compress_kind kind);
const char *compress_suffix(compress_kind kind); /* "", ".lz4", ".zst" */
bool compress_parse(const char *name, compress_kind *out);
/* Kind from an object name's suffix; COMPRESS_NONE when it has none. */
compress_kind compress_from_suffix(const char *object_name);
bool compress_level_valid(compress_kind kind, int level, pgd_error *err);

/* Memory one compressing stream of this kind and level uses, for the memory cap. */
size_t compress_memory_estimate(compress_kind kind, int level);

/* `name` names the object in error messages. Both take ownership of next/src. */
out_stream *compress_out_new(compress_kind kind, int level, out_stream *next, const char *name,
                             pgd_error *err);
in_stream *decompress_in_new(compress_kind kind, in_stream *src, const char *name, pgd_error *err);

/* Per-codec constructors used by the dispatch above. */
out_stream *lz4_out_new(int level, out_stream *next, const char *name, pgd_error *err);
in_stream *lz4_in_new(in_stream *src, const char *name, pgd_error *err);
out_stream *zstd_out_new(int level, out_stream *next, const char *name, pgd_error *err);
in_stream *zstd_in_new(in_stream *src, const char *name, pgd_error *err);

#endif
