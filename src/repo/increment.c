/*
 * increment.c - encoder of the increment header and the streaming decoder
 * (format in increment.h). The decoder checks everything it can before it
 * hands a page on: magic, page size, the header CRC, ascending and in-range
 * block numbers, agreement with the manifest; the pages CRC at the end.
 */
#include "repo/increment.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/crc32c.h"
#include "util/xmalloc.h"

#define INCREMENT_OFF_PAGE_SIZE 8
#define INCREMENT_OFF_BLOCKS    12
#define INCREMENT_OFF_FILE_SIZE 16
#define INCREMENT_OFF_LSN       24
#define INCREMENT_BLOCK_NO_SIZE 4u

static void increment_put32(unsigned char *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (unsigned char)(v >> (8 * i));
}

static void increment_put64(unsigned char *p, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        p[i] = (unsigned char)(v >> (8 * i));
}

static uint32_t increment_get32(const unsigned char *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint64_t increment_get64(const unsigned char *p)
{
    return (uint64_t)increment_get32(p) | (uint64_t)increment_get32(p + 4) << 32;
}

uint64_t increment_header_size(uint32_t blocks)
{
    return INCREMENT_FIXED_SIZE + (uint64_t)INCREMENT_BLOCK_NO_SIZE * blocks + INCREMENT_CRC_SIZE;
}

uint64_t increment_size(uint32_t blocks)
{
    return increment_header_size(blocks) + (uint64_t)INCREMENT_PAGE_SIZE * blocks +
           INCREMENT_CRC_SIZE;
}

uint64_t increment_file_pages(uint64_t file_size)
{
    return (file_size + INCREMENT_PAGE_SIZE - 1) / INCREMENT_PAGE_SIZE;
}

bool increment_file_path(const char *tar_path, char *out, size_t outlen)
{
    const char *base = strrchr(tar_path, '/');
    size_t dir_len, prefix = strlen(INCREMENT_TAR_PREFIX);

    base = base == NULL ? tar_path : base + 1;
    /* "INCREMENTAL.." is no increment of "..": what follows the prefix is a file's name */
    if (strncmp(base, INCREMENT_TAR_PREFIX, prefix) != 0 || base[prefix] == '\0' ||
        strcmp(base + prefix, ".") == 0 || strcmp(base + prefix, "..") == 0)
        return false;
    dir_len = (size_t)(base - tar_path);
    if (dir_len + strlen(base + prefix) >= outlen)
        return false;
    memcpy(out, tar_path, dir_len);
    strcpy(out + dir_len, base + prefix);
    return true;
}

bool increment_encode_header(unsigned char *buf, uint64_t file_size, uint64_t threshold_lsn,
                             const uint32_t *block, uint32_t nblocks, pgd_error *err)
{
    uint64_t pages = increment_file_pages(file_size);
    unsigned char *p = buf + INCREMENT_FIXED_SIZE;

    for (uint32_t i = 0; i < nblocks; i++)
        if (block[i] >= pages || (i > 0 && block[i] <= block[i - 1]))
            return err_set(err,
                           "invalid increment: block %u (entry %u) out of order or past %llu pages",
                           block[i], i, (unsigned long long)pages);
    memset(buf, 0, INCREMENT_FIXED_SIZE);
    memcpy(buf, INCREMENT_MAGIC, sizeof(INCREMENT_MAGIC));
    increment_put32(buf + INCREMENT_OFF_PAGE_SIZE, INCREMENT_PAGE_SIZE);
    increment_put32(buf + INCREMENT_OFF_BLOCKS, nblocks);
    increment_put64(buf + INCREMENT_OFF_FILE_SIZE, file_size);
    increment_put64(buf + INCREMENT_OFF_LSN, threshold_lsn);
    for (uint32_t i = 0; i < nblocks; i++, p += INCREMENT_BLOCK_NO_SIZE)
        increment_put32(p, block[i]);
    increment_put32(p, crc32c(buf, (size_t)(p - buf)));
    return true;
}

void increment_encode_trailer(unsigned char buf[INCREMENT_CRC_SIZE], uint32_t pages_crc)
{
    increment_put32(buf, pages_crc);
}

void increment_reader_init(increment_reader *r, const char *what, bool check, uint64_t stored_size,
                           uint64_t file_size, uint32_t blocks)
{
    memset(r, 0, sizeof(*r));
    r->what = xstrdup(what);
    r->page = xmalloc(INCREMENT_PAGE_SIZE);
    r->check_expect = check;
    r->expect_size = stored_size;
    r->expect_file_size = file_size;
    r->expect_blocks = blocks;
    r->header_crc = CRC32C_INIT;
    r->pages_crc = CRC32C_INIT;
}

void increment_reader_free(increment_reader *r)
{
    free(r->what);
    free(r->block);
    free(r->page);
    memset(r, 0, sizeof(*r));
}

static bool increment_reader_fail(increment_reader *r, pgd_error *err, const char *why)
{
    r->failed = true;
    return err_set(err, "invalid increment of file \"%s\": %s", r->what, why);
}

/* The fixed fields are in: check them and make room for the block numbers. */
static bool increment_reader_fixed(increment_reader *r, pgd_error *err)
{
    char why[160];

    if (memcmp(r->fixed, INCREMENT_MAGIC, INCREMENT_MAGIC_LEN) != 0)
        return increment_reader_fail(r, err, "bad magic");
    if (increment_get32(r->fixed + INCREMENT_OFF_PAGE_SIZE) != INCREMENT_PAGE_SIZE) {
        snprintf(why, sizeof(why), "page size %u, expected %u",
                 increment_get32(r->fixed + INCREMENT_OFF_PAGE_SIZE), INCREMENT_PAGE_SIZE);
        return increment_reader_fail(r, err, why);
    }
    r->nblocks = increment_get32(r->fixed + INCREMENT_OFF_BLOCKS);
    r->file_size = increment_get64(r->fixed + INCREMENT_OFF_FILE_SIZE);
    r->threshold_lsn = increment_get64(r->fixed + INCREMENT_OFF_LSN);
    if (r->nblocks > increment_file_pages(r->file_size)) {
        snprintf(why, sizeof(why), "%u blocks in a file of %llu bytes", r->nblocks,
                 (unsigned long long)r->file_size);
        return increment_reader_fail(r, err, why);
    }
    if (r->check_expect && (r->nblocks != r->expect_blocks || r->file_size != r->expect_file_size ||
                            increment_size(r->nblocks) != r->expect_size)) {
        snprintf(why, sizeof(why),
                 "it holds %u blocks of a %llu-byte file, the manifest says %u blocks of a "
                 "%llu-byte file in %llu bytes",
                 r->nblocks, (unsigned long long)r->file_size, r->expect_blocks,
                 (unsigned long long)r->expect_file_size, (unsigned long long)r->expect_size);
        return increment_reader_fail(r, err, why);
    }
    /*
     * r->block grows as the block numbers arrive (increment_reader_block_slot):
     * the count comes from the increment itself, and room for 2^32 - 1 of them
     * before one is read would let a damaged increment make restore or verify
     * ask for 16 GiB (found by fuzz_increment)
     */
    return true;
}

/* Room for block number `i` in r->block, grown by doubling up to the block count. */
static void increment_reader_block_slot(increment_reader *r, uint32_t i)
{
    uint64_t cap = (uint64_t)r->block_cap * 2;

    if (i < r->block_cap)
        return;
    if (cap <= i)
        cap = (uint64_t)i + 1;
    if (cap > r->nblocks)
        cap = r->nblocks;
    r->block_cap = (uint32_t)cap;
    r->block = xrealloc(r->block, (size_t)cap * sizeof(*r->block));
}

/* Block number `i` is complete: check its order and range. */
static bool increment_reader_block_no(increment_reader *r, uint32_t i, pgd_error *err)
{
    char why[160];

    if (r->block[i] >= increment_file_pages(r->file_size)) {
        snprintf(why, sizeof(why), "block %u is past the end of a %llu-byte file", r->block[i],
                 (unsigned long long)r->file_size);
        return increment_reader_fail(r, err, why);
    }
    if (i > 0 && r->block[i] <= r->block[i - 1]) {
        snprintf(why, sizeof(why), "block numbers not ascending (%u after %u)", r->block[i],
                 r->block[i - 1]);
        return increment_reader_fail(r, err, why);
    }
    return true;
}

bool increment_reader_feed(increment_reader *r, const void *data, size_t len, increment_page_fn fn,
                           void *arg, pgd_error *err)
{
    const unsigned char *p = data;

    if (r->failed)
        return err_set(err, "invalid increment of file \"%s\": decoding already failed", r->what);
    while (len > 0) {
        uint64_t pos = r->consumed, hdr_end, pages_end;
        size_t take;

        if (pos < INCREMENT_FIXED_SIZE) {
            take = (size_t)(INCREMENT_FIXED_SIZE - pos) < len ? (size_t)(INCREMENT_FIXED_SIZE - pos)
                                                              : len;
            memcpy(r->fixed + pos, p, take);
            r->header_crc = crc32c_update(r->header_crc, p, take);
            r->consumed += take;
            p += take;
            len -= take;
            if (r->consumed == INCREMENT_FIXED_SIZE && !increment_reader_fixed(r, err))
                return false;
            continue;
        }
        hdr_end = increment_header_size(r->nblocks);
        pages_end = hdr_end + (uint64_t)INCREMENT_PAGE_SIZE * r->nblocks;
        if (pos < hdr_end - INCREMENT_CRC_SIZE) { /* block numbers, a byte at a time is enough */
            uint64_t off = pos - INCREMENT_FIXED_SIZE;
            uint32_t i = (uint32_t)(off / INCREMENT_BLOCK_NO_SIZE);
            unsigned shift = (unsigned)(off % INCREMENT_BLOCK_NO_SIZE) * 8;
            if (shift == 0) {
                increment_reader_block_slot(r, i);
                r->block[i] = 0;
            }
            r->block[i] |= (uint32_t)*p << shift;
            r->header_crc = crc32c_update(r->header_crc, p, 1);
            r->consumed++;
            p++;
            len--;
            if (shift == 24 && !increment_reader_block_no(r, i, err))
                return false;
            continue;
        }
        if (pos < hdr_end) { /* header_crc */
            unsigned k = (unsigned)(pos - (hdr_end - INCREMENT_CRC_SIZE));
            r->tail[k] = *p++;
            len--;
            r->consumed++;
            if (k == INCREMENT_CRC_SIZE - 1 &&
                increment_get32(r->tail) != crc32c_final(r->header_crc))
                return increment_reader_fail(r, err, "header checksum mismatch");
            continue;
        }
        if (pos < pages_end) {
            take =
                INCREMENT_PAGE_SIZE - r->page_fill < len ? INCREMENT_PAGE_SIZE - r->page_fill : len;
            memcpy(r->page + r->page_fill, p, take);
            r->page_fill += (uint32_t)take;
            r->pages_crc = crc32c_update(r->pages_crc, p, take);
            r->consumed += take;
            p += take;
            len -= take;
            if (r->page_fill == INCREMENT_PAGE_SIZE) {
                r->page_fill = 0;
                if (fn != NULL && !fn(arg, r->block[r->next_page], r->page, err)) {
                    r->failed = true;
                    return false;
                }
                r->next_page++;
            }
            continue;
        }
        if (pos < pages_end + INCREMENT_CRC_SIZE) {
            r->tail[pos - pages_end] = *p++;
            len--;
            r->consumed++;
            continue;
        }
        return increment_reader_fail(r, err, "bytes after its end");
    }
    return true;
}

bool increment_reader_finish(increment_reader *r, pgd_error *err)
{
    char why[160];

    if (r->failed)
        return err_set(err, "invalid increment of file \"%s\": decoding failed", r->what);
    if (r->consumed < INCREMENT_FIXED_SIZE || r->consumed != increment_size(r->nblocks)) {
        snprintf(why, sizeof(why), "truncated at %llu bytes", (unsigned long long)r->consumed);
        return increment_reader_fail(r, err, why);
    }
    if (increment_get32(r->tail) != crc32c_final(r->pages_crc))
        return increment_reader_fail(r, err, "pages checksum mismatch");
    return true;
}
