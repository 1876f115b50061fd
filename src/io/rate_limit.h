/*
 * rate_limit.h - a token bucket on bytes read, shared by all readers: each
 * read waits until its bytes are available. Its rate is either fixed
 * (--max-rate BYTES) or paced (--max-rate auto, the default): full speed while
 * other processes leave the CPUs alone, slowed while they keep them busy.
 *
 * The pacer starts unlimited (an idle machine pays nothing for it), first
 * looks at the machine after RATE_PACE_FIRST_S, then every
 * RATE_PACE_INTERVAL_S. Other processes using less than RATE_PACE_QUIET_CPUS
 * of CPU, give or take the tick the count may be off by (cpu_interval's
 * others_margin: 0.2 CPUs at the first look on two CPUs): unlimited.
 * Otherwise, while less than RATE_PACE_IDLE_LOW of the CPUs' time is idle
 * (they want all of it), the rate halves, and drops straight to
 * RATE_PACE_FLOOR from unlimited: a p99 is lost in the first
 * second. While more than RATE_PACE_IDLE_HIGH is idle it grows by a quarter;
 * unlimited stays unlimited until the CPUs are wanted. It never drops below
 * RATE_PACE_FLOOR, so the backup always ends. /proc/stat unreadable mid-run:
 * unlimited from then on, said in the report.
 */
#ifndef PGD_RATE_LIMIT_H
#define PGD_RATE_LIMIT_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "io/cpu_load.h"
#include "util/error.h"

#define RATE_PACE_FIRST_S    0.1
#define RATE_PACE_INTERVAL_S 0.25
#define RATE_PACE_QUIET_CPUS 0.5
#define RATE_PACE_IDLE_LOW   0.10
#define RATE_PACE_IDLE_HIGH  0.25
#define RATE_PACE_FLOOR      (16.0 * 1024 * 1024)
#define RATE_PACE_BINDING    0.9 /* reads came at 90 % of the rate or more: it held them back */

/* What the pacer did over a whole run. */
typedef struct rate_pace_report {
    bool paced;      /* --max-rate auto was on */
    double seconds;  /* from the first read to the report */
    double slowed_s; /* of which the limit held the reads back */
    double lowest;   /* the lowest rate it set, bytes/s (0 when never slowed) */
    double others;   /* the most CPUs' worth other processes used in one interval */
    char lost[256];  /* why the pacer stopped looking mid-run ("": it did not) */
} rate_pace_report;

typedef struct rate_limit {
    double rate; /* bytes per second now; 0: unlimited */
    double tokens, burst, min_burst;
    double last; /* monotonic seconds */
    pthread_mutex_t lock;
    bool unlimited; /* a fixed rate of 0: acquire returns at once (never changes after init) */
    /* --max-rate auto */
    bool paced;
    double ticks_per_s, ceiling, started;
    uint64_t bytes; /* read since the last look */
    cpu_sample sample;
    rate_pace_report report;
} rate_limit;

/* A fixed rate (0: unlimited); `burst` bytes may be read at once. */
void rate_limit_init(rate_limit *rl, uint64_t bytes_per_second, uint64_t burst);
/*
 * A paced rate; reads of up to `max_read` bytes. False (err set, the limiter
 * left unlimited and usable) when the machine's CPU time cannot be read.
 */
bool rate_limit_init_paced(rate_limit *rl, uint64_t max_read, pgd_error *err);
void rate_limit_destroy(rate_limit *rl);
/* Block until `bytes` may be read. */
void rate_limit_acquire(rate_limit *rl, uint64_t bytes);
/* What the pacer did (zeroes for a fixed rate). */
rate_pace_report rate_limit_report(rate_limit *rl);

/*
 * The pacer's rule, alone: the rate after an interval in which the backup read
 * at `achieved` bytes/s under `rate` (0: unlimited). `ceiling` is the fastest
 * it read unlimited so far, kept up to date here.
 */
double rate_pace_next(double rate, const cpu_interval *iv, double achieved, double *ceiling);

#endif
