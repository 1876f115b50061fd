/*
 * metrics.h - the repository's state for monitoring, in Prometheus' text exposition format
 * (version 0.0.4, what node_exporter's textfile collector reads): the last complete backup of
 * each type (when it ended, how long it took, bytes read and stored, pages that failed their
 * checksum), how many backups are complete or damaged, the last verify and the last drill (its
 * verdict, problems and measured recovery time), and what the command that writes the file
 * knows besides (wal-push: when it archived, the backlog of segments waiting; without it, what
 * the last wal-push with --metrics-file recorded, repo/wal_pushed.h).
 *
 * Names follow Prometheus' conventions: the pgdirect_ prefix, base units as suffixes
 * (_seconds, _bytes), times as _timestamp_seconds (Unix time) rather than ages, which a static
 * file cannot keep current; every family has HELP and TYPE lines. All are gauges: the values
 * describe the latest of something, not a running count.
 */
#ifndef PGD_METRICS_H
#define PGD_METRICS_H

#include <stdbool.h>
#include <stdint.h>

#include "storage/storage.h"
#include "util/error.h"

typedef struct metrics_extra {
    int64_t wal_archived_at; /* wal-push: when it archived a segment (Unix seconds), or 0 */
    int64_t archive_backlog; /* segments PostgreSQL marked ready and not archived yet, or -1 */
    const char *wal_segment; /* wal-push: the segment it archived, or NULL */
    uint64_t wal_segment_size;
} metrics_extra;

/* The exposition text (malloc'd) of the repository's state and `extra` (may be NULL). */
bool metrics_collect(storage *repo, const metrics_extra *extra, char **text, pgd_error *err);

/* Write `text` to `path` atomically: a temporary file beside it, fsync'd, renamed over it. */
bool metrics_write_file(const char *path, const char *text, pgd_error *err);

#endif
