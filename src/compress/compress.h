/*
 * compress.h - lz4, zstd and none behind one interface: a compressing
 * out_stream filter and a decompressing in_stream filter.
 *
 * Whether a frame carries the codec's own checksum of its content (lz4's
 * XXH32 content checksum, zstd's XXH64 checksum flag) is the caller's
 * choice, made by the constructor it calls:
 *   - compress_out_new: no frame checksum. For content that our own CRC-32C
 *     already covers: a backup partition has a CRC-32C of every file it
 *     holds and one of its stored (compressed) bytes, both checked on
 *     restore. A second checksum of the same bytes cost half the CPU of an
 *     lz4 backup (measured with perf record; bench/compress_checksum.sh measures it).
 *   - compress_out_new_trailed: no frame checksum either, but a trailer
 *     after the frame with the CRC-32C and size of the content, in a
 *     skippable frame the lz4 and zstd tools pass over (trailer.c). For
 *     objects with no CRC of ours elsewhere (archived WAL): the CRC-32C runs
 *     at memory speed where XXH32 took a third of an lz4 wal-fetch's CPU.
 * Decompression reads every kind, and checks the frame checksum when the
 * frame has one (backups and WAL written before these choices have it);
 * decompress_in_new_trailed also wants the trailer, or a frame checksum.
 */
#ifndef PGD_COMPRESS_H
#define PGD_COMPRESS_H

#include <stdbool.h>
#include <stdint.h>

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

/* `name` names the object in error messages. All three take ownership of next/src. */
out_stream *compress_out_new(compress_kind kind, int level, out_stream *next, const char *name,
                             pgd_error *err);
out_stream *compress_out_new_trailed(compress_kind kind, int level, out_stream *next,
                                     const char *name, pgd_error *err);
in_stream *decompress_in_new(compress_kind kind, in_stream *src, const char *name, pgd_error *err);
/*
 * Fails, naming `name`, at the end of an object whose content is not what
 * its trailer says, or that has neither a trailer nor a frame checksum
 * (cut short after its frame). COMPRESS_NONE: src as it is.
 */
in_stream *decompress_in_new_trailed(compress_kind kind, in_stream *src, const char *name,
                                     pgd_error *err);
/*
 * The CRC-32C and size of the content a stream from decompress_in_new_trailed
 * gave, once it has given all of it and its end checked out; false for any
 * other stream (COMPRESS_NONE gives src itself), or before that end. A
 * caller that records the content's CRC takes it here instead of computing it
 * a second time.
 */
bool decompress_in_trailed_sum(const in_stream *s, uint32_t *crc, uint64_t *size);
/* Is s a stream from decompress_in_new_trailed that checks (not COMPRESS_NONE's src)? */
bool decompress_in_is_trailed(const in_stream *s);

/* Per-codec constructors used by the dispatch above (frame_checksum: the codec's own). */
out_stream *lz4_out_new(int level, bool frame_checksum, out_stream *next, const char *name,
                        pgd_error *err);
in_stream *lz4_in_new(in_stream *src, const char *name, pgd_error *err);
/*
 * Frames a decompressing stream of that codec has read to their end, skippable ones too: 0, 1,
 * or 2 for more than one (the count stops there, so it cannot wrap).
 */
unsigned lz4_in_frames(const in_stream *s);
out_stream *zstd_out_new(int level, bool frame_checksum, out_stream *next, const char *name,
                         pgd_error *err);
in_stream *zstd_in_new(in_stream *src, const char *name, pgd_error *err);
unsigned zstd_in_frames(const in_stream *s);

#endif
