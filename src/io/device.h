/*
 * device.h - what storage is under a path: the block device behind a
 * file's st_dev, through partitions, device-mapper and md RAID, down to the
 * drives that actually serve the reads. Read from sysfs; the root is a
 * parameter so the unit tests can use captured trees.
 */
#ifndef PGD_DEVICE_H
#define PGD_DEVICE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "util/error.h"

#define DEVICE_NAME_MAX 64

typedef struct device_facts {
    char name[DEVICE_NAME_MAX]; /* the device st_dev names: vda1, md0, dm-0, nvme0n1p2 */
    char disk[DEVICE_NAME_MAX]; /* whole device (partition's parent) */
    char stack[256];            /* e.g. "dm-0 -> md0 (raid0, 4 x 512 KiB chunks) -> nvme0n1..." */
    unsigned logical_block_size;
    uint64_t optimal_io_size;
    bool rotational;   /* any drive rotates */
    bool nvme;         /* every drive is NVMe */
    bool virtio;       /* a virtio disk */
    char md_level[16]; /* outermost md array's level, "" when none */
    unsigned md_raid_disks;
    uint64_t md_chunk_size;
    bool device_mapper;
    unsigned drives; /* drives that serve reads in parallel */
    unsigned queues; /* hardware queues (<disk>/mq/N) of the drive with fewest, 0: unknown; each
                      * completes its reads with an interrupt on one vCPU */
} device_facts;

/* Facts for device major:minor under sysfs_root ("/sys" in production). */
bool device_facts_for_dev(const char *sysfs_root, unsigned major, unsigned minor, device_facts *out,
                          pgd_error *err);

/* Facts for the device holding `path` (stat's st_dev). */
bool device_facts_for_path(const char *sysfs_root, const char *path, device_facts *out,
                           pgd_error *err);

#endif
