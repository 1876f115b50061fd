/*
 * backup_read.h - a backup's manifest as every reader of a backup (restore,
 * verify, the delta backup choosing its parent) loads it: checked before
 * anything is done with it.
 *
 * The manifest is untrusted input: every path must stay inside the target
 * directory, and every partition name must be one the backup writes (never
 * a path). Its links are the restore's to check (restore/links.h), since
 * only a restore knows where they will land.
 */
#ifndef PGD_BACKUP_READ_H
#define PGD_BACKUP_READ_H

#include <stdbool.h>

#include "repo/manifest.h"
#include "storage/storage.h"
#include "util/error.h"

/* manifest.json of backup `id`, checked, its index built. */
bool backup_read_manifest(storage *repo, const char *id, manifest *m, pgd_error *err);

#endif
