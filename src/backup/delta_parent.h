/*
 * delta_parent.h - which backup a delta is taken on top of, or why it
 * cannot be one and a full backup is taken instead.
 *
 * The parent is the backup --delta-from names, or with LATEST the newest
 * backup in the repository (whatever its state: a newest backup that is
 * damaged makes a full, with the warning saying so, rather than a delta on
 * an older one that the user did not expect). It serves when:
 *   - its sentinel loads and it is not marked checksum_failed;
 *   - it is of the same system identifier and PostgreSQL major release
 *     (pages of another release's files are not comparable by LSN alone);
 *   - its timeline is the server's current one, or an ancestor of it whose
 *     switch point (pg_wal/<tli>.history) is after the parent's start LSN;
 *   - every member of its chain down to a full is present and readable;
 *   - its chain holds fewer than max_steps deltas (else the next is a full);
 *   - its manifest loads.
 * Otherwise the run takes a full backup and `why` holds the one-line
 * reason. --delta-from naming a backup that is not in the repository is an
 * error (a usage error of the caller), not a silent full.
 */
#ifndef PGD_DELTA_PARENT_H
#define PGD_DELTA_PARENT_H

#include <stdbool.h>
#include <stdint.h>

#include "repo/backup_info.h"
#include "repo/manifest.h"
#include "storage/storage.h"
#include "util/error.h"

#define DELTA_MAX_STEPS_DEFAULT 6
#define DELTA_MAX_STEPS_MAX     1000

typedef struct delta_parent_request {
    const char *from;              /* an id or "LATEST" */
    uint32_t max_steps;            /* deltas a chain may hold */
    const char *system_identifier; /* the server's */
    int pg_version_num;            /* the server's (the major release must match) */
    uint32_t timeline;             /* the server's current timeline */
    const char *pgdata;            /* where pg_wal/<tli>.history is read */
} delta_parent_request;

typedef struct delta_parent {
    bool found; /* false: take a full, `why` says why */
    char why[PGD_ERROR_MAX];
    backup_info info; /* the parent's sentinel: info.start_lsn is the page LSN threshold */
    manifest m;       /* its manifest, indexed */
} delta_parent;

/*
 * Choose the parent. False only on an error that must stop the run (a
 * --delta-from id that does not exist or is not an id: of kind
 * PGD_ERR_USAGE; a repository that cannot be listed); a parent that cannot
 * serve is found = false.
 */
bool delta_parent_choose(storage *repo, const delta_parent_request *req, delta_parent *out,
                         pgd_error *err);

void delta_parent_free(delta_parent *p);

/*
 * Whether the parent chosen is still there, as it was: its sentinel loads,
 * with the same id and start LSN, its manifest is present, and every member
 * of its chain still has its sentinel. A delta checks this right after it
 * claims its id and again just before it writes its own sentinel: delete
 * keeps the parent a running delta's claim names (backup/backup_id.h), but a
 * parent removed anyway (by hand, or by a delete that listed the repository
 * before the claim existed) must make the delta fail, never complete
 * without a restorable chain. False with err naming the parent otherwise.
 */
bool delta_parent_still_there(storage *repo, const delta_parent *p, pgd_error *err);

/*
 * Whether timeline `tli` (from LSN `lsn` on) is on the history of timeline
 * `current`, given the text of current's history file: a line "tli\tswitch"
 * for tli with lsn < switch. Exposed for unit tests.
 */
bool delta_parent_timeline_ok(uint32_t tli, pg_lsn lsn, uint32_t current, const char *history);

#endif
