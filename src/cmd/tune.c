/*
 * tune.c - `pgdirect tune`: the read size and reads in flight a backup
 * would use here, and every fact behind the decision.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <jansson.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backup/io_plan.h"
#include "cmd/cmd.h"
#include "cmd/common.h"
#include "io/cpu_room.h"
#include "pg/datadir.h"
#include "util/log.h"
#include "util/xmalloc.h"

static const command_help tune_help = {
    CMD_TUNE, "usage: pgdirect tune [--pgdata DIR] [--json]",
    "Show what --block-count auto and --concurrency auto would choose for the data directory\n"
    "and each tablespace (found through pg_tblspc), and the facts behind it: the block device,\n"
    "its RAID layout, drive type, block sizes, and the CPU count."};

static json_t *cmd_tune_place_json(const io_plan_place *p)
{
    const device_facts *d = &p->dev;

    return json_pack("{s:I, s:s, s:{s:s, s:s, s:s, s:i, s:I, s:b, s:b, s:b, s:s, s:i, s:I, s:b, "
                     "s:i, s:i}, s:{s:i, s:I, s:i, s:s}}",
                     "tablespace_oid", (json_int_t)p->oid, "location", p->location, "device",
                     "name", d->name, "disk", d->disk, "stack", d->stack, "logical_block_size",
                     (int)d->logical_block_size, "optimal_io_size", (json_int_t)d->optimal_io_size,
                     "rotational", d->rotational, "nvme", d->nvme, "virtio", d->virtio, "md_level",
                     d->md_level, "md_raid_disks", (int)d->md_raid_disks, "md_chunk_size",
                     (json_int_t)d->md_chunk_size, "device_mapper", d->device_mapper, "drives",
                     (int)d->drives, "queues", (int)d->queues, "decision", "block_count",
                     (int)p->decision.block_count, "read_size", (json_int_t)p->read_size,
                     "concurrency", (int)p->decision.concurrency, "why", p->decision.why);
}

/*
 * The politeness a backup uses by default, and why: what bench/polite.sh measured beside two
 * clients of lookups (io/politeness.h, io/cpu_room.h).
 */
#define TUNE_POLITENESS                                                                            \
    "one reading thread at normal priority for each vCPU the other processes left idle as the "    \
    "backup began, the others in the idle CPU class (SCHED_IDLE), each at normal priority moving " \
    "to the idle class once it waits for a CPU more than half the time (--cpu-class auto); "       \
    "reads in the idle I/O class; no privilege needed"
#define TUNE_POLITENESS_WHY                                                                        \
    "measured beside queries that want every vCPU, the idle class kept their p99 at 1.12-1.22x "   \
    "its baseline (normal priority: 1.75x); beside queries that want half of them, it kept "       \
    "nothing (1.43x against 1.30x at normal priority; the reads alone 1.41x) and took 1.47x as "   \
    "long; --deadline adds reading threads at normal priority when it would end too late"
#define TUNE_ROOM_WINDOW_S 0.5 /* what the vCPUs left now are measured over */

static void cmd_tune_print_queues(const device_facts *d, unsigned cpus)
{
    char note[320];

    tune_queue_note(d, cpus, note, sizeof(note));
    printf("  completions:        %s\n", note);
}

