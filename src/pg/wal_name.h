/*
 * wal_name.h - the names of the files PostgreSQL writes to pg_wal and
 * archives, and the segment arithmetic behind them (PostgreSQL's
 * XLogFileName, XLogFromFileName, IsXLogFileName... of
 * src/include/access/xlog_internal.h).
 *
 *   segment   TTTTTTTTLLLLLLLLSSSSSSSS: timeline, "log" and segment within
 *             the log, 8 upper-case hex digits each. A log is 4 GiB of WAL,
 *             so it holds 4 GiB / segment size segments: segment number
 *             segno is log segno / per-log, segment segno % per-log.
 *   .partial  a segment name + ".partial": the last, unfinished segment of
 *             a timeline.
 *   .history  TTTTTTTT.history: the timeline history file of timeline T.
 *   .backup   a segment name + ".OOOOOOOO.backup": a backup history file
 *             (the offset of the backup's start in that segment).
 *
 * The segment size is the cluster's (initdb --wal-segsize): a power of two
 * from 1 MiB to 1 GiB. Nothing here speaks to a server.
 */
#ifndef PGD_WAL_NAME_H
#define PGD_WAL_NAME_H

#include <stdbool.h>
#include <stdint.h>

#include "pg/lsn.h"

#define WAL_FILE_NAME_LEN    24 /* a segment's name: timeline, log, segment as 3 x 8 hex digits */
#define WAL_TLI_NAME_LEN     8  /* the timeline part of a name, and a history file's */
#define WAL_HISTORY_NAME_LEN (WAL_TLI_NAME_LEN + 8) /* TTTTTTTT.history */
#define WAL_SEG_SIZE_MIN     (1u << 20)             /* initdb --wal-segsize limits */
#define WAL_SEG_SIZE_MAX     (1u << 30)

typedef enum {
    WAL_FILE_SEGMENT, /* 24 hex digits: timeline, log, segment */
    WAL_FILE_PARTIAL, /* segment name + ".partial" */
    WAL_FILE_HISTORY, /* 8 hex digits + ".history" */
    WAL_FILE_BACKUP,  /* segment name + ".<8 hex>.backup" */
    WAL_FILE_UNKNOWN,
} wal_file_kind;

/* Which of PostgreSQL's WAL files `name` is (upper-case hex only, as PostgreSQL writes). */
wal_file_kind wal_name_kind(const char *name);

/* Any of the four kinds. */
bool wal_name_is_wal_file(const char *name);

/* name starts with a segment's name (what follows, a suffix or nothing, is the caller's). */
bool wal_name_starts_with_segment(const char *name);

/* A segment size PostgreSQL allows: a power of two from 1 MiB to 1 GiB. */
bool wal_name_seg_size_valid(uint64_t seg_size);

/* Segments in a "log" (4 GiB of WAL) of seg_size segments: the range of a name's last part. */
uint64_t wal_name_segs_per_log(uint64_t seg_size);

/*
 * The number of the segment holding `lsn`; with `prev`, of the segment
 * ending at lsn (the one before a segment boundary: where a stop LSN's
 * WAL is).
 */
uint64_t wal_name_segno(pg_lsn lsn, uint64_t seg_size, bool prev);

/*
 * The name of segment `segno` of timeline `tli`. False when seg_size is not
 * valid or segno is past the last segment (a log number over 32 bits).
 */
bool wal_name_from_segno(uint32_t tli, uint64_t segno, uint64_t seg_size,
                         char out[WAL_FILE_NAME_LEN + 1]);

/* The name of the segment holding lsn (wal_name_segno); seg_size must be valid. */
void wal_name_of_lsn(uint32_t tli, pg_lsn lsn, uint64_t seg_size, bool prev,
                     char out[WAL_FILE_NAME_LEN + 1]);

/*
 * Timeline and segment number of the segment name `name` (exactly a
 * segment's name, nothing after it), for segments of seg_size bytes: false
 * when it is not one, seg_size is not valid, or its last part is past the
 * segments of a log.
 */
bool wal_name_parse(const char *name, uint64_t seg_size, uint32_t *tli, uint64_t *segno);

/* The timeline of any WAL file name (its first 8 hex digits): false when name is no WAL file. */
bool wal_name_timeline(const char *name, uint32_t *tli);

/*
 * The three parts of a WAL file name that starts with a segment's name (a
 * segment, .partial or .backup; a .history has a timeline only, *log and
 * *seg are 0 then), whatever the segment size. False when name is no WAL file.
 */
bool wal_name_parts(const char *name, uint32_t *tli, uint32_t *log, uint32_t *seg);

/*
 * A timeline alone, as the first part of a WAL file name writes it (8
 * upper-case hex digits, nothing else: the repository's wal/<timeline>/);
 * false otherwise. tli may be NULL.
 */
bool wal_name_timeline_hex(const char *text, uint32_t *tli);

/* Timeline tli as a name's first part writes it, "TTTTTTTT" (the repository's wal/<timeline>/). */
void wal_name_timeline_text(uint32_t tli, char out[WAL_TLI_NAME_LEN + 1]);

/* The name of timeline tli's history file, "TTTTTTTT.history". */
void wal_name_history(uint32_t tli, char out[WAL_HISTORY_NAME_LEN + 1]);

/*
 * A timeline as PostgreSQL prints one (pg_control, backup_label,
 * recovery_target_timeline): decimal digits, 1 to 4294967295, nothing
 * before or after. False (*tli untouched) otherwise.
 */
bool wal_name_timeline_parse(const char *text, uint32_t *tli);

#endif
