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

/* 100 * cached / pages; an empty file counts as fully resident. */
double residency_percent(const residency *r);

#endif
