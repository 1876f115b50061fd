/*
 * io_plan.h - how a backup will read: read size per tablespace, reads in
 * flight, the I/O engine, and the memory all of it takes, from the options
 * ("auto" or fixed), the storage under each tablespace (io/tune.h) and the
 * memory cap. `pgdirect tune` prints the same plan without backing up.
 */
#ifndef PGD_IO_PLAN_H
#define PGD_IO_PLAN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "compress/compress.h"
#include "io/device.h"
#include "io/io_engine.h"
#include "io/tune.h"
#include "pg/datadir.h"
#include "util/error.h"

#define IO_PLAN_AUTO            0
#define IO_PLAN_BLOCK_COUNT_MAX 16384 /* --block-count: 64 MiB reads */
#define IO_PLAN_CONCURRENCY_MAX 256   /* --concurrency */

typedef struct io_plan_request {
    const char *sysfs_root; /* "/sys" */
    const char *pgdata;
    const uint32_t *spc_oids; /* tablespaces: oid and location */
    const char *const *spc_locations;
    size_t nspcs;
    unsigned block_count; /* IO_PLAN_AUTO or fixed */
    unsigned concurrency; /* IO_PLAN_AUTO or fixed */
    int engine;           /* -1: auto, else io_engine_kind */
    uint64_t max_memory;  /* bytes for buffers */
    compress_kind compression;
    int compression_level;
    uint64_t stream_memory; /* what the repository holds per open partition (S3 parts) */
    unsigned cpus;
} io_plan_request;

typedef struct io_plan_place {
    uint32_t oid; /* 0: the data directory */
    char location[512];
    bool facts_known;
    device_facts dev;
    tune_decision decision;
    size_t read_size; /* bytes, after the memory cap */
} io_plan_place;

typedef struct io_plan {
    io_plan_place *places; /* [0] is PGDATA */
    size_t nplaces;
    unsigned concurrency;
    int workers, depth;
    io_engine_kind engine;
    char engine_why[160];
    uint64_t memory;       /* buffers the plan uses */
    char memory_note[200]; /* set when the cap changed the plan */
} io_plan;

bool io_plan_make(const io_plan_request *req, io_plan *out, pgd_error *err);
void io_plan_free(io_plan *p);

/*
 * The plan for a backup of base->pgdata and the tablespaces the walk found,
 * within max_memory for the whole process: what it holds already (its
 * resident set, and slack for the allocator, libpq and the manifest)
 * leaves that much less for buffers. base gives everything else.
 */
bool io_plan_for_datadir(const io_plan_request *base, const datadir *dd, uint64_t max_memory,
                         io_plan *plan, pgd_error *err);

/* Read size for a backup path ("pg_tblspc/<oid>/..." uses that tablespace's). */
size_t io_plan_read_size(const io_plan *p, const char *backup_path);

/* Default --max-memory: 5 % of RAM, at most 1 GiB. */
uint64_t io_plan_default_memory(void);

#endif
