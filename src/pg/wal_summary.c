/*
 * wal_summary.c - the queries behind pg/wal_summary.h, and the coverage
 * check on what they return.
 */
#define _GNU_SOURCE
#include "pg/wal_summary.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "pg/lsn.h"
#include "util/interrupt.h"
#include "util/progress.h"
#include "util/xmalloc.h"

#define WAL_SUMMARY_POLL_MS    200
#define WAL_SUMMARY_RUN_FIELDS 7
#define WAL_SUMMARY_MS_PER_S   1000
#define WAL_SUMMARY_NS_PER_MS  1000000L

/* A query with text parameters that must return tuples of `cols` columns. */
static PGresult *wal_summary_query(pg_session *s, const char *what, const char *sql, int nparams,
                                   const char *const *params, int cols, pgd_error *err)
{
    PGresult *res = PQexecParams(s->conn, sql, nparams, NULL, params, NULL, NULL, 0);
    char msg[PGD_ERROR_MAX];

    if (PQresultStatus(res) == PGRES_TUPLES_OK && PQnfields(res) == cols)
        return res;
    if (PQresultStatus(res) == PGRES_TUPLES_OK)
        snprintf(msg, sizeof(msg), "unexpected result shape");
    else
        pg_error_line(s->conn, "", msg, sizeof(msg));
    PQclear(res);
    err_set(err, "could not read %s: %s", what, msg);
    return NULL;
}

static bool wal_summary_u32(const char *text, uint32_t *out)
{
    char *end;
    unsigned long long v = strtoull(text, &end, 10);

    if (end == text || *end != '\0' || v > UINT32_MAX)
        return false;
    *out = (uint32_t)v;
    return true;
}

bool wal_summary_settings_read(pg_session *s, wal_summary_settings *out, pgd_error *err)
{
    static const char sql[] =
        "SELECT current_setting('summarize_wal'), current_setting('block_size'), "
        "(SELECT setting FROM pg_catalog.pg_settings WHERE name = 'segment_size')";
    PGresult *res = wal_summary_query(s, "the WAL summary settings", sql, 0, NULL, 3, err);
    bool ok;

    if (res == NULL)
        return false;
    memset(out, 0, sizeof(*out));
    /* segment_size is counted in blocks (its unit is the block size) */
    ok = PQntuples(res) == 1 && wal_summary_u32(PQgetvalue(res, 0, 1), &out->block_size) &&
         wal_summary_u32(PQgetvalue(res, 0, 2), &out->segment_pages);
    out->on = ok && strcmp(PQgetvalue(res, 0, 0), "on") == 0;
    PQclear(res);
    return ok || err_set(err, "could not read the WAL summary settings: unexpected values");
}

static void wal_summary_sleep_ms(int ms)
{
    struct timespec ts = {ms / WAL_SUMMARY_MS_PER_S,
                          (long)(ms % WAL_SUMMARY_MS_PER_S) * WAL_SUMMARY_NS_PER_MS};

    nanosleep(&ts, NULL);
}

bool wal_summary_wait(pg_session *s, uint32_t tli, uint64_t lsn, int timeout_ms, bool *reached,
                      uint64_t *at, pgd_error *err)
{
    static const char sql[] = "SELECT summarized_tli::text, summarized_lsn::text "
                              "FROM pg_catalog.pg_get_wal_summarizer_state()";
    double deadline = clock_seconds() + (double)timeout_ms / WAL_SUMMARY_MS_PER_S;

    *reached = false;
    *at = 0;
    for (;;) {
        PGresult *res = wal_summary_query(s, "the WAL summarizer's state", sql, 0, NULL, 2, err);
        uint32_t got_tli = 0;
        uint64_t got_lsn = 0;

        if (res == NULL)
            return false;
        if (PQntuples(res) == 1 && !PQgetisnull(res, 0, 0) && !PQgetisnull(res, 0, 1) &&
            wal_summary_u32(PQgetvalue(res, 0, 0), &got_tli) &&
            lsn_parse(PQgetvalue(res, 0, 1), &got_lsn))
            *at = got_lsn;
        PQclear(res);
        /* a summarizer on a later timeline has summarized all of this one it will */
        if ((got_tli == tli && got_lsn >= lsn) || got_tli > tli) {
            *reached = got_tli == tli;
            return true;
        }
        if (clock_seconds() >= deadline)
            return true;
        if (interrupt_signal() != 0)
            return err_set(err, "interrupted while waiting for the WAL summarizer");
        wal_summary_sleep_ms(WAL_SUMMARY_POLL_MS);
    }
}