static void cmd_tune_print_plan(const io_plan *plan, unsigned cpus, uint64_t cap, bool json)
{
    pgd_error err = {0};
    double left = 0;
    bool measured = cpu_room_measure(TUNE_ROOM_WINDOW_S, cpus, &left, &err);
    unsigned reserve = cpus > (unsigned)plan->workers ? cpus : (unsigned)plan->workers;
    unsigned normal = measured ? cpu_room_streams(left, reserve) : 0;

    if (json) {
        json_t *root = json_pack(
            "{s:i, s:I, s:i, s:i, s:i, s:s, s:s, s:I}", "cpus", (int)cpus, "max_memory",
            (json_int_t)cap, "concurrency", (int)plan->concurrency, "workers", plan->workers,
            "depth", plan->depth, "io_engine", io_engine_name(plan->engine), "io_engine_why",
            plan->engine_why, "buffer_memory", (json_int_t)plan->memory);
        json_t *places = json_array();
        char *text;
        for (size_t i = 0; i < plan->nplaces; i++)
            json_array_append_new(places, cmd_tune_place_json(&plan->places[i]));
        json_object_set_new(root, "places", places);
        json_object_set_new(
            root, "politeness",
            json_pack("{s:s, s:s, s:o, s:i, s:s}", "cpu_class", "auto", "io_class", "idle",
                      "vcpus_left_now", measured ? json_real(left) : json_null(),
                      "normal_threads_now", (int)normal, "why", TUNE_POLITENESS_WHY));
        text = json_dumps(root, JSON_INDENT(1) | JSON_PRESERVE_ORDER);
        printf("%s\n", text);
        free(text);
        json_decref(root);
        return;
    }
    printf("CPUs: %u; memory cap: %llu MiB (--max-memory auto; half of it for the plan, half for "
           "the reading threads at normal priority that wait to join)\n",
           cpus, (unsigned long long)(cap >> 20));
    for (size_t i = 0; i < plan->nplaces; i++) {
        const io_plan_place *p = &plan->places[i];
        const device_facts *d = &p->dev;
        printf("\n%s %s\n", p->oid ? "tablespace" : "data directory", p->location);
        if (p->oid)
            printf("  oid:                %u\n", p->oid);
        printf("  device:             %s\n", d->stack);
        printf("  logical block size: %u bytes; optimal I/O size: %llu bytes\n",
               d->logical_block_size, (unsigned long long)d->optimal_io_size);
        printf("  drives:             %u (%s%s%s%s)\n", d->drives,
               d->nvme         ? "NVMe"
               : d->virtio     ? "virtio"
               : d->rotational ? "rotational"
                               : "SSD",
               d->md_level[0] ? ", md " : "", d->md_level,
               d->device_mapper ? ", device-mapper" : "");
        cmd_tune_print_queues(d, cpus);
        if (d->md_level[0])
            printf("  md:                 %s, %u disks, %llu KiB chunks\n", d->md_level,
                   d->md_raid_disks, (unsigned long long)(d->md_chunk_size / 1024));
        printf("  decision:           --block-count %u (%zu KiB reads), concurrency %u\n",
               p->decision.block_count, p->read_size / 1024, p->decision.concurrency);
        printf("  because:            %s\n", p->decision.why);
    }
    printf("\nplan: %u reads in flight (%d workers x %d), %s engine (%s), %llu MiB of buffers\n",
           plan->concurrency, plan->workers, plan->depth, io_engine_name(plan->engine),
           plan->engine_why, (unsigned long long)(plan->memory >> 20));
    if (plan->memory_note[0])
        printf("note: %s\n", plan->memory_note);
    printf("politeness: %s\n", TUNE_POLITENESS);
    if (measured)
        printf(
            "  now:      the other processes leave %.1f of %u vCPUs idle (over %.1f s): %u reading "
            "threads would read at normal priority, %d in the idle class\n",
            left, cpus, TUNE_ROOM_WINDOW_S, normal,
            plan->workers > (int)normal ? plan->workers - (int)normal : 0);
    else
        printf("  now:      %s: every reading thread would stay in the idle CPU class\n", err.msg);
    printf("  because:  %s\n", TUNE_POLITENESS_WHY);
}

int cmd_tune(int argc, char **argv)
{
    pgd_options opts;
    pgd_error err = {0};
    io_plan plan = {0};
    datadir spcs = {0}; /* only the tablespaces: found through the pg_tblspc links, no server */
    uint32_t *oids = NULL;
    const char **locations = NULL;
    const char *pgdata;
    bool json;
    int rc;

    if (!command_start(&opts, &tune_help, 0, argc, argv, &rc))
        return rc;
    pgdata = opt_str(&opts, OPT_PGDATA) ? opt_str(&opts, OPT_PGDATA) : getenv("PGDATA");
    if (!opt_bool(&opts, OPT_JSON, &json, &err)) {
        rc = command_fail(CMD_TUNE, &err);
    } else if (pgdata == NULL || access(pgdata, F_OK) != 0) {
        err_set(&err,
                pgdata ? "data directory \"%s\" is not accessible"
                       : "no data directory given: use --pgdata or set PGDATA%s",
                pgdata ? pgdata : "");
        rc = command_fail(CMD_TUNE, &err);
    } else if (!datadir_tablespaces(&spcs, pgdata, &err)) {
        rc = command_fail(CMD_TUNE, &err);
    } else {
        unsigned cpus = (unsigned)sysconf(_SC_NPROCESSORS_ONLN);
        uint64_t cap = io_plan_default_memory();
        io_plan_request req;

        oids = xcalloc(spcs.ntablespaces + 1, sizeof(*oids));
        locations = xcalloc(spcs.ntablespaces + 1, sizeof(*locations));
        req = (io_plan_request){.sysfs_root = "/sys",
                                .pgdata = pgdata,
                                .spc_oids = oids,
                                .spc_locations = locations,
                                .nspcs = spcs.ntablespaces,
                                .engine = -1,
                                .max_memory = cap / 2, /* as a backup plans (cmd/backup.c) */
                                .compression = COMPRESS_LZ4,
                                .compression_level = COMPRESS_LEVEL_DEFAULT,
                                .cpus = cpus};
        for (size_t i = 0; i < spcs.ntablespaces; i++) {
            oids[i] = spcs.tablespaces[i].oid;
            locations[i] = spcs.tablespaces[i].location;
        }
        if (io_plan_make(&req, &plan, &err)) {
            cmd_tune_print_plan(&plan, cpus, cap, json);
            rc = EXIT_OK;
        } else {
            rc = command_fail(CMD_TUNE, &err);
        }
    }
    free(locations);
    free(oids);
    datadir_free(&spcs);
    io_plan_free(&plan);
    options_free(&opts);
    return rc;
}
