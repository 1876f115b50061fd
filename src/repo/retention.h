/*
 * retention.h - which backups and which WAL files a retention policy
 * removes, decided from a list alone: no I/O, so every rule is a pure
 * function the unit tests can drive with any repository they can imagine.
 *
 * The rules (docs/user-guide.md, "Retention and delete", repeats them for users):
 *
 *   - Backups are ordered by start time, then start LSN, then id; never by
 *     WAL file names (after a pg_upgrade or a timeline switch those do not
 *     follow time).
 *   - A backup's chain: a delta names its parent; following parents ends
 *     at a full backup. The dependents of a backup are the backups whose
 *     chain reaches it. A chain that meets a missing or damaged parent, or
 *     loops, is broken.
 *   - --retain-full N keeps the newest N full backups and all their
 *     dependents. --retain-since T keeps the newest backup that finished at
 *     or before T and every backup that started after it (if none finished
 *     by T, everything is kept). Both together keep what either keeps.
 *     --backup ID removes one backup, refused when another backup depends
 *     on it unless its dependents go too.
 *   - The newest usable backup (sentinel readable, chain whole) is always
 *     kept, and every kept backup keeps its whole chain of parents.
 *   - A damaged backup (unreadable sentinel) or one with a broken chain is
 *     never counted as kept. It is removed when it started before the
 *     oldest kept backup and nothing kept depends on it; otherwise it stays,
 *     reported, for a person to look at (or --backup ID).
 *   - A backup that is running (claimed, no sentinel yet) and is a delta
 *     keeps its parent, the one its claim names, and so that parent's whole
 *     chain (whatever else the policy says; --backup of it is refused). A
 *     claim that names no parent (written by an older version) keeps the
 *     newest usable backup that started before the delta instead: its
 *     parent when it was taken with --delta-from LATEST. A claim counts as
 *     running by retention_claim_classify below: that of a dead run pins
 *     nothing once it is older than --garbage-age.
 *   - WAL: files of segments before the start segment of the oldest kept
 *     backup go, on every timeline; .history files always stay. While any
 *     backup is running no WAL goes at all: its start is not known yet.
 */
#ifndef PGD_RETENTION_H
#define PGD_RETENTION_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "pg/pg_control.h"
#include "pg/wal_name.h"
#include "repo/layout.h"
#include "util/process.h"
#include "util/error.h"

#define RETENTION_REASON_MAX 320

/* One backup with a sentinel, as retention needs it. */
typedef struct retention_backup {
    char id[BACKUP_ID_LEN + 1];
    char parent[BACKUP_ID_LEN + 1]; /* "" for a full backup */
    bool damaged;                   /* sentinel unreadable: only id is known */
    int64_t start_time, stop_time;  /* Unix seconds */
    uint64_t start_lsn;
    char start_wal[WAL_FILE_NAME_LEN + 1];
} retention_backup;

/* A backup claimed but without a sentinel that is (or may be) still running. */
typedef struct retention_running {
    char id[BACKUP_ID_LEN + 1];
    char parent[BACKUP_ID_LEN + 1]; /* a delta's parent, as its claim names it; "" unknown */
} retention_running;

typedef struct retention_policy {
    long retain_full; /* 0: not given */
    bool retain_since_set;
    int64_t retain_since;  /* Unix seconds */
    const char *backup_id; /* NULL: not given */
    bool with_dependents;
} retention_policy;

typedef struct retention_decision {
    bool remove;
    char reason[RETENTION_REASON_MAX];
} retention_decision;

typedef struct retention_plan {
    retention_decision *decisions; /* one per input backup, same index */
    size_t *remove_order;          /* input indexes to remove, dependents before parents */
    size_t nremove;
    /* WAL of segments before this one goes (on every timeline); "" when none goes */
    char wal_keep_from[WAL_FILE_NAME_LEN + 1];
    char wal_note[RETENTION_REASON_MAX]; /* why no WAL goes, when wal_keep_from is "" */
} retention_plan;

/*
 * Decide. Fails (nothing decided) on a policy that cannot be applied as
 * asked: --backup of an unknown id, of the newest usable backup, or of one
 * others depend on without with_dependents.
 */
bool retention_plan_make(const retention_backup *backups, size_t n,
                         const retention_running *running, size_t nrunning,
                         const retention_policy *policy, retention_plan *plan, pgd_error *err);
void retention_plan_free(retention_plan *plan);

/*
 * A WAL file stored under `name` (compression suffix removed) goes when
 * keep_from is set and it is a segment, partial segment or backup history
 * file of a segment before keep_from's segment number, whatever its
 * timeline. Timeline history files and unknown names never go.
 */
bool retention_wal_removable(const char *name, const char *keep_from);

/*
 * A backup directory without a sentinel: a run still going, or what a
 * killed one left. Its claim (backups/<id>/claim.json, written first by
 * every run) says when the run started and which process it is.
 */
typedef enum {
    RETENTION_CLAIM_RUNNING, /* treated as running: never touched, its WAL kept */
    RETENTION_CLAIM_DEAD,    /* garbage: --garbage removes it */
    RETENTION_CLAIM_UNKNOWN, /* no readable claim: left alone, and treated as running */
} retention_claim_state;

typedef struct retention_claim {
    char id[BACKUP_ID_LEN + 1]; /* the backup it claims, for messages */
    bool present;               /* claim.json exists */
    bool readable;              /* and says when the run started */
    int64_t start_time;
    process_state process;          /* its process, seen from here (util/process.h) */
    char process_why[128];          /* how that was decided: "process 42 of this host, ..." */
    char parent[BACKUP_ID_LEN + 1]; /* a delta's parent ("parent"), "" when it names none */
    char system_identifier[PG_SYSID_TEXT_MAX];     /* of the cluster it backs up; "" in older claims */
    char host[64];                  /* of the process that claimed it */
    int64_t pid;
} retention_claim;

/* --garbage-age's default: longer than any backup runs. */
#define RETENTION_GARBAGE_AGE_DEFAULT_S (24 * 3600)

/*
 * Dead at once when its process is gone (this host and boot: util/process.h), running while it
 * is alive; otherwise (another host, an older claim) dead only once older than garbage_age.
 * why says which rule decided, and for a claim taken as running only by its age, how to remove
 * it when its run has in fact ended.
 */
retention_claim_state retention_claim_classify(const retention_claim *c, int64_t now,
                                               int64_t garbage_age, char *why, size_t whylen);

/* Unix time of a backup id's start (ids are UTC start times); false when it is no id. */
bool retention_id_time(const char *id, int64_t *t);

#endif
