/*
 * wal_async.h - wal-push --archive-async and wal-fetch --prefetch: the part
 * PostgreSQL runs (wait for the background pusher's record of one file;
 * serve one segment from the prefetch spool) and the start of the
 * background processes themselves (wal/wal_pusher.h, wal/wal_prefetch.h).
 *
 * The command (src/cmd/wal.c) reads the options and says here what it
 * decided (wal_async_env); nothing below reads them. Whenever the spool
 * cannot do its part, these functions say so (WAL_ASYNC_DIRECT, with a
 * warning) and the command archives or fetches the file itself: the spool
 * makes WAL faster, it never decides what PostgreSQL is told.
 *
 * A call may fork the background process and return in it
 * (WAL_ASYNC_DAEMON_OK or WAL_ASYNC_DAEMON_FAILED): that process then has
 * done its whole life, and the command only turns the outcome into its
 * exit status.
 */
#ifndef PGD_WAL_ASYNC_H
#define PGD_WAL_ASYNC_H

#include <limits.h>
#include <stdbool.h>
#include <stdint.h>

#include "compress/compress.h"
#include "storage/storage.h"
#include "util/error.h"
#include "wal/wal_spool.h"

/* the settings fingerprint: 16 hex digits and a terminator, with room */
#define WAL_SETTINGS_LEN 32

/* What the command decided, for the foreground and the background process it may start. */
typedef struct wal_async_env {
    const char *spool_path; /* --spool-path: NULL for the default (beside the data directory) */
    const char *repo_id;    /* the repository as the spool keys it (its URI, S3 endpoint) */
    const char *repo_uri;   /* the repository, for the background process's log */
    /*
     * The fingerprint of everything the background process takes from the
     * command that starts it (see wal_spool_settings_write): it stops when a
     * later command records other settings.
     */
    const char *settings;
    /* opens the repository in the background process */
    storage *(*open_repo)(void *arg, pgd_error *err);
    void *open_arg;
} wal_async_env;

typedef enum {
    WAL_ASYNC_DONE,         /* archived (push), served (fetch) */
    WAL_ASYNC_DIRECT,       /* the spool could not do its part (warned): do it directly */
    WAL_ASYNC_FAILED,       /* the file's archiving failed: *err says why */
    WAL_ASYNC_DAEMON_OK,    /* in the background process, at the end of its life */
    WAL_ASYNC_DAEMON_FAILED /* the same, ended by an error (in its log) */
} wal_async_outcome;

/* What wal-push --archive-async runs with (options of cmd/wal.c). */
typedef struct wal_async_push_settings {
    unsigned concurrency; /* --archive-push-concurrency */
    /*
     * --archive-push-queue-max: one repository: warn past this backlog; several: the bound
     * of each repository's queue
     */
    uint64_t queue_max;
    long timeout_s; /* --archive-timeout */
    compress_kind kind;
    int level;
} wal_async_push_settings;

/* --archive-push-concurrency: a bound that keeps a typo from opening hundreds of uploads */
#define WAL_PUSH_CONCURRENCY_MAX 64
/* --archive-timeout: a day; PostgreSQL retries a failed archive_command anyway */
#define WAL_ARCHIVE_TIMEOUT_MAX_S 86400

/*
 * wal-push --archive-async PATH: WAL_ASYNC_DONE only once the spool holds a
 * record, written after the repository confirmed the store, of exactly
 * this file.
 */
wal_async_outcome wal_async_push(const wal_async_env *env, const wal_async_push_settings *s,
                                 const char *path, pgd_error *err);

/*
 * The same with several repositories (envs[0..n-1], in the order given):
 * WAL_ASYNC_DONE once one repository's pusher recorded exactly this file
 * and, for each of the others, its record says the same or a copy of the
 * file waits, fsynced, in its queue (wal_spool.h). A queue that would pass
 * s->queue_max bytes refuses the copy: WAL_ASYNC_FAILED naming the
 * repository, and the file is not acknowledged.
 */
wal_async_outcome wal_async_push_several(const wal_async_env *envs, size_t n,
                                         const wal_async_push_settings *s, const char *path,
                                         pgd_error *err);

/*
 * What waits for the repository of env from the data directory `datadir`
 * (absolute): files PostgreSQL marked ready that its pusher has not
 * recorded, and its queue. *none: it has no spool directory there.
 */
bool wal_async_backlog(const wal_async_env *env, const char *datadir, wal_queue_stat *st,
                       bool *none, pgd_error *err);

/* One wal-fetch --prefetch call: its data directory and spool. */
typedef struct wal_async_fetch_call {
    char datadir[PATH_MAX];
    char dir[WAL_SPOOL_PATH_MAX];
    bool spooled; /* the spool is usable: ask for the segments ahead */
} wal_async_fetch_call;

/*
 * Serve segment `name` to `dest` from the spool if it was prefetched and is
 * intact (waiting for a download of it in progress): WAL_ASYNC_DONE; else
 * WAL_ASYNC_DIRECT. Run in the data directory, as restore_command is.
 */
wal_async_outcome wal_async_fetch_serve(const wal_async_env *env, const char *name,
                                        const char *dest, wal_async_fetch_call *call);

/*
 * After `name` reached `dest`: ask for the `prefetch` segments after it
 * and make sure a background fetcher (`concurrency` downloads at a time)
 * works on them. WAL_ASYNC_DONE in the command (failures only cost the
 * prefetch: warned); in the fetcher it starts, how its life ended.
 */
wal_async_outcome wal_async_fetch_ahead(const wal_async_env *env, wal_async_fetch_call *call,
                                        const char *name, const char *dest, unsigned prefetch,
                                        unsigned concurrency);

#endif
