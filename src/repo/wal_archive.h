/*
 * wal_archive.h - WAL in the repository: push (archive_command), fetch
 * (restore_command), and the check a backup makes that its WAL arrived.
 */
#ifndef PGD_WAL_ARCHIVE_H
#define PGD_WAL_ARCHIVE_H

#include <stdbool.h>

#include "compress/compress.h"
#include "storage/storage.h"
#include "util/error.h"

typedef enum {
    WAL_PUSH_STORED,    /* newly archived */
    WAL_PUSH_IDENTICAL, /* already archived with the same content */
} wal_push_result;

/* Find the stored object of WAL file `name` whatever its compression. */
bool wal_archive_find(storage *repo, const char *name, bool *found, compress_kind *kind,
                      pgd_error *err);

/*
 * Archive `local_path` under its file name. Idempotent: a re-push of an
 * identical file succeeds; a different file under an archived name fails.
 */
bool wal_archive_push(storage *repo, const char *local_path, compress_kind kind, int level,
                      wal_push_result *result, pgd_error *err);

/* Restore WAL file `name` to `dest` (atomically); *found = false when not archived. */
bool wal_archive_fetch(storage *repo, const char *name, const char *dest, bool *found,
                       pgd_error *err);

/* Wait up to timeout_s for `name` to be archived. */
bool wal_archive_wait(storage *repo, const char *name, int timeout_s, pgd_error *err);

#endif
