/*
 * wal_archive.h - WAL in the repository: push (archive_command), fetch
 * (restore_command), and the check a backup makes that its WAL arrived.
 */
#ifndef PGD_WAL_ARCHIVE_H
#define PGD_WAL_ARCHIVE_H

#include <stdbool.h>
#include <stdint.h>

#include "compress/compress.h"
#include "storage/storage.h"
#include "util/error.h"

/* What a push stored or a fetch wrote: the spool records it (wal/wal_spool.h). */
typedef struct wal_file_sum {
    uint64_t size;
    uint32_t crc; /* CRC-32C of the uncompressed content */
} wal_file_sum;

typedef enum {
    WAL_PUSH_STORED,    /* newly archived */
    WAL_PUSH_IDENTICAL, /* already archived with the same content */
} wal_push_result;

/*
 * A temporary file a writer has not touched for this long belongs to a
 * killed one: a live push writes its file in one go, in seconds even for a
 * 1 GiB segment on a slow disk, so an hour leaves a wide margin. Removing
 * the file of a push that is somehow still alive only makes that push fail
 * (its rename finds nothing), and PostgreSQL runs archive_command again.
 */
#define WAL_STALE_TEMP_AGE_S 3600

/* Find the stored object of WAL file `name` whatever its compression. */
bool wal_archive_find(storage *repo, const char *name, bool *found, compress_kind *kind,
                      pgd_error *err);

/*
 * Archive `local_path` under its file name, once it is checked to be the
 * WAL file that name says (pg/wal_segment.h). Idempotent: a re-push of an
 * identical file succeeds; a different file under an archived name fails,
 * whatever the compression of either (see wal_archive_push.c for how two
 * concurrent pushes are kept from both succeeding). The file is mapped:
 * only for archive_command's own push, during which PostgreSQL leaves it be.
 */
bool wal_archive_push(storage *repo, const char *local_path, compress_kind kind, int level,
                      wal_push_result *result, pgd_error *err);
/*
 * The same for a file that may change once pushed elsewhere (the pusher's pg_wal files): read
 * into memory, so that what is checked is what is stored; tells the size and CRC-32C of what
 * it pushed (sum may be NULL).
 */
bool wal_archive_push_sum(storage *repo, const char *local_path, compress_kind kind, int level,
                          wal_push_result *result, wal_file_sum *sum, pgd_error *err);

/* Remove what killed pushes left in the directory of WAL file `name`. */
bool wal_archive_remove_stale_temp(storage *repo, const char *name, pgd_error *err);

/*
 * A push without --archive-async sweeps its directory (the call above)
 * after segments whose number is a multiple of this, and after every other
 * kind of file: a sweep is a listing (readdir of a directory that grows with
 * the archive, or ListMultipartUploads: a request), too dear to pay per
 * segment for what only a killed push leaves. A sweep removes what has been
 * idle for WAL_STALE_TEMP_AGE_S, so what a killed push left goes at the
 * first sweep after that (on a quiet server with no archive_timeout, that
 * may be days), or with `delete --garbage`.
 */
#define WAL_SWEEP_EVERY 64
bool wal_archive_sweep_due(const char *name);

/*
 * Restore WAL file `name` to `dest` (atomically), checked on the way
 * (pg/wal_segment.h). *found = false, with no error, only when the
 * repository is there (it holds WAL or backups) and this file is not in it:
 * an empty or missing repository is an error, so that a wrong --repo or an
 * unmounted directory never reads as "the archive ends here".
 */
bool wal_archive_fetch(storage *repo, const char *name, const char *dest, bool *found,
                       pgd_error *err);
/*
 * The same, telling the size and CRC-32C of what it wrote to dest (sum may
 * be NULL). dest is fsynced before it gets its name. Only wal_archive_fetch
 * looks whether the repository is there when the file is not (a listing,
 * which a prefetcher polling for the end of the archive would repeat for
 * nothing): here *found = false says no more than that.
 */
bool wal_archive_fetch_sum(storage *repo, const char *name, const char *dest, bool *found,
                           wal_file_sum *sum, pgd_error *err);

/*
 * Archived text file `name` (a .history or .backup file) into *text
 * (malloc'd, NUL-terminated, *len bytes), checked as wal-fetch checks it;
 * *found = false, and no error, when it is not archived. When it fails,
 * err is of kind PGD_ERR_DAMAGED when the file is (it was there and failed
 * the check, or its content could not be decoded); of another kind, the
 * repository could not be read.
 */
bool wal_archive_read_text(storage *repo, const char *name, char **text, size_t *len, bool *found,
                           pgd_error *err);

/* Wait up to timeout_s for `name` to be archived. */
bool wal_archive_wait(storage *repo, const char *name, int timeout_s, pgd_error *err);
/*
 * The system identifier in the long page header of archived segment
 * `name` (decimal, as pg_control_system() gives it): a segment of another
 * cluster under the same name must not pass for a backup's WAL.
 */
bool wal_archive_system_id(storage *repo, const char *name, char *out, size_t outlen,
                           pgd_error *err);

#endif
