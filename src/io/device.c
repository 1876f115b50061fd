/*
 * device.c - block-device facts from sysfs.
 *
 *   /sys/dev/block/MAJ:MIN          -> the device's directory
 *   .../partition                   present for a partition; its disk is ".."
 *   <disk>/queue/{logical_block_size,optimal_io_size,rotational}
 *   <disk>/mq/N                     a drive's hardware queues (blk-mq)
 *   <disk>/dm/name                  device-mapper; members in <disk>/slaves/
 *   <disk>/md/{level,raid_disks,chunk_size}   md RAID; members in slaves/
 */
#define _GNU_SOURCE
#include "io/device.h"

#include "util/text.h"

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#define STACK_DEPTH_MAX    8
#define DEVICE_MEMBERS_MAX 64 /* of one dm or md device */

static bool device_read_line(const char *dir, const char *file, char *out, size_t outlen)
{
    char path[PATH_MAX];
    FILE *f;

    str_format(path, sizeof(path), "%s/%s", dir, file);
    f = fopen(path, "r");
    if (f == NULL)
        return false;
    if (fgets(out, (int)outlen, f) == NULL) {
        fclose(f);
        return false;
    }
    fclose(f);
    out[strcspn(out, "\n")] = '\0';
    return true;
}

static uint64_t device_read_u64(const char *dir, const char *file, uint64_t dflt)
{
    char buf[64];

    return device_read_line(dir, file, buf, sizeof(buf)) ? strtoull(buf, NULL, 10) : dflt;
}

static bool device_exists(const char *dir, const char *file)
{
    char path[PATH_MAX];
    struct stat st;

    str_format(path, sizeof(path), "%s/%s", dir, file);
    return stat(path, &st) == 0;
}

/*
 * The entries of dir/sub other than "." and "..": how many (0 when it is absent), and the
 * first `max` of their names into names when it is not NULL.
 */
static unsigned device_list(const char *dir, const char *sub, char (*names)[DEVICE_NAME_MAX],
                            unsigned max)
{
    char path[PATH_MAX];
    unsigned n = 0;
    DIR *d;
    struct dirent *de;

    str_format(path, sizeof(path), "%s/%s", dir, sub);
    d = opendir(path);
    if (d == NULL)
        return 0;
    while ((de = readdir(d)) != NULL && (names == NULL || n < max))
        if (de->d_name[0] != '.') {
            if (names != NULL)
                str_format(names[n], DEVICE_NAME_MAX, "%s", de->d_name);
            n++;
        }
    closedir(d);
    return n;
}

static void device_base_name(const char *dir, char *out, size_t outlen)
{
    char resolved[PATH_MAX];
    const char *slash;

    if (realpath(dir, resolved) == NULL)
        str_format(resolved, sizeof(resolved), "%s", dir);
    slash = strrchr(resolved, '/');
    str_format(out, outlen, "%s", slash ? slash + 1 : resolved);
}

static void device_append(char *stack, size_t len, const char *fmt, const char *a)
{
    size_t n = strlen(stack);

    str_format(stack + n, len - n, fmt, a);
}

/*
 * Walk one device directory: a leaf drive, or a dm/md device whose members
 * are in slaves/. Accumulates drives, rotational, nvme into *f.
 */
static void device_walk(const char *dir, device_facts *f, int depth, bool outermost)
{
    char disk_dir[PATH_MAX], name[DEVICE_NAME_MAX], level[32] = "";
    char slaves[PATH_MAX], names[DEVICE_MEMBERS_MAX][DEVICE_NAME_MAX];
    unsigned members, queues;

    if (depth > STACK_DEPTH_MAX)
        return;
    /* a partition's queue and slaves belong to its disk */
    str_format(disk_dir, sizeof(disk_dir), device_exists(dir, "partition") ? "%s/.." : "%s", dir);
    device_base_name(disk_dir, name, sizeof(name));
    if (outermost) {
        str_format(f->disk, sizeof(f->disk), "%s", name);
        f->logical_block_size =
            (unsigned)device_read_u64(disk_dir, "queue/logical_block_size", 512);
        f->optimal_io_size = device_read_u64(disk_dir, "queue/optimal_io_size", 0);
    }
    if (strlen(f->stack) > 0)
        device_append(f->stack, sizeof(f->stack), " -> %s", name);
    else
        device_append(f->stack, sizeof(f->stack), "%s", name);

    if (device_exists(disk_dir, "dm/name")) {
        f->device_mapper = true;
    } else if (device_read_line(disk_dir, "md/level", level, sizeof(level))) {
        if (f->md_level[0] == '\0') {
            str_format(f->md_level, sizeof(f->md_level), "%s", level);
            f->md_raid_disks = (unsigned)device_read_u64(disk_dir, "md/raid_disks", 0);
            f->md_chunk_size = device_read_u64(disk_dir, "md/chunk_size", 0);
        }
        {
            char desc[96];
            str_format(desc, sizeof(desc), " (%s, %u drives, %llu KiB chunks)", level,
                       (unsigned)device_read_u64(disk_dir, "md/raid_disks", 0),
                       (unsigned long long)device_read_u64(disk_dir, "md/chunk_size", 0) / 1024);
            device_append(f->stack, sizeof(f->stack), "%s", desc);
        }
    }
    str_format(slaves, sizeof(slaves), "%s/slaves", disk_dir);
    members = device_list(disk_dir, "slaves", names, DEVICE_MEMBERS_MAX);
    for (unsigned i = 0; i < members; i++) {
        char member[PATH_MAX];
        str_format(member, sizeof(member), "%s/%s", slaves, names[i]);
        device_walk(member, f, depth + 1, false);
    }
    if (members > 0)
        return;
    /* a leaf: a drive */
    f->drives++;
    queues = device_list(disk_dir, "mq", NULL, 0);
    if (queues > 0 && (f->queues == 0 || queues < f->queues))
        f->queues = queues;
    if (device_read_u64(disk_dir, "queue/rotational", 0) == 1)
        f->rotational = true;
    if (strncmp(name, "nvme", 4) != 0)
        f->nvme = false;
    if (strncmp(name, "vd", 2) == 0)
        f->virtio = true;
}

bool device_facts_for_dev(const char *sysfs_root, unsigned major, unsigned minor, device_facts *out,
                          pgd_error *err)
{
    char dir[PATH_MAX];
    struct stat st;

    memset(out, 0, sizeof(*out));
    str_format(dir, sizeof(dir), "%s/dev/block/%u:%u", sysfs_root, major, minor);
    if (stat(dir, &st) != 0)
        return err_errno(err, errno, "no block device %u:%u in \"%s/dev/block\"", major, minor,
                         sysfs_root);
    device_base_name(dir, out->name, sizeof(out->name));
    out->nvme = true; /* until a drive says otherwise */
    device_walk(dir, out, 0, true);
    if (out->drives == 0) {
        out->drives = 1;
        out->nvme = false;
    }
    if (out->logical_block_size == 0)
        out->logical_block_size = 512;
    return true;
}

bool device_facts_for_path(const char *sysfs_root, const char *path, device_facts *out,
                           pgd_error *err)
{
    struct stat st;

    if (stat(path, &st) != 0)
        return err_errno(err, errno, "could not stat \"%s\"", path);
    if (!device_facts_for_dev(sysfs_root, major(st.st_dev), minor(st.st_dev), out, err)) {
        err_prefix(err, "could not find the block device of \"%s\"", path);
        return false;
    }
    return true;
}
