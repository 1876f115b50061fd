/*
 * io_plan.c - read sizes, reads in flight and engine, under a memory cap.
 */
#define _GNU_SOURCE
#include "backup/io_plan.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backup/pipeline.h"
#include "io/dio_reader.h"
#include "util/text.h"
#include "util/xmalloc.h"

#define MEMORY_CAP_MAX  (1024ULL * 1024 * 1024)
#define MEMORY_RAM_PCT  5
#define READ_SIZE_MIN   (64 * 1024)
#define WORKER_OVERHEAD (512 * 1024) /* thread stack in use, engine ring or reader threads */
#define RSS_MARGIN      (8 * 1024 * 1024ULL) /* allocator slack, libpq buffers, the manifest */

uint64_t io_plan_default_memory(void)
{
    long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    uint64_t ram = pages > 0 && page > 0 ? (uint64_t)pages * (uint64_t)page : 0;
    uint64_t cap = ram / 100 * MEMORY_RAM_PCT;

    return cap == 0 || cap > MEMORY_CAP_MAX ? MEMORY_CAP_MAX : cap;
}

static uint64_t io_plan_memory(const io_plan *p, const io_plan_request *req)
{
    size_t max_read = 0;

    for (size_t i = 0; i < p->nplaces; i++)
        if (pipeline_read_size(p->places[i].read_size) > max_read)
            max_read = pipeline_read_size(p->places[i].read_size);
    /* per worker: depth aligned buffers (+ one page of headroom), a compressor, its thread */
    return (uint64_t)p->workers *
           (WORKER_OVERHEAD + (uint64_t)p->depth * (max_read + DIO_ALIGN) +
            compress_memory_estimate(req->compression, req->compression_level) +
            req->stream_memory);
}

/*
 * Streams (workers) and reads ahead per stream for `concurrency` reads in
 * flight: as many streams as allowed that divide the total exactly, so an
 * explicit --concurrency N means N.
 */
static void io_plan_split(io_plan *p, unsigned streams)
{
    unsigned w = p->concurrency < streams ? p->concurrency : streams;

    while (w > 1 && p->concurrency % w != 0)
        w--;
    p->workers = (int)(w ? w : 1);
    p->depth = (int)(p->concurrency / (unsigned)p->workers);
}

/* Shrink depth, then workers, then read sizes until the buffers fit the cap. */
static bool io_plan_apply_cap(io_plan *p, const io_plan_request *req, pgd_error *err)
{
    uint64_t before = io_plan_memory(p, req);

    while (io_plan_memory(p, req) > req->max_memory) {
        if (p->depth > 1) {
            p->depth--;
        } else if (p->workers > 1) {
            p->workers--;
        } else {
            bool shrunk = false;
            for (size_t i = 0; i < p->nplaces; i++) {
                if (p->places[i].read_size > READ_SIZE_MIN) {
                    p->places[i].read_size /= 2;
                    shrunk = true;
                }
            }
            if (!shrunk)
                return err_set(err,
                               "--max-memory %llu bytes is too small: one reader and one "
                               "compressor need %llu",
                               (unsigned long long)req->max_memory,
                               (unsigned long long)io_plan_memory(p, req));
        }
    }
    p->concurrency = (unsigned)(p->workers * p->depth);
    if (io_plan_memory(p, req) < before)
        str_format(p->memory_note, sizeof(p->memory_note),
                   "buffers fitted into %llu MiB: %u reads in flight of up to %zu KiB (the plan "
                   "wanted %llu MiB)",
                   (unsigned long long)(req->max_memory >> 20), p->concurrency,
                   p->places[0].read_size / 1024, (unsigned long long)(before >> 20));
    return true;
}

