/*
 * wal_summary.h - PostgreSQL 17's WAL summaries (summarize_wal = on), as a
 * delta backup reads them: whether the server keeps them, how far the
 * summarizer has got, whether the summaries of a timeline cover a range of
 * LSNs without a gap, and which blocks of which relation forks they say
 * changed in it.
 *
 * The changed blocks come back as runs of adjacent blocks (the server
 * groups them, so a contiguous change of a million blocks is one row, not
 * a million); a fork that was truncated (or dropped: limit 0) in the range
 * has a limit row whose start is the length it was cut to. A row with
 * relfilenode 0 marks a database (a tablespace/database pair) created or
 * dropped in the range: PostgreSQL's FILE_COPY strategy copies its files
 * without logging their blocks, so nothing the summaries say about the
 * files under it can be trusted.
 */
#ifndef PGD_WAL_SUMMARY_H
#define PGD_WAL_SUMMARY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "pg/session.h"
#include "util/error.h"

#define WAL_SUMMARY_VERSION_MIN 170000 /* pg_wal_summary_contents() arrived in 17 */
#define WAL_SUMMARY_SPC_DEFAULT 1663   /* pg_default: base/ */
#define WAL_SUMMARY_SPC_GLOBAL  1664   /* pg_global: global/ */

typedef struct wal_summary_run {
    uint32_t spc, db, relfilenode;
    uint32_t fork;  /* PostgreSQL's ForkNumber: 0 main, 1 fsm, 2 vm, 3 init */
    bool limit;     /* a limit row: the fork was cut to `start` blocks (count 1) */
    uint32_t start; /* first changed block (absolute, across segments) */
    uint32_t count; /* blocks start .. start + count - 1 changed */
} wal_summary_run;

/* Runs sorted by spc, db, relfilenode, fork, limit (changes first), start. */
typedef struct wal_summary {
    wal_summary_run *runs;
    size_t n;
} wal_summary;

typedef struct wal_summary_settings {
    bool on;                /* summarize_wal */
    uint32_t block_size;    /* bytes */
    uint32_t segment_pages; /* blocks a relation segment file holds (RELSEG_SIZE) */
} wal_summary_settings;

/* summarize_wal, block_size, segment_size of a 17+ server. */
bool wal_summary_settings_read(pg_session *s, wal_summary_settings *out, pgd_error *err);

/*
 * Poll pg_get_wal_summarizer_state() until it has summarized WAL up to
 * `lsn` on timeline `tli`, for at most timeout_ms; *reached says whether it
 * did, *at how far it had got.
 */
bool wal_summary_wait(pg_session *s, uint32_t tli, uint64_t lsn, int timeout_ms, bool *reached,
                      uint64_t *at, pgd_error *err);

/*
 * Whether the summaries of timeline `tli` cover [from, to) with no gap;
 * when not, `why` says where they stop.
 */
bool wal_summary_covers(pg_session *s, uint32_t tli, uint64_t from, uint64_t to, bool *covered,
                        char *why, size_t why_len, pgd_error *err);

/*
 * The changed blocks of every summary of `tli` that overlaps [from, to).
 * At most max_runs runs are kept (memory is bounded): with more, *over
 * and nothing is returned.
 */
bool wal_summary_load(pg_session *s, uint32_t tli, uint64_t from, uint64_t to, size_t max_runs,
                      wal_summary *out, bool *over, pgd_error *err);
void wal_summary_free(wal_summary *ws);

/*
 * Whether the ranges [start[i], end[i]) (sorted by start) cover [from, to);
 * when not, *gap is the first LSN in it that none covers. For unit tests.
 */
bool wal_summary_ranges_cover(const uint64_t *start, const uint64_t *end, size_t n, uint64_t from,
                              uint64_t to, uint64_t *gap);

/* The runs of one relation fork (first of them, how many), or of the database marker. */
size_t wal_summary_find(const wal_summary *ws, uint32_t spc, uint32_t db, uint32_t relfilenode,
                        uint32_t fork, size_t *count);

#endif
