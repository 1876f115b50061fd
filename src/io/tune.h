/*
 * tune.h - block size and reads in flight from the storage's shape.
 *
 * The rule that made direct I/O as fast as buffered reads in production:
 * 1 MiB per member drive per read (drives x 256 blocks of 4 KiB), and as
 * many reads in flight as vCPUs on dense NVMe, half the vCPUs otherwise,
 * never fewer than 2. Here the vCPUs count reading streams (a thread each,
 * which also compresses), at least one, each keeping reads ahead of itself:
 * on 2 vCPUs one stream leaves the other vCPU to the database. Two streams
 * there (the rule's minimum taken as streams, until 2026-12-06) finished an
 * idle backup 9 % sooner and raised the queries' p99 more: beside lookups
 * that want both vCPUs 1.26x against 1.12x, at half that load 1.62x against
 * 1.37x (bench/results/2026-12-06-polite-floor/).
 */
#ifndef PGD_TUNE_H
#define PGD_TUNE_H

#include "io/device.h"

#include <stdbool.h>
#include <stddef.h>

#define TUNE_BLOCKS_PER_DRIVE 256 /* 1 MiB */
#define TUNE_CONCURRENCY_MIN  2   /* reads in flight */
/*
 * Reads each reading stream keeps in flight ahead of itself: a stream that
 * waits for one read before asking for the next leaves a solid-state or
 * virtual disk idle for its latency. Not in the production rule; measured
 * on virtio here (bench/results/): 2 in flight reached half of what 16 did.
 */
#define TUNE_READAHEAD_SSD        8
#define TUNE_READAHEAD_ROTATIONAL 2

typedef struct tune_decision {
    unsigned block_count;
    unsigned concurrency;
    unsigned streams; /* reading streams (a reader thread each, which also compresses) */
    char why[256];
} tune_decision;

/*
 * block_count: drives x 256 (capped); concurrency: the rule above, raised to
 * streams x read-ahead, where streams = min(rule, cpus).
 */
void tune_decide(const device_facts *dev, unsigned cpus, unsigned block_count_max,
                 tune_decision *out);

/*
 * What the drives' hardware queues mean for the queries beside a backup:
 * each queue completes its reads with an interrupt on the vCPUs it serves,
 * so with fewer queues than vCPUs every read interrupts the few vCPUs that
 * take them, and the queries running there pay for the reading whatever
 * the backup's CPU or I/O class. Measured on a virtio disk with one queue
 * for 2 vCPUs: the reads alone raised the half-loaded queries' p99 1.3x
 * with them on the interrupts' vCPU, 1.1x with them off it
 * (bench/results/2026-12-06-reads-floor/). Writes the sentence into out;
 * true when the queues are fewer than the vCPUs (worth a line in the log).
 */
bool tune_queue_note(const device_facts *dev, unsigned cpus, char *out, size_t outlen);

#endif
