/*
 * delta_summary.h - how a delta backup finds its changed pages: from
 * PostgreSQL's WAL summaries when it can, reading only the changed blocks
 * of each relation file (backup/block_plan.h), else by the page-LSN scan
 * (backup/filter_delta.h), which reads every page.
 *
 * Summaries serve when the server is PostgreSQL 17 or later with
 * summarize_wal = on and 8 KiB blocks in 1 GiB segments; the parent was
 * taken on the server's current timeline (summaries are followed on one
 * timeline); the summarizer reaches this backup's start LSN within
 * the wait given (--delta-summary-wait; it summarizes up to the
 * checkpoint pg_backup_start made); and the summaries of the timeline cover
 * [parent's start LSN, this backup's start LSN) without a gap (a parent
 * taken before summarize_wal was turned on, or older than
 * wal_summary_keep_time, is not covered). Otherwise the whole backup uses
 * the page scan and one log line says why.
 *
 * Changes after this backup's start need not be in the summaries: WAL
 * replay from the start LSN repairs every such block, as it repairs pages
 * torn by a concurrent write.
 */
#ifndef PGD_DELTA_SUMMARY_H
#define PGD_DELTA_SUMMARY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "backup/block_plan.h"
#include "backup/delta_parent.h"
#include "backup/pipeline.h"
#include "pg/session.h"
#include "repo/manifest.h"
#include "util/error.h"

#define DELTA_SUMMARY_WAIT_MAX_S 3600
#define DELTA_METHOD_SUMMARY     "wal-summary"
#define DELTA_METHOD_SCAN        "page-scan"

typedef struct delta_summary_request {
    pg_session *pg;
    const delta_parent *parent; /* found */
    pg_lsn start_lsn;           /* this backup's, as pg_backup_start returned it */
    uint64_t max_buffer;        /* bytes of pages the delta filter holds of one file */
    int wait_ms;                /* for the summarizer to reach start_lsn; 0: ask once */
} delta_summary_request;

typedef struct delta_summary {
    const char *method; /* DELTA_METHOD_SUMMARY or DELTA_METHOD_SCAN */
    block_plan *plans;  /* one per file given; files[i].plan points here */
    size_t nplans;
} delta_summary;

/*
 * Choose the method and, with summaries, give each relation file its plan
 * (files[i].plan). False only on an error that must stop the backup (a
 * failed query); a method that cannot serve falls back.
 */
bool delta_summary_plan(const delta_summary_request *req, pipeline_file *files, size_t nfiles,
                        delta_summary *out, pgd_error *err);

void delta_summary_free(delta_summary *ds);

/*
 * The plans of files from loaded summaries (no server): each file's plan
 * by block_plan_for_file, NULL where today's rules apply. For unit tests
 * and delta_summary_plan.
 */
void delta_summary_assign(const wal_summary *ws, const manifest *parent,
                          const block_plan_limits *lim, pipeline_file *files, size_t nfiles,
                          delta_summary *out);

#endif
