/*
 * mem_cgroup.h - a memory cgroup with a bound, for the processes of a restore drill (the scratch
 * server, its checks): the page cache they fill is charged to it and reclaimed from it when it
 * reaches the bound, instead of pushing the production cluster's hot pages out of memory.
 *
 * cgroup v1 (memory.limit_in_bytes under /sys/fs/cgroup/memory) where its memory controller is
 * mounted, else v2 (memory.max under this process's own cgroup). Making one needs the right to
 * write there (root, or a delegated subtree): the caller says so and goes on without one.
 */
#ifndef PGD_MEM_CGROUP_H
#define PGD_MEM_CGROUP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "util/error.h"

typedef struct mem_cgroup {
    char dir[512];    /* the cgroup made, "" when none */
    char parent[512]; /* where this process was: it goes back there */
    bool v1;
} mem_cgroup;

/* Make a cgroup bounded to `limit` bytes (named after this process) and move this process in. */
bool mem_cgroup_enter(mem_cgroup *cg, uint64_t limit, pgd_error *err);

/*
 * Remove the cgroups drills killed before they could leave (pgdirect-drill-PID beside where this
 * process's would go, PID no longer running); the number removed. One that cannot be removed (a
 * process still in it) is left, the first such named in `kept` ("" when none).
 */
size_t mem_cgroup_remove_stale(char *kept, size_t keptlen);

/* Page cache charged to it now, in bytes; false when it cannot be read. */
bool mem_cgroup_cache_bytes(const mem_cgroup *cg, uint64_t *bytes);

/*
 * Move this process back, reclaim what the cgroup holds (v1 memory.force_empty; v2 drops it
 * with the group) and remove it. Safe on a cgroup never made.
 */
void mem_cgroup_leave(mem_cgroup *cg);

#endif
