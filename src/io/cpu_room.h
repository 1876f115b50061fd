/*
 * cpu_room.h - how much of the CPU the rest of the host leaves to the backup: --cpu-class auto.
 *
 * Measured side by side (bench/results/2026-12-06-cpu-room/): beside lookups that want every
 * vCPU, reading threads in the idle CPU class (SCHED_IDLE) keep the queries' p99 near its
 * baseline, and reading threads at normal priority do not. Beside lookups that want half the
 * vCPUs, the idle class keeps nothing: the queries' p99 rose as much (1.43x against 1.30x its
 * baseline), and the backup took 1.47x as long, its thread preempted by every waking query.
 * So reading threads run at normal priority for the vCPUs the rest of the host leaves free,
 * and in the idle class beside them:
 *
 *   - before the reading, from what the other processes used since the backup began (the
 *     checkpoint's wait, at least CPU_ROOM_START_S of it): one reserve reading thread
 *     (backup/pipeline.h) at normal priority for each whole vCPU the others left idle
 *     (CPU_ROOM_STREAM of one counts: saturated hosts left 0.0-0.2 of a vCPU, half-loaded
 *     ones of 2 vCPUs 0.4-0.9), in place of one of the plan's, which read in the idle
 *     class (so that there are as many streams as the plan's or the room's). /proc/stat's
 *     idle time is exact enough for a short window (steady spinning loads of 0, 1 and 2 vCPUs
 *     read as 1.90-2.00, 0.95-1.00 and 0.00 vCPUs left over 0.1 s). Not with the reading under
 *     way: the reading slows the others whatever its class (beside queries that wanted both
 *     vCPUs they ran 20-30 % fewer of them with idle-class readers alone), so they use less
 *     CPU than they want, and saturated hosts measured 0.4 of a vCPU left instead of 0.0-0.2
 *     (bench/results/2026-12-06-room-at-once/);
 *   - during it, each reading thread at normal priority looks at its own scheduler counters
 *     once every CPU_ROOM_WINDOW_S: when it waited for a CPU more than CPU_ROOM_WAIT of the
 *     time it wanted one, other processes want the CPU it holds, and it moves to the idle
 *     class. Half the time is the line: at a fair share, a thread waits that much when there
 *     are twice as many runnable threads as vCPUs. Measured here over 2 s windows
 *     (bench/results/2026-12-06-cpu-room/), a reader at normal priority waited 43-48 % of
 *     the time beside queries that want every vCPU, and 17-45 % beside queries that want
 *     half of them: on these 2 vCPUs the two overlap, and a lower line moved readers at half
 *     load too (the backup then took 1.4-1.6x as long, for nothing). So a load that rises to
 *     just saturated during the reading is not caught; one of twice the vCPUs is. Before the
 *     reading the two loads are told apart well (0.5-0.8 of a vCPU left at half load, 0.0-0.2
 *     saturated). A
 *     thread cannot come back from the idle class without privilege (sched(7)), so this goes
 *     one way; a deadline's reserve threads (io/deadline.h) are what adds CPU later. The
 *     machine's idle time was tried first: with a reader at normal priority the half-loaded
 *     host was only 5-7 % idle, too near nothing to tell it from a saturated one.
 *
 * Times are the kernel's CPU accounting (/proc/stat, /proc/self/stat in clock ticks,
 * /proc/thread-self/schedstat in nanoseconds).
 */
#ifndef PGD_CPU_ROOM_H
#define PGD_CPU_ROOM_H

#include <stdbool.h>
#include <stdint.h>

#include "util/error.h"

#define CPU_ROOM_STREAM   0.3  /* vCPUs the others leave idle that make room for a stream */
#define CPU_ROOM_START_S  0.25 /* the room is measured over at least this */
#define CPU_ROOM_WAIT     0.50 /* share of its time a normal reader may wait for a CPU... */
#define CPU_ROOM_WINDOW_S 2.0  /* ...over this */

typedef struct cpu_sample {
    double at;      /* clock_seconds() */
    uint64_t total; /* every CPU's time, all states */
    uint64_t idle;  /* of which idle or waiting for I/O */
    uint64_t self;  /* this process's user and system time */
} cpu_sample;

/* The kernel's counters now; false (err says why) when /proc cannot be read. */
bool cpu_room_sample(cpu_sample *s, pgd_error *err);

/* vCPUs the other processes left idle between a and b (this process's use counts as idle). */
double cpu_room_others_left(const cpu_sample *a, const cpu_sample *b, unsigned cpus);

/* The vCPUs the other processes leave idle over the next `seconds` (sleeping meanwhile). */
bool cpu_room_measure(double seconds, unsigned cpus, double *left, pgd_error *err);

/* Reading streams to run at normal priority, of `streams`, when the others left `left` vCPUs. */
unsigned cpu_room_streams(double left, unsigned streams);

/*
 * The one decision before the reading: how many reserve reading threads read at normal
 * priority, once the backup has run CPU_ROOM_START_S.
 */
typedef struct cpu_room_start {
    double since;      /* clock_seconds() when the backup began */
    cpu_sample t0;     /* the counters then... */
    bool t0_taken;     /* ...when they could be read */
    double forced;     /* >= 0: the vCPUs left, given (tests of what follows); < 0: measured */
    unsigned cpus;     /* online vCPUs */
    bool decided;      /* the rest is known from then on */
    bool known;        /* false: the counters could not be read, no thread joins */
    double left;       /* vCPUs the others left idle since the backup began */
    unsigned normal;   /* reserve threads reading at normal priority */
    double decided_at; /* clock_seconds() */
} cpu_room_start;

/* The counters as the backup begins (unreadable ones: t0_taken false; forced < 0 to measure). */
void cpu_room_start_init(cpu_room_start *r, double forced, unsigned cpus);

/* True once, at the call that decides (`reserve` threads wait); false before CPU_ROOM_START_S. */
bool cpu_room_start_step(cpu_room_start *r, double now, unsigned reserve);

/* A thread's own scheduler counters (/proc/thread-self/schedstat), nanoseconds. */
typedef struct cpu_thread_sample {
    double at;     /* clock_seconds() */
    uint64_t run;  /* on a CPU */
    uint64_t wait; /* runnable, waiting for one */
} cpu_thread_sample;

/* The calling thread's counters now; false when the kernel does not keep them (no schedstats). */
bool cpu_room_thread_sample(cpu_thread_sample *s);

/* Share of the time the thread wanted a CPU between a and b that it waited for one. */
double cpu_room_wait_share(const cpu_thread_sample *a, const cpu_thread_sample *b);

/* A reading thread at normal priority, judging itself once a window. */
typedef struct cpu_contention {
    cpu_thread_sample since; /* the window's start */
    bool started;
    /* every window judged, for the log */
    unsigned judged;
    double wait_min, wait_max;
} cpu_contention;

/*
 * Called as the thread works: true when, over the window that just ended, it waited for a CPU
 * more than CPU_ROOM_WAIT of the time it wanted one (others want the CPU it holds: it is to
 * move to the idle class; so too when the kernel keeps no such counters). Cheap until a window
 * has passed: a clock read.
 */
bool cpu_room_contention_step(cpu_contention *c, double now);

/* The same, with the window's end given (tests: a simulated clock and counters). */
bool cpu_room_contention_judge(cpu_contention *c, const cpu_thread_sample *now);

#endif