bool io_plan_make(const io_plan_request *req, io_plan *out, pgd_error *err)
{
    unsigned conc = 0, streams = 0;
    char why[128];

    memset(out, 0, sizeof(*out));
    out->places = xcalloc(req->nspcs + 1, sizeof(*out->places));
    out->nplaces = req->nspcs + 1;
    for (size_t i = 0; i < out->nplaces; i++) {
        io_plan_place *pl = &out->places[i];
        pgd_error derr = {0};
        const char *where = i == 0 ? req->pgdata : req->spc_locations[i - 1];

        pl->oid = i == 0 ? 0 : req->spc_oids[i - 1];
        str_format(pl->location, sizeof(pl->location), "%s", where);
        pl->facts_known = device_facts_for_path(req->sysfs_root, where, &pl->dev, &derr);
        if (!pl->facts_known) {
            /* no block device (tmpfs, overlay, NFS): a single drive that is not NVMe */
            memset(&pl->dev, 0, sizeof(pl->dev));
            pl->dev.drives = 1;
            str_format(pl->dev.stack, sizeof(pl->dev.stack), "no block device found (%s)",
                       derr.msg);
        }
        tune_decide(&pl->dev, req->cpus, IO_PLAN_BLOCK_COUNT_MAX, &pl->decision);
        pl->read_size = (size_t)(req->block_count != IO_PLAN_AUTO ? req->block_count
                                                                  : pl->decision.block_count) *
                        BLOCK_SIZE;
        if (pl->decision.concurrency > conc)
            conc = pl->decision.concurrency;
        if (pl->decision.streams > streams)
            streams = pl->decision.streams;
    }
    out->concurrency = req->concurrency != IO_PLAN_AUTO ? req->concurrency : conc;
    /*
     * The streams the device's rule decided, each reading ahead, not more: a stream's thread also
     * compresses what it reads, and with more threads than vCPUs the one holding the largest file
     * gets a share of a CPU while the others run, then finishes alone (2 streams x 8 against 4 x 4
     * on 2 vCPUs: files read 10 % faster). Many small files need no extra streams: each keeps its
     * reads in flight across files.
     */
    io_plan_split(out, streams);
    if (req->engine >= 0) {
        out->engine = (io_engine_kind)req->engine;
        snprintf(out->engine_why, sizeof(out->engine_why), "asked for");
    } else if (io_engine_uring_available(why, sizeof(why))) {
        out->engine = IO_ENGINE_URING;
        str_format(out->engine_why, sizeof(out->engine_why), "auto: %s", why);
    } else {
        out->engine = IO_ENGINE_THREADS;
        str_format(out->engine_why, sizeof(out->engine_why), "auto: %s", why);
    }
    if (!io_plan_apply_cap(out, req, err)) {
        io_plan_free(out);
        return false;
    }
    out->memory = io_plan_memory(out, req);
    return true;
}

void io_plan_free(io_plan *p)
{
    free(p->places);
    memset(p, 0, sizeof(*p));
}

size_t io_plan_read_size(const io_plan *p, const char *backup_path)
{
    static const char prefix[] = "pg_tblspc/";

    if (strncmp(backup_path, prefix, sizeof(prefix) - 1) == 0) {
        unsigned long oid = strtoul(backup_path + sizeof(prefix) - 1, NULL, 10);
        for (size_t i = 1; i < p->nplaces; i++)
            if (p->places[i].oid == oid)
                return p->places[i].read_size;
    }
    return p->places[0].read_size;
}

/* What the process holds now (resident set), from /proc/self/statm. */
static uint64_t io_plan_rss_bytes(void)
{
    FILE *f = fopen("/proc/self/statm", "re");
    unsigned long size = 0, resident = 0;

    if (f != NULL) {
        if (fscanf(f, "%lu %lu", &size, &resident) != 2)
            resident = 0;
        fclose(f);
    }
    return (uint64_t)resident * (uint64_t)sysconf(_SC_PAGESIZE);
}

bool io_plan_for_datadir(const io_plan_request *base, const datadir *dd, uint64_t max_memory,
                         io_plan *plan, pgd_error *err)
{
    uint32_t *oids = xcalloc(dd->ntablespaces + 1, sizeof(*oids));
    const char **locations = xcalloc(dd->ntablespaces + 1, sizeof(*locations));
    uint64_t used = io_plan_rss_bytes() + RSS_MARGIN;
    io_plan_request req = *base;
    bool ok;

    for (size_t i = 0; i < dd->ntablespaces; i++) {
        oids[i] = dd->tablespaces[i].oid;
        locations[i] = dd->tablespaces[i].location;
    }
    req.spc_oids = oids;
    req.spc_locations = locations;
    req.nspcs = dd->ntablespaces;
    /* the cap covers the whole process: what it holds already leaves less for buffers */
    if (used >= max_memory)
        ok = err_set(err,
                     "--max-memory %llu MiB is too small: the process already uses %llu MiB "
                     "before allocating any buffer",
                     (unsigned long long)(max_memory >> 20), (unsigned long long)(used >> 20));
    else {
        req.max_memory = max_memory - used;
        ok = io_plan_make(&req, plan, err);
    }
    free(oids);
    free(locations);
    return ok;
}
