/*
 * residency.h - how much of a file is in the OS page cache.
 *
 * cachestat(2) (Linux >= 6.5, no glibc wrapper) when the kernel has it,
 * else mincore(2) on a read-only mapping. Neither reads the file, so
 * measuring does not change what is measured.
 */
#ifndef PGD_RESIDENCY_H
#define PGD_RESIDENCY_H

#include <stdbool.h>
#include <stdint.h>

#include "util/error.h"

typedef struct residency {
    uint64_t pages;   /* file size in pages */
    uint64_t cached;  /* pages in the page cache */
    uint64_t evicted; /* pages evicted since cached (cachestat only; 0 with mincore) */
    bool from_cachestat;
} residency;

bool residency_of_file(const char *path, residency *out, pgd_error *err);

/*
 * Per-page residency through mincore(2): vec[i] & 1 for OS page i of the
 * file. *npages is the file size in OS pages; *vec is malloc'd (NULL for an
 * empty file). *missing (and no error) when the file does not exist.
 */
bool residency_map(const char *path, unsigned char **vec, uint64_t *npages, bool *missing,
                   pgd_error *err);

/* Pages (of page_size bytes) in a file of `bytes`, rounding up. */
static inline uint64_t pages_for(uint64_t bytes, uint64_t page_size)
{
    return (bytes + page_size - 1) / page_size;
}

/* 100 * cached / pages; an empty file counts as fully resident. */
double residency_percent(const residency *r);

#endif
