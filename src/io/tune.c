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
