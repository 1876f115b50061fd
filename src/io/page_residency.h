/*
 * page_residency.h - which pages of an open file are in the OS page cache,
 * range by range, and dropping only the pages a read brought in.
 *
 * This is what makes a buffered read cache-neutral (dio_reader.h: where
 * O_DIRECT is refused, or asked for): before a range is read, note which
 * of its pages were cached (mincore(2) on a read-only mapping of the file,
 * kept for the file's life so each range costs one system call); after
 * the bytes are used, POSIX_FADV_DONTNEED only the others. A page that
 * PostgreSQL had cached stays cached.
 *
 * The same mapping answers "how much of this file is cached" for `pgdirect
 * cache` (src/cache/residency.c maps and mincores whole files the same way
 * and can use this module).
 */
#ifndef PGD_PAGE_RESIDENCY_H
#define PGD_PAGE_RESIDENCY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "util/error.h"

typedef struct page_residency {
    int fd;    /* borrowed */
    void *map; /* NULL for an empty file */
    size_t len;
} page_residency;

/* The size of an OS page (sysconf, looked up once). */
size_t page_residency_page_size(void);

/* Bytes of residency vector for `len` bytes: one per OS page, rounding up. */
size_t page_residency_vector_len(size_t len);

/*
 * Map the first `len` bytes of the open file `fd` (`path` names it in
 * errors) and stop the kernel's readahead on it: pages read ahead of a
 * range would look cached-before to the next one.
 */
bool page_residency_open(page_residency *r, int fd, uint64_t len, const char *path, pgd_error *err);

/*
 * Residency of the pages of [offset, offset + len): vec[i] & 1 for page i.
 * Pages beyond the mapping (the file grew) count as cached, so they are
 * never dropped.
 */
void page_residency_note(const page_residency *r, uint64_t offset, size_t len, unsigned char *vec);

/* Drop the pages of [offset, offset + len) that `before` (from page_residency_note) says were not
 * cached. */
void page_residency_drop_new(const page_residency *r, uint64_t offset, size_t len,
                             const unsigned char *before);

void page_residency_close(page_residency *r);

#endif
