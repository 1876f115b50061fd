/*
 * block_plan.h - which blocks of a relation file a delta backup reads when
 * PostgreSQL's WAL summaries (pg/wal_summary.h) say what changed since the
 * parent: the sparse read plan of one segment file.
 *
 * For a relation file's main fork that the parent also has (the files
 * backup/filter_delta.h makes increments of; everything else keeps its
 * rules and has no plan), with S its segment's first block, N its pages
 * now and P the parent's:
 *   - a database marker (relfilenode 0) for its tablespace and database:
 *     the database was created or dropped since the parent (FILE_COPY logs
 *     no blocks): WHOLE;
 *   - a limit block L <= S (the fork was cut to L blocks, or dropped, and
 *     this segment began anew): WHOLE;
 *   - otherwise SPARSE, reading
 *       the changed blocks in [S, S + N),
 *       every block at or after L that exists now (a fork cut to L and
 *       grown again: the parent's blocks there are not this file's, and
 *       restore takes from the parent every block the increment lacks),
 *       every block at or after P (grown since the parent: blocks extended
 *       but not yet written are not in the summaries, blocks written after
 *       this backup's start are repaired by WAL replay but must still be
 *       in the increment, since restore never invents a block);
 *     a file the summaries do not name is SPARSE with only its growth, or
 *     none: an increment of no pages at its current size;
 *   - SCAN (the page-LSN rules, reading all of it) when the plan would read
 *     more than 90 % of the file (one sequential read costs less than many
 *     runs, as PostgreSQL's incremental backup also sends such files whole),
 *     when its pages would not fit the delta's page buffer (the scan then
 *     stores it whole, as it does today), or when its size is not whole
 *     pages of one segment (something we do not understand).
 * Blocks are relative to the segment file, in runs of adjacent blocks
 * (one read each, split at the read size), sorted and disjoint.
 */
#ifndef PGD_BLOCK_PLAN_H
#define PGD_BLOCK_PLAN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "pg/relfile.h"
#include "pg/wal_summary.h"
#include "util/error.h"

typedef enum { BLOCK_PLAN_SCAN, BLOCK_PLAN_SPARSE, BLOCK_PLAN_WHOLE } block_plan_kind;

typedef struct block_run {
    uint32_t start, count; /* pages of the segment file */
} block_run;

typedef struct block_plan {
    block_plan_kind kind;
    block_run *runs; /* SPARSE only */
    size_t nruns;
    uint64_t pages; /* sum of the runs' counts */
} block_plan;

typedef struct block_plan_file {
    relfile rel;
    uint64_t size;        /* bytes now (at the walk) */
    uint64_t parent_size; /* bytes in the parent */
} block_plan_file;

typedef struct block_plan_limits {
    uint32_t segment_pages; /* blocks per segment file, the server's */
    uint64_t max_pages;     /* pages the delta filter may hold of one file */
} block_plan_limits;

/* The tablespace OID a summary names for a relation file's place (base/, global/, pg_tblspc). */
uint32_t block_plan_spc_oid(const relfile *rel);

/* The plan of one file; a failed allocation ends the process (util/xmalloc.h). */
void block_plan_for_file(const wal_summary *ws, const block_plan_file *f,
                         const block_plan_limits *lim, block_plan *out);

void block_plan_free(block_plan *p);

/* Bytes of the plan's runs below `limit` (a file that shrank since the walk). */
uint64_t block_plan_bytes_within(const block_plan *p, uint64_t limit);

#endif
