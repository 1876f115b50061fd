/*
 * backup_id.h - a backup's id, claimed exclusively in the repository before
 * anything else is written under it, and given back (everything under it
 * removed) when the backup fails.
 *
 * Two runs started in the same second must never share an id: each would
 * write over the other's partitions. The claim is an object created with
 * STORAGE_WRITE_NO_REPLACE (local: renameat2 RENAME_NOREPLACE; S3: PUT with
 * If-None-Match: *), so exactly one run creates backups/<id>/claim.json.
 * The others take the next second at once, without waiting: an id is a
 * name that sorts by start time, not a clock reading.
 *
 * claim.json holds {"id", "host", "pid", "boot_id", "pid_start",
 * "pid_ns", "start_time"} (the process, as util/process.h decides whether
 * it still runs), "system_identifier" of the cluster (two backups of one
 * cluster at once are refused) and, for a delta,
 * "parent" (the parent's id) and "parent_start_lsn": a delta's parent is
 * chosen before its id is claimed, so from its first object on, delete
 * (repo/repo_contents.c, repo/retention.h) can see which backup a running
 * delta builds on and keeps it.
 */
#ifndef PGD_BACKUP_ID_H
#define PGD_BACKUP_ID_H

#include <stdbool.h>
#include <time.h>

#include "pg/lsn.h"
#include "repo/layout.h"
#include "storage/storage.h"
#include "util/error.h"

/*
 * Claim the id of `start`, or of the first later second nobody holds. A
 * second whose directory holds objects of a run that made no claim (an
 * older version, or a sentinel without a directory) counts as taken.
 */
bool backup_id_claim(storage *repo, time_t start, char id[BACKUP_ID_LEN + 1], pgd_error *err);

/* A delta's parent, as its claim records it. */
typedef struct backup_id_parent {
    const char *id;   /* the parent's backup id */
    pg_lsn start_lsn; /* its start LSN, written "X/Y" */
} backup_id_parent;

/*
 * The same for a full (parent NULL, id ending F) or a delta (ending D, the
 * claim naming its parent). A second that holds a backup of the other kind
 * counts as taken too: ids sort by time, and a delta must never sort
 * before its parent (D < F in the same second). The claim names the
 * cluster's system_identifier when given (two backups of one cluster at
 * once: backup_id_running_twin).
 */
bool backup_id_claim_kind(storage *repo, time_t start, const backup_id_parent *parent,
                          const char *system_identifier, char id[BACKUP_ID_LEN + 1],
                          pgd_error *err);

/*
 * Remove everything backup `id` wrote: its sentinel, every object under
 * backups/<id>/ and, last, its claim and the directory. On failure err
 * names the cause and what is left in the repository.
 */
bool backup_id_discard(storage *repo, const char *id, pgd_error *err);

/*
 * Remove the temporary objects killed runs left under backups/ (their
 * ids were never given back): those nobody has written to for
 * BACKUP_ID_STALE_S. A failure to remove them is a warning, not a failed
 * backup.
 */
void backup_id_sweep_stale(storage *repo);

#endif
