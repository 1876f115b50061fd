/*
 * tune.h - block size and reads in flight from the storage's shape.
 *
 * The rule that made direct I/O as fast as buffered reads in production:
 * 1 MiB per member drive per read (drives x 256 blocks of 4 KiB), and as
 * many reads in flight as vCPUs on dense NVMe, half the vCPUs otherwise,
 * never fewer than 2.
 */
#ifndef PGD_TUNE_H
#define PGD_TUNE_H

#include "io/device.h"

#define TUNE_BLOCKS_PER_DRIVE 256 /* 1 MiB */
#define TUNE_CONCURRENCY_MIN  2

typedef struct tune_decision {
    unsigned block_count;
    unsigned concurrency;
    char why[256];
} tune_decision;

void tune_decide(const device_facts *dev, unsigned cpus, unsigned block_count_max,
                 tune_decision *out);

#endif
