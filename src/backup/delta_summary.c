/*
 * delta_summary.c - a delta's method (WAL summaries or page scan) and its
 * per-file read plans; see delta_summary.h.
 */
#define _GNU_SOURCE
#include "backup/delta_summary.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pg/pg_version.h"
#include "util/log.h"
#include "util/xmalloc.h"

#define DELTA_SUMMARY_MS_PER_S 1000

void delta_summary_assign(const wal_summary *ws, const manifest *parent,
                          const block_plan_limits *lim, pipeline_file *files, size_t nfiles,
                          delta_summary *out)
{
    uint64_t sparse = 0, whole = 0, scan = 0, pages = 0;

    out->plans = xcalloc(nfiles ? nfiles : 1, sizeof(*out->plans));
    out->nplans = nfiles;
    for (size_t i = 0; i < nfiles; i++) {
        block_plan_file bf = {.size = files[i].size};
        long at;

        files[i].plan = NULL;
        /* the files filter_delta would make increments of: main forks the parent has */
        if (files[i].is_dir || files[i].link != NULL || files[i].size == 0 ||
            !relfile_parse(files[i].path, &bf.rel) || bf.rel.fork != RELFILE_MAIN ||
            (at = manifest_find(parent, files[i].path)) < 0 || parent->files[at].is_dir)
            continue;
        bf.parent_size = parent->files[at].file_size;
        block_plan_for_file(ws, &bf, lim, &out->plans[i]);
        if (out->plans[i].kind == BLOCK_PLAN_SCAN) {
            scan++;
            continue;
        }
        files[i].plan = &out->plans[i];
        whole += out->plans[i].kind == BLOCK_PLAN_WHOLE;
        sparse += out->plans[i].kind == BLOCK_PLAN_SPARSE;
        pages += out->plans[i].pages;
    }
    log_info("WAL summaries: %llu relation files read only at their %llu changed or grown pages, "
             "%llu whole (database or fork recreated), %llu by page scan (nearly all changed, or "
             "more than the page buffer holds)",
             (unsigned long long)sparse, (unsigned long long)pages, (unsigned long long)whole,
             (unsigned long long)scan);
}

/* The LSNs and timelines a request is about. */
typedef struct delta_summary_range {
    uint32_t timeline, parent_timeline;
    uint64_t parent_lsn, start_lsn;
} delta_summary_range;

/* Why summaries cannot serve this delta (why[0] == '\0': they can), short of the contents. */
static bool delta_summary_usable(const delta_summary_request *req, delta_summary_range *rg,
                                 wal_summary_settings *set, char *why, size_t why_len,
                                 pgd_error *err)
{
    bool reached, covered;
    uint64_t at;

    why[0] = '\0';
    if (req->pg->version_num < WAL_SUMMARY_VERSION_MIN) {
        snprintf(why, why_len, "PostgreSQL %d keeps no WAL summaries (17 and later do)",
                 pg_version_major(req->pg->version_num));
        return true;
    }
    if (!wal_summary_settings_read(req->pg, set, err))
        return false;
    if (!set->on) {
        snprintf(why, why_len, "summarize_wal is off");
        return true;
    }
    if (set->block_size != PG_PAGE_SIZE || set->segment_pages != PG_SEGMENT_PAGES) {
        snprintf(why, why_len, "the server's block size %u or segment size %u blocks is not %u, %u",
                 set->block_size, set->segment_pages, PG_PAGE_SIZE, PG_SEGMENT_PAGES);
        return true;
    }
    if (!pg_session_timeline(req->pg, &rg->timeline, err))
        return false;
    rg->parent_timeline = req->parent->info.timeline;
    rg->parent_lsn = req->parent->info.start_lsn;
    rg->start_lsn = req->start_lsn;
    if (rg->parent_timeline != rg->timeline) {
        snprintf(why, why_len,
                 "the parent was taken on timeline %u, the server is on %u (summaries are "
                 "followed on one timeline)",
                 rg->parent_timeline, rg->timeline);
        return true;
    }
    if (!wal_summary_wait(req->pg, rg->timeline, rg->start_lsn, req->wait_ms, &reached, &at, err))
        return false;
    if (!reached) {
        snprintf(why, why_len,
                 "the WAL summarizer did not reach " LSN_FORMAT " within %d s (it is at " LSN_FORMAT
                 ")",
                 LSN_ARGS(rg->start_lsn), req->wait_ms / DELTA_SUMMARY_MS_PER_S, LSN_ARGS(at));
        return true;
    }
    return wal_summary_covers(req->pg, rg->timeline, rg->parent_lsn, rg->start_lsn, &covered, why,
                              why_len, err);
}

bool delta_summary_plan(const delta_summary_request *req, pipeline_file *files, size_t nfiles,
                        delta_summary *out, pgd_error *err)
{
    wal_summary_settings set;
    delta_summary_range rg = {0};
    wal_summary ws = {0};
    block_plan_limits lim = {.segment_pages = PG_SEGMENT_PAGES,
                             .max_pages = req->max_buffer / PG_PAGE_SIZE};
    char why[PGD_ERROR_MAX];
    /* the runs get the room of one thread's page buffer: the pipeline has not started yet */
    size_t max_runs = (size_t)(req->max_buffer / sizeof(wal_summary_run));
    bool covered = true, over = false;

    memset(out, 0, sizeof(*out));
    out->method = DELTA_METHOD_SCAN;
    if (!delta_summary_usable(req, &rg, &set, why, sizeof(why), err))
        return false;
    if (why[0] == '\0' &&
        (!wal_summary_load(req->pg, rg.timeline, rg.parent_lsn, rg.start_lsn, max_runs, &ws, &over,
                           err) ||
         /* again: a summary removed while its contents were read would leave blocks out */
         !wal_summary_covers(req->pg, rg.timeline, rg.parent_lsn, rg.start_lsn, &covered, why,
                             sizeof(why), err))) {
        wal_summary_free(&ws);
        return false;
    }
    if (why[0] == '\0' && over)
        snprintf(why, sizeof(why),
                 "the WAL summaries name more than %zu runs of changed blocks (the memory of one "
                 "reader thread's page buffer, half of --max-memory)",
                 max_runs);
    if (why[0] != '\0' || !covered) {
        wal_summary_free(&ws);
        log_info("delta method: page-LSN scan, reading every page of the relation files: %s", why);
        return true;
    }
    log_info("delta method: WAL summaries from " LSN_FORMAT " to " LSN_FORMAT
             " on timeline %u (%zu runs of changed blocks)",
             LSN_ARGS(rg.parent_lsn), LSN_ARGS(rg.start_lsn), rg.timeline, ws.n);
    out->method = DELTA_METHOD_SUMMARY;
    delta_summary_assign(&ws, &req->parent->m, &lim, files, nfiles, out);
    wal_summary_free(&ws);
    return true;
}

void delta_summary_free(delta_summary *ds)
{
    for (size_t i = 0; ds->plans != NULL && i < ds->nplans; i++)
        block_plan_free(&ds->plans[i]);
    free(ds->plans);
    ds->plans = NULL;
    ds->nplans = 0;
}
