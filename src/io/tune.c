/*
 * tune.c - the auto-tuning rule (see tune.h).
 */
#include "io/tune.h"

#include <stdio.h>

void tune_decide(const device_facts *dev, unsigned cpus, unsigned block_count_max,
                 tune_decision *out)
{
    unsigned drives = dev->drives ? dev->drives : 1;
    unsigned conc = dev->nvme ? cpus : cpus / 2;

    out->block_count = drives * TUNE_BLOCKS_PER_DRIVE;
    if (out->block_count > block_count_max)
        out->block_count = block_count_max;
    if (conc < TUNE_CONCURRENCY_MIN)
        conc = TUNE_CONCURRENCY_MIN;
    out->concurrency = conc;
    snprintf(out->why, sizeof(out->why),
             "%u drive%s x 1 MiB per read; %s: %s %u vCPUs, at least %d", drives,
             drives == 1 ? "" : "s", dev->nvme ? "all NVMe" : "not all NVMe",
             dev->nvme ? "one read in flight per each of" : "one read in flight per two of",
             cpus, TUNE_CONCURRENCY_MIN);
}
