/*
 * verify_result.h - what verify finds of one backup: its problems, and what
 * it found of the backup's WAL and the point-in-time window; the request
 * that asks for it. Shared by the partition side (verify.h) and the WAL
 * side (verify_wal.h), which both record problems here.
 */
#ifndef PGD_VERIFY_RESULT_H
#define PGD_VERIFY_RESULT_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "repo/backup_info.h"
#include "storage/storage.h"

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
    char window_end_lsn[LSN_TEXT_MAX];    /* where that segment ends */
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

void verify_result_free(verify_result *r);

/* A problem found: the backup is damaged; the first VERIFY_PROBLEMS_MAX are kept, all counted. */
void verify_problem(verify_result *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
