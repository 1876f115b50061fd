/*
 * politeness.h - a backup that stays out of the database's way: its reads
 * in the idle I/O class (ioprio), its CPU share cut by a cgroup weight or a
 * nice value.
 */
#ifndef PGD_POLITENESS_H
#define PGD_POLITENESS_H

#include <stdbool.h>
#include <stddef.h>

#include "util/error.h"

typedef struct cpu_cgroup {
    char dir[512];    /* the cgroup we made and moved into, "" when none */
    char parent[512]; /* where we came from */
} cpu_cgroup;

/* ioprio for this process and the threads it starts later. */
bool politeness_io_class(bool idle, pgd_error *err);

/*
 * Move this process into a new cgroup with CPU weight `weight` (1..10000,
 * 100 normal): v2 cpu.weight, v1 cpu.shares (weight x 1024 / 100). Fails
 * with a reason when no writable cpu controller is at hand.
 */
bool politeness_cpu_weight(unsigned weight, cpu_cgroup *cg, pgd_error *err);

/*
 * Raise this process's nice value by `increment` (1..19), for it and the
 * threads it starts later: the unprivileged way to yield the CPU to the
 * database (a cgroup weight needs a writable cgroup).
 */
bool politeness_nice(int increment, pgd_error *err);

/* Move back to the parent cgroup and remove ours. */
void politeness_cpu_release(cpu_cgroup *cg);

#endif
