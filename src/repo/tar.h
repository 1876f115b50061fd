/*
 * tar.h - pax (POSIX.1-2001) tar, the format of backup partitions.
 *
 * A partition is an ordinary tar archive, so `lz4 -dc part_0001.tar.lz4 |
 * tar x` restores it by hand. Paths longer than the ustar field, sizes of
 * 8 GiB and more and long link targets go into a pax extended header.
 *
 * The reader treats its input as untrusted: header checksums are verified,
 * sizes and numbers parsed strictly; deciding whether a path is safe to
 * create is left to the caller (restore), which knows the target.
 */
#ifndef PGD_TAR_H
#define PGD_TAR_H

#include <stdbool.h>
#include <stdint.h>

#include "io/stream.h"
#include "util/error.h"

#define TAR_BLOCK 512

typedef enum {
    TAR_FILE = '0',
    TAR_HARDLINK = '1',
    TAR_SYMLINK = '2',
    TAR_DIR = '5',
} tar_type;

typedef struct tar_entry {
    char *path;
    char *linkpath; /* symlinks and hard links */
    uint64_t size;
    uint32_t mode;
    int64_t mtime;
    char type;
} tar_entry;

void tar_entry_free(tar_entry *e);

/* Bytes of zero padding after `size` bytes of data. */
static inline uint64_t tar_padding(uint64_t size)
{
    return (TAR_BLOCK - size % TAR_BLOCK) % TAR_BLOCK;
}

/* Header (with a pax extended header first when needed). */
bool tar_write_header(out_stream *out, const tar_entry *e, pgd_error *err);
bool tar_write_zeros(out_stream *out, uint64_t count, pgd_error *err);
/* Two zero blocks: the end-of-archive marker. */
bool tar_write_end(out_stream *out, pgd_error *err);

typedef struct tar_reader {
    in_stream *in; /* borrowed */
    const char *name;
    uint64_t data_left; /* unread data of the current entry */
    uint64_t pad_left;
} tar_reader;

void tar_reader_init(tar_reader *r, in_stream *in, const char *name);

/* Next entry; skips what is left of the previous one. *end at the archive's end. */
bool tar_reader_next(tar_reader *r, tar_entry *e, bool *end, pgd_error *err);

/* Data of the current entry; *n == 0 when it is exhausted. */
bool tar_reader_data(tar_reader *r, void *buf, size_t len, size_t *n, pgd_error *err);

#endif
