/*
 * wal_spool.h - the local spool of asynchronous WAL archiving and of WAL
 * prefetching: what it holds, how each thing in it is written, and the
 * lock that lets one background process work for it.
 *
 * Layout (one directory per data directory and repository, so that two
 * clusters or two repositories never read each other's records):
 *
 *   <spool-path>/push-<key>/          wal-push --archive-async
 *       info                          the data directory and repository it serves
 *       lock                          held by the running pusher (OFD lock); its pid
 *       wake                          a FIFO: a command writes a byte to have the
 *                                     pusher look now rather than at its next poll
 *       settings                      a hash of the options and AWS_* variables the
 *                                     latest command runs with: a pusher started with
 *                                     others stops, and one with these takes over
 *       log, log.old                  the pusher's messages (rotated past 1 MiB)
 *       out/<wal>.ok                  "<wal> is in the repository": size and CRC-32C of
 *                                     the file stored; written to a temporary name,
 *                                     fsynced, renamed, directory fsynced, and only
 *                                     after the repository confirmed the store
 *       out/<wal>.error               the pusher's failure for <wal>, one line
 *       queue/<wal>                   with several repositories: a copy of a WAL file
 *                                     acknowledged before this repository had it,
 *                                     waiting for its pusher (copied, fsynced,
 *                                     renamed, directory fsynced before the
 *                                     acknowledgement; its mtime is the file's);
 *                                     removed once stored. At most
 *                                     --archive-push-queue-max bytes.
 *   <spool-path>/fetch-<key>/         wal-fetch --prefetch N
 *       info, lock, settings, log     as above, for the prefetcher
 *       request                       the last segment served and how many to fetch
 *                                     after it: "<wal> <segment size> <sysid> <N>"
 *       <wal>.<size>.<crc32c>         a prefetched segment that passed the checks of a
 *                                     direct fetch; visible only under this name
 *       <wal>.part*                   a download in progress
 *
 * <key> is 16 hex digits of a hash of the data directory's real path and
 * the repository (its URI without its ?settings, and its S3 or Azure
 * endpoint: never a credential). Nothing in the spool but queue/ is ever
 * the only copy of anything: a lost record means a segment is pushed again
 * (the repository answers "identical"), a lost prefetched file means it is
 * fetched from the repository again. A queue/ entry is the only copy its
 * repository will get: it is written as durably as pg_wal's own files.
 */
#ifndef PGD_WAL_SPOOL_H
#define PGD_WAL_SPOOL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "pg/wal_name.h"
#include "wal/wal_archive.h"
#include "storage/storage.h"
#include "util/error.h"

#define WAL_SPOOL_DEFAULT_NAME "pgdirect-spool" /* next to the data directory */
#define WAL_SPOOL_PATH_MAX     4096
#define WAL_NAME_MAX           64            /* the longest WAL file name is 40 characters */
#define WAL_SPOOL_LOG_MAX      (1024 * 1024) /* a log longer than this is rotated */

typedef enum { WAL_SPOOL_PUSH, WAL_SPOOL_FETCH } wal_spool_role;

/* What the command that starts a spool's background process (pusher or prefetcher) gives it. */
typedef struct wal_daemon_hooks {
    /* opens the repository (in the background process; shared by its threads) */
    storage *(*open_repo)(void *arg, pgd_error *err);
    void *open_arg;
    /* the settings it runs with: when a command records others in the spool, it stops */
    const char *settings;
    /* called between scans (the caller rotates its log there); may be NULL */
    void (*tick)(void *arg);
    void *tick_arg;
} wal_daemon_hooks;

/*
 * The default spool root for a data directory: <its parent>/pgdirect-spool
 * (see wal_spool.c for why there).
 */
bool wal_spool_default_root(const char *datadir, char *out, size_t outlen, pgd_error *err);

/* 64-bit FNV-1a of "<datadir>\n<repo_id>": the <key> of the layout. */
uint64_t wal_spool_key(const char *datadir, const char *repo_id);

/*
 * The spool directory of `role` for this data directory and repository
 * under `root`, created with its parents if missing; its info file is
 * written, or checked to name the same data directory and repository.
 */
bool wal_spool_open(const char *root, wal_spool_role role, const char *datadir, const char *repo_id,
                    char *dir, size_t dirlen, pgd_error *err);

