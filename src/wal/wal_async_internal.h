/*
 * wal_async_internal.h - what the files of wal-push --archive-async and
 * wal-fetch --prefetch share; nothing outside src/wal/wal_async*.c
 * includes it.
 *
 *   wal_async.c         the command's spool directory, and the clock a
 *                       waiting command polls
 *   wal_async_daemon.c  how a background process is started, and its log
 *   wal_async_push.c    the foreground of wal-push --archive-async
 *   wal_async_fetch.c   the foreground of wal-fetch --prefetch
 */
#ifndef PGD_WAL_ASYNC_INTERNAL_H
#define PGD_WAL_ASYNC_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>

#include "util/error.h"
#include "wal/wal_async.h"
#include "wal/wal_spool.h"

/*
 * A waiting command looks again after 2 ms, then ever less often up to
 * every 20 ms: a record or a download is seen within a few ms of its
 * arrival, at the cost of a few dozen cheap looks a second.
 */
#define WAL_POLL_MIN_MS 2
#define WAL_POLL_MAX_MS 20
#define WAL_LOG_NAME    "log"
/* "2026-11-30 19:31:21 UTC" with room */
#define WAL_WHEN_LEN 64

/* ---- wal_async.c ---- */

void wal_async_sleep_ms(long ms);
long wal_async_now_ms(void);
/* The spool directory of `role` for datadir (absolute), created if missing. */
bool wal_async_spool_dir(const wal_async_env *env, wal_spool_role role, const char *datadir,
                         char *dir, size_t dirlen, pgd_error *err);

/* ---- wal_async_daemon.c ---- */

/*
 * Start the background process of spool `dir`. In the caller: *started
 * says whether a new process took the lock (false: another holds it). In
 * the new process: *daemon is set and it returns holding the lock in
 * *lock_fd. The caller must hold no repository connection: the new process
 * closes every descriptor it inherits.
 */
bool wal_async_daemon_spawn(const char *dir, bool *started, bool *daemon, int *lock_fd,
                            pgd_error *err);
/*
 * What the background process of spool `dir` runs with: the repository of
 * env, the settings recorded in the spool, and between scans its log
 * rotated past its bound (a long-lived process never fills a disk).
 */
wal_daemon_hooks wal_async_daemon_hooks(const wal_async_env *env, const char *dir);
/* "2026-11-30 19:31:21 UTC": when a background process started, for its log. */
void wal_async_daemon_when(char *out, size_t outlen);

#endif
