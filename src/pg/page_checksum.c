/*
 * page_checksum.c - PostgreSQL's page checksum and page header fields
 * (see page_checksum.h). Written from the description in PostgreSQL's
 * checksum_impl.h; the unit tests check it against pages a server wrote.
 */
#include "pg/page_checksum.h"

#include <string.h>

#include "util/hot_kernel.h"

#define PAGE_CHECKSUM_LANES     32 /* parallel FNV sums: part of the algorithm */
#define PAGE_CHECKSUM_FNV_PRIME 16777619u
#define PAGE_CHECKSUM_MIX_SHIFT 17
#define PAGE_CHECKSUM_ROWS      (PG_PAGE_SIZE / (sizeof(uint32_t) * PAGE_CHECKSUM_LANES))
#define PAGE_CHECKSUM_ZERO_ROWS 2      /* rounds of zeroes for the final mixing */
#define PAGE_CHECKSUM_MODULUS   65535u /* reduce to 16 bits, then + 1: never zero */

/* The offset basis of each lane (PostgreSQL's checksumBaseOffsets). */
static const uint32_t page_checksum_basis[PAGE_CHECKSUM_LANES] = {
    0x5B1F36E9, 0xB8525960, 0x02AB50AA, 0x1DE66D2A, 0x79FF467A, 0x9BB9F8A3, 0x217E7CD2, 0x83E13D2C,
    0xF8D4474F, 0xE39EB970, 0x42C6AE16, 0x993216FA, 0x7B093B5D, 0x98DAFF3C, 0xF718902A, 0x0B1C9CDB,
    0xE58F764B, 0x187636BC, 0x5D7B3BB1, 0xE73DE7DE, 0x92BEC979, 0xCCA6C0B2, 0x304A0979, 0x85AA43D4,
    0x783125BB, 0x6CA8EAA2, 0xE407EAC6, 0x4B5CFC3E, 0x9FBF8C76, 0x15CA20BE, 0xF2CA9FD3, 0x959BD756};

static inline HOT_KERNEL uint32_t page_checksum_comp(uint32_t sum, uint32_t value)
{
    uint32_t tmp = sum ^ value;

    return tmp * PAGE_CHECKSUM_FNV_PRIME ^ (tmp >> PAGE_CHECKSUM_MIX_SHIFT);
}

/* One row of 32 words into the 32 lanes; the compiler vectorises this loop. */
static inline HOT_KERNEL void page_checksum_row(uint32_t *sums, const uint32_t *row)
{
    for (int j = 0; j < PAGE_CHECKSUM_LANES; j++)
        sums[j] = page_checksum_comp(sums[j], row[j]);
}

/* The loop itself, uninstrumented in the checking builds (util/hot_kernel.h). */
static HOT_KERNEL uint16_t page_checksum_kernel(const unsigned char *page, uint32_t blkno)
{
    uint32_t sums[PAGE_CHECKSUM_LANES], row[PAGE_CHECKSUM_LANES], result = 0;
    static const uint32_t zeroes[PAGE_CHECKSUM_LANES];

    memcpy(sums, page_checksum_basis, sizeof(sums));
    /* the first row with pd_checksum zeroed: the page itself is never written to */
    memcpy(row, page, sizeof(row));
    memset((unsigned char *)row + PG_PAGE_CHECKSUM_OFF, 0, sizeof(uint16_t));
    page_checksum_row(sums, row);
    for (size_t i = 1; i < PAGE_CHECKSUM_ROWS; i++) {
        memcpy(row, page + i * sizeof(row), sizeof(row)); /* no alignment assumed */
        page_checksum_row(sums, row);
    }
    for (int i = 0; i < PAGE_CHECKSUM_ZERO_ROWS; i++)
        page_checksum_row(sums, zeroes);
    for (int j = 0; j < PAGE_CHECKSUM_LANES; j++)
        result ^= sums[j];
    result ^= blkno; /* a page moved to another block fails */
    return (uint16_t)(result % PAGE_CHECKSUM_MODULUS + 1);
}

uint16_t page_checksum_compute(const unsigned char *page, uint32_t blkno)
{
    hot_kernel_check(page, PG_PAGE_SIZE);
    return page_checksum_kernel(page, blkno);
}

uint16_t page_checksum_stored(const unsigned char *page)
{
    uint16_t v;

    memcpy(&v, page + PG_PAGE_CHECKSUM_OFF, sizeof(v));
    return v;
}

uint64_t page_checksum_lsn(const unsigned char *page)
{
    uint32_t hi, lo;

    memcpy(&hi, page + PG_PAGE_LSN_OFF, sizeof(hi));
    memcpy(&lo, page + PG_PAGE_LSN_OFF + sizeof(hi), sizeof(lo));
    return (uint64_t)hi << 32 | lo;
}

bool page_checksum_is_zero(const unsigned char *page)
{
    uint16_t upper;

    memcpy(&upper, page + PG_PAGE_UPPER_OFF, sizeof(upper));
    if (upper != 0) /* quick answer for initialised pages */
        return false;
    for (size_t i = 0; i < PG_PAGE_SIZE; i++)
        if (page[i] != 0)
            return false;
    return true;
}