/* Can a small record be written in `dir` now (space, permission)? */
bool wal_spool_probe(const char *dir, pgd_error *err);

/* ---- the lock of the background process ---- */

/*
 * Take the lock of `dir` (an OFD lock on dir/lock, released when the
 * process dies, however it dies) and write our pid into it. *busy (no
 * error) when another process holds it. *fd stays open while we hold it.
 */
bool wal_spool_lock_take(const char *dir, int *fd, bool *busy, pgd_error *err);
/* Does a process hold the lock of `dir`? (A test: it takes nothing.) */
bool wal_spool_lock_held(const char *dir, bool *held, pgd_error *err);

/* ---- waking the background process ---- */

/* Open (creating it if missing) the wake FIFO of `dir`, for the background process to wait on. */
bool wal_spool_wake_open(const char *dir, int *fd, pgd_error *err);
/* Wait until a command pokes the FIFO or `ms` pass; then take every poke so far. */
void wal_spool_wake_wait(int fd, long ms);
/* Poke the background process of `dir`; nothing happens when none listens. */
void wal_spool_wake(const char *dir);

/* ---- settings ---- */

/* Record the settings fingerprint the latest command runs with (written only when it changed). */
bool wal_spool_settings_write(const char *dir, const char *fingerprint, pgd_error *err);
/* Has a command with other settings than `mine` come since? (no file: no) */
bool wal_spool_settings_changed(const char *dir, const char *mine, bool *changed, pgd_error *err);

/* ---- push records (out/; wal_spool_record.c) ---- */

typedef enum {
    WAL_RECORD_NONE,  /* nothing recorded for this file */
    WAL_RECORD_OK,    /* stored: sum tells what */
    WAL_RECORD_ERROR, /* the pusher failed: msg tells why */
} wal_record_kind;

typedef struct wal_push_record {
    wal_record_kind kind;
    wal_file_sum sum;
    char msg[PGD_ERROR_MAX];
    struct timespec written; /* mtime of the record */
} wal_push_record;

/* Record durably that `name`, with this size and CRC, is in the repository. */
bool wal_spool_record_ok(const char *dir, const char *name, const wal_file_sum *sum,
                         pgd_error *err);
/* Record the pusher's failure for `name` (replaces an older one). */
bool wal_spool_record_error(const char *dir, const char *name, const char *msg, pgd_error *err);
/*
 * What is recorded for `name`. A record that cannot be parsed is removed
 * and reads as none: the pusher then pushes the file again.
 */
bool wal_spool_record_read(const char *dir, const char *name, wal_push_record *rec, pgd_error *err);
/* Remove the record of `kind` for `name` (missing is fine). */
bool wal_spool_record_remove(const char *dir, const char *name, wal_record_kind kind,
                             pgd_error *err);

/* Called for each record in out/; temporary files are passed with kind NONE. */
typedef bool (*wal_spool_record_cb)(void *arg, const char *name, wal_record_kind kind,
                                    pgd_error *err);
bool wal_spool_record_list(const char *dir, wal_spool_record_cb cb, void *arg, pgd_error *err);
/* Remove what a killed pusher left half-written in out/. */
bool wal_spool_record_sweep(const char *dir, pgd_error *err);

/* ---- the queue of a repository behind the others (queue/; wal_spool_queue.c) ---- */

typedef struct wal_queue_stat {
    unsigned files;
    uint64_t bytes;
    char oldest[WAL_NAME_MAX]; /* the first in WAL order; "" when empty */
    time_t oldest_mtime;       /* the WAL file's own modification time */
} wal_queue_stat;

/* Where the queued copy of `name` is. */
void wal_spool_queue_path(const char *dir, const char *name, char *out, size_t outlen);
/*
 * A spool file written to `tmp` (fd open on it) put in place as `path`: fsync when durable,
 * close, rename, and sync the directory when durable. Takes fd; on failure tmp is removed.
 */
bool wal_spool_commit(int fd, const char *tmp, const char *path, bool durable, pgd_error *err);

