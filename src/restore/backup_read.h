/*
 * backup_read.h - what a restore reads from the repository besides the
 * partitions: the manifest, checked before anything is written, and
 * PostgreSQL's backup_manifest, copied into the restore so that
 * `pg_verifybackup -n DIR` can check it independently of pgdirect.
 *
 * The manifest is untrusted input: every path must stay inside the target
 * directory (restore/extract.h), every partition name must be one the
 * backup writes (never a path), and its links must pass restore/links.h.
 */
#ifndef PGD_BACKUP_READ_H
#define PGD_BACKUP_READ_H

#include <stdbool.h>

#include "repo/manifest.h"
#include "restore/durable.h"
#include "storage/storage.h"
#include "util/error.h"

/* manifest.json of backup `id`, checked, its index built. */
bool backup_read_manifest(storage *repo, const char *id, bool allow_external_links, manifest *m,
                          pgd_error *err);

/* backup_manifest of backup `id` into `target` (added to `l` for the final fsync pass). */
bool backup_read_pg_manifest(storage *repo, const char *id, const char *target, durable_list *l,
                             pgd_error *err);

#endif