bool wal_summary_ranges_cover(const uint64_t *start, const uint64_t *end, size_t n, uint64_t from,
                              uint64_t to, uint64_t *gap)
{
    uint64_t reach = from;

    for (size_t i = 0; i < n && reach < to; i++) {
        if (start[i] > reach)
            break;
        if (end[i] > reach)
            reach = end[i];
    }
    *gap = reach;
    return reach >= to;
}

bool wal_summary_covers(pg_session *s, uint32_t tli, uint64_t from, uint64_t to, bool *covered,
                        char *why, size_t why_len, pgd_error *err)
{
    static const char sql[] = "SELECT start_lsn::text, end_lsn::text "
                              "FROM pg_catalog.pg_available_wal_summaries() "
                              "WHERE tli = $1::int8 AND end_lsn > $2::pg_lsn "
                              "AND start_lsn < $3::pg_lsn ORDER BY start_lsn, end_lsn";
    char tli_s[16], from_s[LSN_TEXT_MAX], to_s[LSN_TEXT_MAX], gap_s[LSN_TEXT_MAX];
    const char *params[] = {tli_s, from_s, to_s};
    PGresult *res;
    uint64_t *start, *end, gap;
    size_t n;
    bool ok = true;

    snprintf(tli_s, sizeof(tli_s), "%u", tli);
    lsn_format(from, from_s);
    lsn_format(to, to_s);
    res = wal_summary_query(s, "the available WAL summaries", sql, 3, params, 2, err);
    if (res == NULL)
        return false;
    n = (size_t)PQntuples(res);
    start = xcalloc(n + 1, sizeof(*start));
    end = xcalloc(n + 1, sizeof(*end));
    for (size_t i = 0; ok && i < n; i++)
        ok = lsn_parse(PQgetvalue(res, (int)i, 0), &start[i]) &&
             lsn_parse(PQgetvalue(res, (int)i, 1), &end[i]);
    PQclear(res);
    if (!ok) {
        free(start);
        free(end);
        return err_set(err, "could not read the available WAL summaries: invalid LSN");
    }
    *covered = wal_summary_ranges_cover(start, end, n, from, to, &gap);
    lsn_format(gap, gap_s);
    if (!*covered && n == 0)
        snprintf(why, why_len, "no WAL summary on timeline %u covers %s..%s", tli, from_s, to_s);
    else if (!*covered && gap == from)
        snprintf(why, why_len, "the WAL summaries on timeline %u begin at " LSN_FORMAT ", after %s",
                 tli, LSN_ARGS(start[0]), from_s);
    else if (!*covered)
        snprintf(why, why_len, "the WAL summaries on timeline %u have a gap at %s (needed: %s..%s)",
                 tli, gap_s, from_s, to_s);
    free(start);
    free(end);
    return true;
}

/* Changed blocks grouped into runs of adjacent blocks, on the server (a gaps-and-islands query). */
static const char wal_summary_runs_sql[] =
    "WITH b AS (SELECT DISTINCT c.reltablespace::int8 AS spc, c.reldatabase::int8 AS db, "
    "c.relfilenode::int8 AS rel, c.relforknumber::int4 AS fork, c.is_limit_block AS lim, "
    "c.relblocknumber::int8 AS blk "
    "FROM pg_catalog.pg_available_wal_summaries() s, "
    "LATERAL pg_catalog.pg_wal_summary_contents(s.tli, s.start_lsn, s.end_lsn) c "
    "WHERE s.tli = $1::int8 AND s.end_lsn > $2::pg_lsn AND s.start_lsn < $3::pg_lsn) "
    "SELECT spc, db, rel, fork, lim, min(blk), count(*) FROM "
    "(SELECT b.*, blk - row_number() OVER (PARTITION BY spc, db, rel, fork, lim ORDER BY blk) "
    "AS grp FROM b) g GROUP BY spc, db, rel, fork, lim, grp ORDER BY 1, 2, 3, 4, 5, 6";

