/*
 * wal_spool_internal.h - what the files of the spool share; nothing
 * outside src/wal/wal_spool*.c includes it.
 *
 *   wal_spool.c          its directories, lock, wake FIFO and settings,
 *                        and how its small text files are written and read
 *   wal_spool_record.c   the push records in out/
 *   wal_spool_segment.c  segment names and a segment's first page header
 *   wal_spool_fetch.c    the prefetch request and the prefetched segments
 *   wal_spool_queue.c    the queue of a repository behind the others
 */
#ifndef PGD_WAL_SPOOL_INTERNAL_H
#define PGD_WAL_SPOOL_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "pg/wal_segment.h"
#include "util/error.h"

#define WAL_SPOOL_OUT       "out"
#define WAL_SPOOL_QUEUE     "queue"
#define WAL_SPOOL_INFO      "info"
#define WAL_SPOOL_TMP_EXT   ".tmp"
#define WAL_SPOOL_FILE_MODE 0600
#define WAL_SPOOL_TEXT_MAX  (PGD_ERROR_MAX + 256) /* a record: a few fields or one message */

/*
 * Write `text` to `path` through a temporary name; durable: fsync the file
 * before the rename and the directory after it.
 */
bool wal_spool_write_text(const char *path, const char *text, bool durable, pgd_error *err);
/* Read a small text file; *missing (no error) when it does not exist. */
bool wal_spool_read_text(const char *path, char *buf, size_t buflen, bool *missing,
                         struct timespec *mtime, pgd_error *err);

#endif
