/*
 * meminfo.h - machine and cgroup memory figures for `pgdirect cache --watch`
 * and the benchmark: MemFree/Cached/Dirty from /proc/meminfo, and the page
 * cache charged to this process's memory cgroup (v1 memory.stat "cache",
 * v2 memory.stat "file").
 */
#ifndef PGD_MEMINFO_H
#define PGD_MEMINFO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "util/error.h"

typedef struct meminfo {
    uint64_t mem_free, cached, dirty; /* bytes */
} meminfo;

bool meminfo_read(meminfo *out, pgd_error *err);

/*
 * Page cache charged to the memory cgroup this process is in. *found is
 * false (no error) when the process is in the root cgroup or no memory
 * controller is mounted.
 */
void cgroup_page_cache(uint64_t *bytes, bool *found, char *cgroup_path, size_t pathlen);

/* Parse "Key:   123 kB" lines (exposed for the unit tests). */
bool meminfo_parse(const char *text, meminfo *out);
/* "cache 123" (v1) or "file 123" (v2) from a memory.stat text. */
bool cgroup_parse_stat(const char *text, bool v2, uint64_t *bytes);

#endif
