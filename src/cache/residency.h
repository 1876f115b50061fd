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
 * The pages of the open file `fd` that the kernel evicted from the page cache and that were not
 * read back since (cachestat(2)'s nr_evicted: reclaim leaves a shadow entry, dropping with
 * POSIX_FADV_DONTNEED does not). False when the kernel has no cachestat.
 */
bool residency_evicted_of_fd(int fd, uint64_t *evicted);

/*
 * What the cache report needs of one file, from one open: its size, its
 * per-page residency (vec[i] & 1 for OS page i; malloc'd, NULL for an empty
 * file) and, when the kernel has cachestat(2), the pages evicted since they
 * were cached. With cachestat, mincore(2) is asked only when the file is
 * partly cached: none or all of it, the common cases, are known from the
 * count. *missing (false returned, no error) when the file does not exist.
 * The file is `name` in directory dirfd (AT_FDCWD: a path); `path` names it
 * in errors.
 */
typedef struct residency_pages {
    uint64_t size;
    uint64_t npages;
    unsigned char *vec;
    uint64_t evicted;
    bool from_cachestat;
} residency_pages;

bool residency_pages_of_file(int dirfd, const char *name, const char *path, residency_pages *out,
                             bool *missing, pgd_error *err);

/* Pages (of page_size bytes) in a file of `bytes`, rounding up. */
static inline uint64_t pages_for(uint64_t bytes, uint64_t page_size)
{
    return (bytes + page_size - 1) / page_size;
}

/* 100 * cached / pages; an empty file counts as fully resident. */
double residency_percent(const residency *r);

#endif
