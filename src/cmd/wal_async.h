/*
 * wal_async.h - the faces of wal-push --archive-async and wal-fetch
 * --prefetch: what they take from the options (the settings of the spool
 * and of the background processes, wal/wal_async.h does the rest) and the
 * exit status PostgreSQL sees.
 *
 * Both fall back to the direct command (passed in) whenever the spool
 * cannot do its part.
 */
#ifndef PGD_CMD_WAL_ASYNC_H
#define PGD_CMD_WAL_ASYNC_H

#include <stdbool.h>
#include <stddef.h>

#include "util/options.h"
#include "wal/wal_spool.h"

/* Push the file at `path` now; returns the exit status (cmd/wal.c). */
typedef int (*wal_direct_push_fn)(const pgd_options *opts, const char *path);
/* Fetch `name` to `dest` from the repository now; returns the exit status (cmd/wal.c). */
typedef int (*wal_direct_fetch_fn)(const pgd_options *opts, const char *name, const char *dest);

/*
 * wal-push --archive-async PATH: exits 0 only once the spool holds a
 * record, written after the repository confirmed the store, of exactly
 * this file. Returns the exit status (in the background pusher it starts:
 * the pusher's, once it is done).
 */
int cmd_wal_async_push(const pgd_options *opts, const char *path, wal_direct_push_fn direct);

/*
 * wal-fetch --prefetch N NAME DEST: serve NAME from the spool if it was
 * prefetched and is intact, else fetch it directly; then ask the
 * background fetcher for the N segments after it.
 */
int cmd_wal_async_fetch(const pgd_options *opts, const char *name, const char *dest,
                        unsigned prefetch, wal_direct_fetch_fn direct);

/*
 * What waits on this host for repository i of the options (the backlog of
 * wal-push --archive-async: files ready in `datadir`'s pg_wal that its
 * pusher has not stored, and its queue). *none: no spool for it there.
 */
bool cmd_wal_async_backlog(const pgd_options *opts, size_t i, const char *datadir,
                           wal_queue_stat *st, bool *none, pgd_error *err);

#endif
