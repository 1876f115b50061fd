/*
 * wal_pushed.h - when WAL last reached the archive, for `pgdirect metrics` on demand:
 * metrics/wal_push.json, {"time", "segment", "segment_size", "backlog"}. A listing of the
 * archive carries no times (and object times are not given by every store), so wal-push with
 * --metrics-file writes this small object after each segment it newly stored: the time, the
 * segment's name (its timeline and where it ends, with the segment size) and the WAL files
 * PostgreSQL had marked ready and not yet archived then. It costs one write per push, which is
 * why only a wal-push asked for metrics pays it.
 */
#ifndef PGD_WAL_PUSHED_H
#define PGD_WAL_PUSHED_H

#include <stdbool.h>
#include <stdint.h>

#include "pg/wal_name.h"
#include "storage/storage.h"
#include "util/error.h"

#define WAL_PUSHED_PATH "metrics/wal_push.json"

typedef struct wal_pushed {
    bool present;
    int64_t time;          /* when the segment was stored, Unix seconds */
    char segment[32];      /* its WAL file name */
    uint64_t segment_size; /* bytes (the cluster's wal_segment_size) */
    int64_t backlog;       /* .ready files then, -1 unknown */
} wal_pushed;

bool wal_pushed_write(storage *repo, const wal_pushed *r, pgd_error *err);

/* r->present = false, and no error, when there is none (or it does not parse as one). */
bool wal_pushed_load(storage *repo, wal_pushed *r, pgd_error *err);

/* Where the recorded segment ends (an LSN) and its timeline; false when it is not a segment. */
bool wal_pushed_end(const wal_pushed *r, uint32_t *tli, pg_lsn *end);

#endif
