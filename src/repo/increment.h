/*
 * increment.h - the increment format: the pages of one relation file that a
 * delta backup stores, with the block numbers they belong at and the size
 * the file has at that backup. One increment is one tar entry, named
 * <dir>/INCREMENTAL.<name> (as PostgreSQL 17 names its own).
 *
 * All integers little-endian:
 *   offset  size  field
 *   0       8     magic "PGDINC1\0"
 *   8       4     page_size (8192)
 *   12      4     block_count K
 *   16      8     file_size: bytes of the relation file at this backup
 *   24      8     threshold_lsn: the parent's start LSN (pages with an LSN
 *                 at or after it were taken)
 *   32      4*K   block numbers, strictly ascending, relative to this
 *                 segment file, each < ceil(file_size / page_size)
 *   32+4K   4     header_crc: CRC-32C of bytes [0, 32+4K)
 *   36+4K   8192*K the pages, in the order of the block numbers
 *   end-4   4     pages_crc: CRC-32C of the K pages
 * Size: 40 + 4K + 8192K.
 *
 * To reassemble a file by hand: start from the file as the parent backup
 * restores it, cut or extend it to file_size, and write page i at offset
 * block[i] * 8192.
 */
#ifndef PGD_INCREMENT_H
#define PGD_INCREMENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "pg/relfile.h"
#include "util/error.h"

#define INCREMENT_MAGIC      "PGDINC1"
#define INCREMENT_MAGIC_LEN  8
#define INCREMENT_PAGE_SIZE  ((uint32_t)PG_PAGE_SIZE) /* a PostgreSQL page: BLCKSZ */
#define INCREMENT_FIXED_SIZE 32u                      /* magic .. threshold_lsn */
#define INCREMENT_CRC_SIZE   4u
/* the tar entry name of an increment: <dir>/INCREMENTAL.<name> */
#define INCREMENT_TAR_PREFIX "INCREMENTAL."

/* Bytes before the first page: fixed fields, block numbers, header_crc. */
uint64_t increment_header_size(uint32_t blocks);
/* Bytes of a whole increment of `blocks` pages. */
uint64_t increment_size(uint32_t blocks);
/* Pages a file of `file_size` bytes has, the last partial one counted. */
uint64_t increment_file_pages(uint64_t file_size);
/*
 * The file a tar entry named "dir/INCREMENTAL.name" is an increment of
 * ("dir/name") into out; false when the entry is not an increment's.
 */
bool increment_file_path(const char *tar_path, char *out, size_t outlen);

/*
 * Write the header of an increment (increment_header_size(nblocks) bytes)
 * into buf. block[] must be strictly ascending and below the file's page
 * count; false with err set otherwise (a bug of the caller, never written).
 */
bool increment_encode_header(unsigned char *buf, uint64_t file_size, uint64_t threshold_lsn,
                             const uint32_t *block, uint32_t nblocks, pgd_error *err);
/* The 4 bytes that end an increment: the CRC-32C of its pages (crc32c_final'd). */
void increment_encode_trailer(unsigned char buf[INCREMENT_CRC_SIZE], uint32_t pages_crc);

/*
 * Called for each page as it is decoded, in block order. The pages CRC is
 * checked only at increment_reader_finish: whatever a callback did with the
 * pages of an increment that then fails must be thrown away by the caller.
 */
typedef bool (*increment_page_fn)(void *arg, uint32_t block, const unsigned char *page,
                                  pgd_error *err);

typedef struct increment_reader {
    char *what; /* names the file in errors */
    uint64_t expect_size, expect_file_size;
    uint32_t expect_blocks;
    bool check_expect;
    /* decoded header */
    uint32_t nblocks;
    uint64_t file_size, threshold_lsn;
    uint32_t *block;    /* the block numbers read so far */
    uint32_t block_cap; /* room in block[], at most nblocks */
    /* stream state */
    uint64_t consumed; /* bytes fed so far */
    unsigned char fixed[INCREMENT_FIXED_SIZE];
    uint32_t header_crc; /* running, over [0, 32+4K) */
    uint32_t pages_crc;  /* running, over the pages */
    unsigned char *page; /* the page being assembled */
    uint32_t page_fill, next_page;
    unsigned char tail[INCREMENT_CRC_SIZE];
    bool failed;
} increment_reader;

/*
 * Start decoding the increment of the file `what`. When the manifest says
 * what it holds (stored size, file_size, block count), pass them and set
 * check: a disagreement is an error. A failed allocation ends the process (util/xmalloc.h).
 */
void increment_reader_init(increment_reader *r, const char *what, bool check, uint64_t stored_size,
                           uint64_t file_size, uint32_t blocks);
/* Feed the next bytes, in any chunking; fn gets each complete page. */
bool increment_reader_feed(increment_reader *r, const void *data, size_t len, increment_page_fn fn,
                           void *arg, pgd_error *err);
/* After the last byte: the increment must be complete and its pages CRC match. */
bool increment_reader_finish(increment_reader *r, pgd_error *err);
void increment_reader_free(increment_reader *r);

#endif
