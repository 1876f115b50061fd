/*
 * dio_reader.h - read a file with O_DIRECT into aligned buffers.
 *
 * Direct I/O bypasses the page cache: what the backup reads is neither added
 * to the cache nor pushes out what PostgreSQL had there. The kernel demands
 * that buffer address, file offset and length be multiples of the device's
 * logical block size; we use DIO_ALIGN, which covers every common device.
 * The last read of a file returns fewer bytes (its tail need not be a
 * multiple of the block size): that is the normal end of file.
 *
 * When the file system refuses O_DIRECT (EINVAL: tmpfs, some FUSE/ZFS) the
 * reader falls back to buffered reads and says so in its mode.
 */
#ifndef PGD_DIO_READER_H
#define PGD_DIO_READER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "util/error.h"

#define DIO_ALIGN  4096
#define BLOCK_SIZE 4096 /* unit of --block-count */

typedef enum {
    READ_MODE_DIRECT,        /* O_DIRECT */
    READ_MODE_BUFFERED,      /* plain buffered reads, asked for (--direct-io=off) */
    READ_MODE_FALLBACK,      /* O_DIRECT refused by the file system: cache-neutral reads */
    READ_MODE_CACHE_NEUTRAL, /* buffered reads that leave the cache as found, asked for */
} read_mode;

/* Buffered reads that drop afterwards only the pages that were not cached before. */
static inline bool read_mode_cache_neutral(read_mode m)
{
    return m == READ_MODE_FALLBACK || m == READ_MODE_CACHE_NEUTRAL;
}

const char *read_mode_name(read_mode mode);

typedef struct dio_file {
    int fd;
    const char *path; /* borrowed, for messages */
    read_mode mode;
    uint64_t offset;
    bool eof;
} dio_file;

/*
 * Memory aligned for direct I/O; size is rounded up to DIO_ALIGN. Never NULL (a failed allocation
 * ends the process, util/big_buffer.h). Free with free().
 */
void *dio_buffer_alloc(size_t size);

/*
 * Open `path` for reading in mode `want` (DIRECT, BUFFERED or
 * CACHE_NEUTRAL). DIRECT becomes FALLBACK when the file system refuses
 * O_DIRECT. Returns false with *missing = true (and no error) when the file
 * does not exist.
 */
bool dio_file_open(dio_file *f, const char *path, read_mode want, bool *missing, pgd_error *err);

/*
 * Read up to `len` bytes (a multiple of DIO_ALIGN, into an aligned buffer)
 * at the current offset. *nread < len only at end of file; 0 means EOF.
 */
bool dio_file_read(dio_file *f, void *buf, size_t len, size_t *nread, pgd_error *err);

void dio_file_close(dio_file *f);

#endif
