/*
 * page_checksum.h - PostgreSQL's data page checksum, and the few page
 * header fields needed to judge a page read from a running cluster.
 *
 * The algorithm is PostgreSQL's (src/include/storage/checksum_impl.h):
 * the 8 KiB page as 32 lanes of 32-bit words, each lane folded with an
 * FNV-1a variant from its own offset basis, two rounds of zeroes, the
 * lanes xor-ed together, the absolute block number xor-ed in, reduced to
 * 16 bits with an offset of one. The checksum field itself (pd_checksum)
 * counts as zero. Words are read in the machine's byte order, as the
 * server wrote them.
 *
 * Page header layout used here (PageHeaderData): pd_lsn (two 32-bit
 * halves, high first) at 0, pd_checksum (16 bits) at 8, pd_upper at 14.
 */
#ifndef PGD_PAGE_CHECKSUM_H
#define PGD_PAGE_CHECKSUM_H

#include <stdbool.h>
#include <stdint.h>

#include "pg/relfile.h"

/* The checksum PostgreSQL would store in the page at absolute block `blkno`. */
uint16_t page_checksum_compute(const unsigned char *page, uint32_t blkno);

/* The checksum stored in the page header. */
uint16_t page_checksum_stored(const unsigned char *page);

/* The page's LSN (pd_lsn). */
uint64_t page_checksum_lsn(const unsigned char *page);

/* Every byte zero: a page the relation was extended by but nothing was written to. */
bool page_checksum_is_zero(const unsigned char *page);

/* Absolute block number of the page at byte `offset` of segment `segment`. */
static inline uint32_t page_checksum_block(uint32_t segment, uint64_t offset)
{
    return (uint32_t)((uint64_t)segment * PG_SEGMENT_PAGES + offset / PG_PAGE_SIZE);
}

#endif
