/*
 * cpu_load.h - how busy the machine's CPUs are, and how much of that is other
 * processes: /proc/stat's all-CPU line against this process's own CPU time.
 * What --max-rate auto reads every quarter of a second.
 */
#ifndef PGD_CPU_LOAD_H
#define PGD_CPU_LOAD_H

#include <stdbool.h>
#include <stdint.h>

#include "util/error.h"

typedef struct cpu_sample {
    uint64_t busy;  /* ticks of all CPUs in user, nice and system mode (every process, us too) */
    uint64_t idle;  /* ticks idle or waiting for I/O */
    uint64_t total; /* every tick counted, interrupts and steal included */
    double own_s;   /* CPU seconds of this process, all its threads */
    double at;      /* monotonic seconds */
} cpu_sample;

/* What one interval between two samples says. */
typedef struct cpu_interval {
    double others_cpus; /* CPUs' worth of time other processes ran (2.0: two CPUs busy) */
    /* how far off others_cpus may be: busy time is counted in ticks, one tick per CPU either way
     * (0.2 CPUs over 0.1 s on two CPUs at 100 ticks/s; 0.08 over 0.25 s) */
    double others_margin;
    double idle_share; /* share of all CPU time nobody wanted, 0..1 */
    double seconds;
} cpu_interval;

/* Parse /proc/stat's text (its "cpu " line); false when it has none. */
bool cpu_sample_parse(const char *text, cpu_sample *s);
/* Read /proc/stat and this process's CPU time now. */
bool cpu_sample_read(cpu_sample *s, pgd_error *err);
/* What happened between `a` and the later `b`; ticks_per_s is sysconf(_SC_CLK_TCK). */
cpu_interval cpu_interval_between(const cpu_sample *a, const cpu_sample *b, double ticks_per_s);

#endif