static bool wal_summary_parse_run(PGresult *res, int row, wal_summary_run *r)
{
    uint32_t v[WAL_SUMMARY_RUN_FIELDS];

    for (int c = 0; c < WAL_SUMMARY_RUN_FIELDS; c++)
        if (c != 4 && !wal_summary_u32(PQgetvalue(res, row, c), &v[c]))
            return false;
    *r = (wal_summary_run){.spc = v[0],
                           .db = v[1],
                           .relfilenode = v[2],
                           .fork = v[3],
                           .limit = strcmp(PQgetvalue(res, row, 4), "t") == 0,
                           .start = v[5],
                           .count = v[6]};
    return r->count > 0;
}

/* One row of the contents into out (grown as needed, up to max_runs: else *over). */
static bool wal_summary_take_row(PGresult *res, wal_summary *out, size_t *cap, size_t max_runs,
                                 bool *over, pgd_error *err)
{
    if (*over || out->n >= max_runs) {
        *over = true;
        return true; /* drained, not kept */
    }
    if (out->n == *cap) {
        size_t grown = *cap ? *cap * 2 : 1024;
        out->runs = xrealloc(out->runs, grown * sizeof(*out->runs));
        *cap = grown;
    }
    if (!wal_summary_parse_run(res, 0, &out->runs[out->n]))
        return err_set(err, "could not read the WAL summaries' contents: invalid row %zu",
                       out->n + 1);
    out->n++;
    return true;
}

/*
 * Row by row (libpq's single-row mode), so that memory holds our runs and
 * one row, not the whole result: past max_runs the rest is drained unkept.
 */
bool wal_summary_load(pg_session *s, uint32_t tli, uint64_t from, uint64_t to, size_t max_runs,
                      wal_summary *out, bool *over, pgd_error *err)
{
    char tli_s[16], from_s[LSN_TEXT_MAX], to_s[LSN_TEXT_MAX], msg[PGD_ERROR_MAX];
    const char *params[] = {tli_s, from_s, to_s};
    PGresult *res;
    size_t cap = 0;
    bool ok = true;

    memset(out, 0, sizeof(*out));
    *over = false;
    snprintf(tli_s, sizeof(tli_s), "%u", tli);
    lsn_format(from, from_s);
    lsn_format(to, to_s);
    if (!PQsendQueryParams(s->conn, wal_summary_runs_sql, 3, NULL, params, NULL, NULL, 0) ||
        !PQsetSingleRowMode(s->conn)) {
        pg_error_line(s->conn, "", msg, sizeof(msg));
        return err_set(err, "could not read the WAL summaries' contents: %s", msg);
    }
    while ((res = PQgetResult(s->conn)) != NULL) {
        ExecStatusType st = PQresultStatus(res);

        if (ok && st == PGRES_SINGLE_TUPLE && PQnfields(res) == WAL_SUMMARY_RUN_FIELDS)
            ok = wal_summary_take_row(res, out, &cap, max_runs, over, err);
        else if (ok && st != PGRES_TUPLES_OK) {
            pg_error_line(s->conn, "unexpected result shape", msg, sizeof(msg));
            ok = err_set(err, "could not read the WAL summaries' contents: %s", msg);
        }
        PQclear(res);
    }
    if (!ok || *over)
        wal_summary_free(out);
    return ok;
}

void wal_summary_free(wal_summary *ws)
{
    free(ws->runs);
    memset(ws, 0, sizeof(*ws));
}

static int wal_summary_key_cmp(const wal_summary_run *r, uint32_t spc, uint32_t db, uint32_t rel,
                               uint32_t fork)
{
    if (r->spc != spc)
        return r->spc < spc ? -1 : 1;
    if (r->db != db)
        return r->db < db ? -1 : 1;
    if (r->relfilenode != rel)
        return r->relfilenode < rel ? -1 : 1;
    if (r->fork != fork)
        return r->fork < fork ? -1 : 1;
    return 0;
}

size_t wal_summary_find(const wal_summary *ws, uint32_t spc, uint32_t db, uint32_t relfilenode,
                        uint32_t fork, size_t *count)
{
    size_t lo = 0, hi = ws->n, first;

    while (lo < hi) { /* the first run not before the key */
        size_t mid = lo + (hi - lo) / 2;
        if (wal_summary_key_cmp(&ws->runs[mid], spc, db, relfilenode, fork) < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    first = lo;
    while (lo < ws->n && wal_summary_key_cmp(&ws->runs[lo], spc, db, relfilenode, fork) == 0)
        lo++;
    *count = lo - first;
    return first;
}
