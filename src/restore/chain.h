/*
 * chain.h - the chain of a delta backup: its parent, the parent's parent,
 * ... down to the full backup it was built on, each with its sentinel and
 * its manifest, loaded and checked before a restore writes anything.
 *
 * A member that is missing, damaged or does not fit (another system, a
 * manifest that disagrees with its sentinel about its type or parent, a
 * chain that never reaches a full backup) fails the restore naming it:
 * "backup X needs its parent Y, which is not in the repository". Members
 * are kept newest first, which is the order a restore reads them in
 * (restore/extract.h: newer pages win, older backups only fill what is
 * still missing).
 */
#ifndef PGD_CHAIN_H
#define PGD_CHAIN_H

#include <stdbool.h>
#include <stddef.h>

#include "repo/backup_info.h"
#include "repo/manifest.h"
#include "storage/storage.h"
#include "util/error.h"

/* more members than this can only be a loop of parents: no --delta-max-steps goes so far */
#define CHAIN_MEMBERS_MAX 1000

typedef struct chain_member {
    backup_info bi;
    manifest m; /* checked, index built (repo/backup_read.h) */
} chain_member;

typedef struct chain {
    chain_member *parents; /* the delta's parent first, the full backup last */
    size_t n;              /* 0 for a full backup */
} chain;

/*
 * The parents of backup `bi` (whose manifest `m` is loaded), down to its
 * full backup. For a full backup, an empty chain.
 */
bool chain_load(storage *repo, const backup_info *bi, const manifest *m, bool allow_external_links,
                chain *c, pgd_error *err);
void chain_free(chain *c);

#endif
