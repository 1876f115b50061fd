/*
 * tune.c - the auto-tuning rule (see tune.h).
 */
#include "io/tune.h"

#include <stdio.h>

void tune_decide(const device_facts *dev, unsigned cpus, unsigned block_count_max,
                 tune_decision *out)
{
    unsigned drives = dev->drives ? dev->drives : 1;
    unsigned streams = dev->nvme ? cpus : cpus / 2;

    out->block_count = drives * TUNE_BLOCKS_PER_DRIVE;
    if (out->block_count > block_count_max)
        out->block_count = block_count_max;
    /* virtio disks report rotational = 1 by default whatever backs them */
    bool spinning = dev->rotational && !dev->virtio;
    unsigned ahead = spinning ? TUNE_READAHEAD_ROTATIONAL : TUNE_READAHEAD_SSD;

    if (streams < 1)
        streams = 1;
    out->streams = streams;
    out->concurrency = streams * ahead;
    if (out->concurrency < TUNE_CONCURRENCY_MIN)
        out->concurrency = TUNE_CONCURRENCY_MIN;
    snprintf(out->why, sizeof(out->why),
             "%u drive%s x 1 MiB per read; %s: %u stream%s (%s %u vCPU%s, at least one), each "
             "%u reads ahead (%s)",
             drives, drives == 1 ? "" : "s", dev->nvme ? "all NVMe" : "not all NVMe", streams,
             streams == 1 ? "" : "s", dev->nvme ? "one per each of" : "one per two of", cpus,
             cpus == 1 ? "" : "s", ahead,
             spinning      ? "rotational"
             : dev->virtio ? "virtio: its rotational flag says nothing"
                           : "solid state");
}

bool tune_queue_note(const device_facts *dev, unsigned cpus, char *out, size_t outlen)
{
    char where[32] = "one vCPU";

    if (dev->queues == 0) {
        snprintf(out, outlen, "hardware queues unknown (none in sysfs)");
        return false;
    }
    if (dev->queues >= cpus) {
        snprintf(out, outlen,
                 "%u hardware queue%s for %u vCPU%s: each read completes near the vCPU "
                 "that asked",
                 dev->queues, dev->queues == 1 ? "" : "s", cpus, cpus == 1 ? "" : "s");
        return false;
    }
    if (dev->queues > 1)
        snprintf(where, sizeof(where), "%u of them", dev->queues);
    snprintf(out, outlen,
             "%u hardware queue%s for %u vCPUs: every read completes with an interrupt on %s, and "
             "queries running there pay for the reading whatever the backup's CPU or I/O class",
             dev->queues, dev->queues == 1 ? "" : "s", cpus, where);
    return true;
}
