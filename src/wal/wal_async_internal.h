/*
 * wal_async_internal.h - what the files of wal-push --archive-async and
 * wal-fetch --prefetch share; nothing outside src/wal/wal_async*.c
 * includes it.
 *
 *   wal_async.c         the command's spool directory, and the clock a
 *                       waiting command polls
 *   wal_async_daemon.c  how a background process is started, and its log
 *   wal_async_push.c    the foreground of wal-push --archive-async
 *   wal_async_several.c the same with several repositories
 *   wal_async_fetch.c   the foreground of wal-fetch --prefetch
 */
#ifndef PGD_WAL_ASYNC_INTERNAL_H
#define PGD_WAL_ASYNC_INTERNAL_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <time.h>

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
/*
 * Warn about each non-empty queue of `datadir` whose repository is none of
 * envs: it is pushed nowhere, and left alone.
 */
void wal_async_report_orphans(const wal_async_env *const *envs, size_t n, const char *datadir);
/* The spool root of env for datadir (absolute): --spool-path or the default. */
bool wal_async_spool_root(const wal_async_env *env, const char *datadir, char *root, size_t len,
                          pgd_error *err);
/* The spool directory of `role` for datadir (absolute), created if missing. */
bool wal_async_spool_dir(const wal_async_env *env, wal_spool_role role, const char *datadir,
                         char *dir, size_t dirlen, pgd_error *err);

/* ---- wal_async_push.c ---- */

/* One wal-push --archive-async call: the file, where it is, and its spool. */
typedef struct wal_push_call {
    const wal_async_env *env;
    const wal_async_push_settings *s;
    const char *path;
    char name[WAL_NAME_MAX];
    char pg_wal[PATH_MAX];
    char datadir[PATH_MAX];
    char dir[WAL_SPOOL_PATH_MAX];
    wal_file_sum sum;
} wal_push_call;

/*
 * Where the call's file, pg_wal, data directory and spool (of c->env) are;
 * *ready: PostgreSQL marked the file ready. False: push directly.
 */
bool wal_async_push_locate(wal_push_call *c, bool *ready, pgd_error *err);
/* Size and CRC-32C of the local file, to compare with what the pusher recorded. */
bool wal_async_push_file_sum(const char *path, wal_file_sum *sum, pgd_error *err);
bool wal_async_push_before(const struct timespec *a, const struct timespec *b);
/* The spool could not do its part: say why, and have the command push `name` itself. */
wal_async_outcome wal_async_push_fall_back(const char *name, pgd_error *err);
/* The background pusher's life: push until idle, then stop. */
wal_async_outcome wal_async_push_background(const wal_async_env *env,
                                            const wal_async_push_settings *s, const char *pg_wal,
                                            const char *dir, int lock_fd);
/*
 * wal-push starts the pusher again when it dies while waiting; after this
 * many starts without a record of its file, it pushes the file itself.
 */
#define WAL_PUSHER_STARTS_MAX 2

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
