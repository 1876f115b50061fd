/*
 * politeness.h - a backup that stays out of the database's way: its reading
 * threads in the idle CPU class (SCHED_IDLE), its reads in the idle I/O
 * class (ioprio); optionally a cgroup weight or a nice value.
 *
 * Why SCHED_IDLE, measured (bench/polite.sh, bench/results): beside two
 * clients of lookups that want both vCPUs, the backup's threads under
 * SCHED_IDLE kept query p99 at 1.15x its baseline and finished in 0.30x
 * pgBackRest's time; nice 19 1.27x, a cgroup of weight 25 1.43x (and needs
 * root), SCHED_BATCH 2.75x, no politeness 1.60x; the CPU pacer that
 * --max-rate auto was kept 0.95x but took 16x pgBackRest's time. A waking
 * query preempts an idle-class thread at once, and the thread still runs
 * whenever a CPU is free. It needs no privilege, but cannot be undone
 * without one: a deadline adds threads at normal priority instead
 * (io/deadline.h).
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

/* The calling thread (and those it starts later) in the idle CPU class, SCHED_IDLE. */
bool politeness_thread_idle(pgd_error *err);

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
