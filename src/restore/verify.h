/*
 * verify.h - re-read a stored backup without restoring it: every
 * partition's size and CRC-32C, every file's size and CRC-32C against the
 * manifest, the manifest against the partitions, and the WAL from the
 * backup's start to its stop segment (needed to restore it at all) and on
 * from there (how far a point-in-time restore can go).
 *
 * It reads through the same path a restore does (restore/backup_read.h,
 * repo/tar.h, the partition's CRC and decompression streams) and writes
 * nothing anywhere. A damaged backup is a result, not an error: each
 * problem is recorded and the rest is still checked. Only what says
 * nothing about the backup (a repository that cannot be listed, an object
 * that is there but cannot be opened, a read that may succeed later, a
 * signal) fails the call.
 */
#ifndef PGD_VERIFY_H
#define PGD_VERIFY_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "repo/backup_info.h"
#include "storage/storage.h"
#include "util/error.h"

#define VERIFY_WAL_NAME 32
/* problems kept per backup; the rest are counted */
#define VERIFY_PROBLEMS_MAX 32

typedef struct verify_result {
    char id[32];
    bool damaged;
    char *problems[VERIFY_PROBLEMS_MAX];
    size_t nproblems;     /* kept */
    size_t nproblems_all; /* found */
    uint64_t partitions, files, stored_bytes, file_bytes;
    /* WAL: timeline of the backup, segments named as PostgreSQL names them */
    uint64_t wal_segment_size;            /* 0 when it could not be told */
    bool restorable;                      /* every segment from start to stop is there and intact */
    char window_end_wal[VERIFY_WAL_NAME]; /* last segment of the unbroken run from start */
    char window_end_lsn[PG_LSN_TEXT];     /* where that segment ends */
    char gap_wal[VERIFY_WAL_NAME]; /* first missing segment after it, when later ones exist */
    char gap_resume_wal[VERIFY_WAL_NAME]; /* the first segment present after the gap */
    /*
     * A segment after the stop that is there but fails the check wal-fetch
     * makes (or is another system's): the window ends before it. Not damage
     * to the backup, but damaged data in the repository: verify exits 3.
     */
    char damaged_wal[VERIFY_WAL_NAME];
    char *damaged_wal_why;
    /*
     * The window follows the timelines a restore the default way follows
     * (restore/timeline.h). When that restore would be refused, why
     * (malloc'd), and the window is that of the backup's own timeline
     * (restore --target-timeline current); timeline_damaged when it is
     * because a history file is damaged. verify exits 3 either way.
     */
    char *timeline_problem;
    bool timeline_damaged;
} verify_result;

/*
 * The segments after the stop that one run has read, so that `verify --all`
 * reads each once however many windows hold it (sorted object names; the
 * reason for the damaged ones).
 */
typedef struct verify_wal_memo {
    char **names;
    char **why;      /* NULL: it decoded and passed wal-fetch's checks */
    uint64_t *sysid; /* the system in its long page header (each backup compares its own) */
    size_t n, cap;
} verify_wal_memo;

void verify_wal_memo_free(verify_wal_memo *m);

typedef struct verify_request {
    storage *repo;
    const backup_info *bi; /* from backup_info_scan/resolve; a damaged sentinel is a problem */
    int concurrency;       /* partitions read at once */
    const volatile sig_atomic_t *cancel;
    verify_wal_memo *memo; /* may be NULL */
} verify_request;

/* Check one backup into *r (verify_result_free it); false only on an operational error, with
   nothing left in *r. */
bool verify_backup(const verify_request *req, verify_result *r, pgd_error *err);

void verify_result_free(verify_result *r);

/* Record a problem: the backup is damaged (a delta whose parent is, for one). */
void verify_problem(verify_result *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
