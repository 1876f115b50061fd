/*
 * deadline.h - as polite as possible, and still done within --deadline.
 *
 * The reading threads run on CPU time the database leaves idle (io/politeness.h). On a host
 * whose queries want every CPU that can be too slow for a backup window, so with a deadline
 * reserve threads at normal priority wait beside them (util/work_pool.h), and this controller
 * releases them: when the reading, at the rate it went since the last release (or since it
 * began), would end after its target, the deadline less what the end of the backup needs.
 * One at a time while it is a little behind; all at once when it would need more than twice
 * the time left, or the target has passed: a release is judged only after it has worked a
 * while, and far behind there is no time for one step after another. The share of the CPU
 * grows as the deadline nears, and only then. When every reserve thread works and the
 * reading is still behind, the deadline cannot be met: it goes on at full speed, and the
 * caller says so. Decisions are kept for the log.
 */
#ifndef PGD_DEADLINE_H
#define PGD_DEADLINE_H

#include <stdbool.h>
#include <stdint.h>

#define DEADLINE_SETTLE_S     1.0  /* a rate is judged over at least this long */
#define DEADLINE_MARGIN       0.85 /* behind: the rest would need more than this of what is left */
#define DEADLINE_FAR          2.0  /* far behind: more than this times what is left */
#define DEADLINE_END_MIN_S    1.0  /* kept for the end of the backup (stop, WAL, sentinel)... */
#define DEADLINE_END_SHARE    0.10 /* ...or this share of the deadline, the larger */
#define DEADLINE_STALL_SHARE  0.10 /* no byte read for this share of the time left: behind */
#define DEADLINE_RELEASES_MAX 16

typedef struct deadline_release {
    double at;         /* seconds after the reading began */
    double progress;   /* share of the bytes read by then */
    unsigned released; /* reserve threads working from then on */
} deadline_release;

typedef struct deadline_control {
    double start;     /* when the reading began (clock_seconds) */
    double target;    /* when it must end (clock_seconds) */
    uint64_t total;   /* bytes to read */
    unsigned reserve; /* threads that can be released */
    unsigned released;
    double since; /* the last release, or the start */
    uint64_t done_since;
    bool late; /* everything released, still behind */
    unsigned nreleases;
    deadline_release releases[DEADLINE_RELEASES_MAX];
} deadline_control;

/*
 * backup_start: when the backup began (its deadline counts from there); deadline_s: --deadline;
 * reading_start: now, when the reading begins.
 */
void deadline_init(deadline_control *c, double backup_start, double deadline_s,
                   double reading_start, uint64_t total, unsigned reserve);

/* How many reserve threads should work, given the time and the bytes read so far. */
unsigned deadline_step(deadline_control *c, double now, uint64_t done);

#endif