/* Copy the WAL file at `src` into the queue as `name`, durably (see wal_spool_queue.c). */
bool wal_spool_queue_add(const char *dir, const char *name, const char *src, pgd_error *err);
/* Remove the queued copy of `name` (missing is fine). */
bool wal_spool_queue_remove(const char *dir, const char *name, pgd_error *err);
/* Called for each queued WAL file (kind OK) and anything else in queue/ (kind NONE). */
bool wal_spool_queue_list(const char *dir, wal_spool_record_cb cb, void *arg, pgd_error *err);
/* How many files and bytes wait, and the oldest. A spool without queue/ holds none. */
bool wal_spool_queue_stat(const char *dir, wal_queue_stat *st, pgd_error *err);
/* Remove the copies a killed command left half-written. */
bool wal_spool_queue_sweep(const char *dir, pgd_error *err);

/* A non-empty queue of data directory `datadir` whose repository is none of those configured. */
typedef bool (*wal_spool_orphan_cb)(void *arg, const char *dir, const char *repo_id,
                                    const wal_queue_stat *st, pgd_error *err);
bool wal_spool_queue_orphans(const char *root, const char *datadir, const char *const *repo_ids,
                             size_t nrepos, wal_spool_orphan_cb cb, void *arg, pgd_error *err);

/* ---- WAL segment names (wal_spool_segment.c) ---- */

/* The segment `n` after `name` on the same timeline (false when the name is not a segment). */
bool wal_spool_segment_after(const char *name, uint32_t seg_size, unsigned n,
                             char out[WAL_FILE_NAME_LEN + 1]);
/*
 * System identifier and segment size from the long header of a segment's
 * first page, read from the file at `path`.
 */
bool wal_spool_segment_identity(const char *path, uint64_t *sysid, uint32_t *seg_size,
                                pgd_error *err);

/* ---- prefetch (fetch-<key>/; wal_spool_fetch.c) ---- */

#define WAL_PREFETCH_MAX 64 /* --prefetch limit: the spool holds at most this many segments */

typedef struct wal_fetch_request {
    char name[WAL_FILE_NAME_LEN + 1]; /* the segment PostgreSQL was last served */
    uint32_t seg_size;
    uint64_t sysid; /* of that segment: prefetched files must have the same */
    unsigned count; /* how many segments after it to keep ready */
} wal_fetch_request;

bool wal_spool_request_write(const char *dir, const wal_fetch_request *req, pgd_error *err);
/* *missing (no error) when no request was ever written. */
bool wal_spool_request_read(const char *dir, wal_fetch_request *req, bool *missing, pgd_error *err);
/* Is `name` one of the segments the request wants? */
bool wal_spool_request_wants(const wal_fetch_request *req, const char *name);

/* Where a download of `name` writes before it is published. */
void wal_spool_part_path(const char *dir, const char *name, char *out, size_t outlen);
/* Make the checked download at `part` visible as the prefetched copy of `name`. */
bool wal_spool_entry_publish(const char *dir, const char *name, const char *part,
                             const wal_file_sum *sum, pgd_error *err);

typedef enum {
    WAL_ENTRY_MISSING, /* not prefetched */
    WAL_ENTRY_SERVED,  /* moved to dest, its size and CRC as recorded at download */
    WAL_ENTRY_CORRUPT, /* did not match what was recorded: removed, `why` says how */
    WAL_ENTRY_STALE,   /* of another database system: removed, `why` says which */
} wal_entry_result;

/*
 * Serve the prefetched copy of `name` at `dest`: verified against the size
 * and CRC recorded when it was downloaded, and, unless expect_sysid is 0,
 * to be of that database system; then moved (renamed, or copied across
 * file systems). A copy that does not match is removed, never served.
 */
bool wal_spool_entry_take(const char *dir, const char *name, const char *dest,
                          uint64_t expect_sysid, wal_entry_result *result, char *why, size_t whylen,
                          pgd_error *err);
/* The system identifier in global/pg_control under `datadir` (0 when it cannot be read). */
uint64_t wal_spool_control_sysid(const char *datadir);
/* Does `dir` hold `name`, published (*ready) or still downloading (*partial)? */
bool wal_spool_entry_state(const char *dir, const char *name, bool *ready, bool *partial,
                           pgd_error *err);
/*
 * Remove every published segment the request does not want (all of them
 * when req is NULL), and, with parts, every download in progress too.
 */
bool wal_spool_entry_prune(const char *dir, const wal_fetch_request *req, bool parts,
                           pgd_error *err);

#endif
