/*
 * wal_pusher.h - the background pusher of wal-push --archive-async: pushes
 * every WAL file PostgreSQL has marked ready (pg_wal/archive_status/
 * <wal>.ready), several at a time and ahead of being asked, and records
 * each outcome in the spool (wal/wal_spool.h), where the archive_command
 * that PostgreSQL runs for that file finds it.
 *
 * A push is the same as a direct wal-push (wal/wal_archive.h: checked,
 * no-replace, never two files under one name); the ".ok" record is written
 * and fsynced only after the repository confirmed it. A failed push leaves
 * an ".error" record, and the file is not tried again until the
 * archive_command has read that record (and removed it): PostgreSQL's own
 * retries pace the pusher's.
 */
#ifndef PGD_WAL_PUSHER_H
#define PGD_WAL_PUSHER_H

#include <stdbool.h>

#include "compress/compress.h"
#include "wal/wal_spool.h"
#include "storage/storage.h"
#include "util/error.h"

typedef struct wal_pusher_config {
    const char *pg_wal;    /* absolute path of the cluster's pg_wal */
    const char *spool_dir; /* push-<key> (wal/wal_spool.h) */
    unsigned concurrency;  /* pushes in flight */
    compress_kind kind;
    int level;
    int idle_exit_s; /* stop after this long with nothing to push */
    wal_daemon_hooks hooks;
} wal_pusher_config;

/* Why a pusher stopped without an error. */
typedef enum {
    WAL_PUSHER_STOP_IDLE,     /* nothing to push for idle_exit_s */
    WAL_PUSHER_STOP_GONE,     /* pg_wal/archive_status is gone */
    WAL_PUSHER_STOP_SETTINGS, /* archive_command runs with other settings now */
    WAL_PUSHER_STOP_NO_REPO,  /* the repository could not be opened: each ready file failed */
} wal_pusher_stop;

/*
 * Push ready files until nothing has been left to push for idle_exit_s,
 * or the data directory's archive_status is gone. False when the spool
 * cannot be written (then nothing it pushes could be acknowledged); *why
 * (may be NULL) says why it stopped when it returns true.
 */
bool wal_pusher_run(const wal_pusher_config *cfg, wal_pusher_stop *why, pgd_error *err);

/*
 * What waits for the repository of `spool_dir`: the files of pg_wal ready
 * and not yet recorded as pushed, and the copies in its queue; the oldest
 * in push order, with its WAL file's modification time.
 */
bool wal_pusher_backlog(const char *pg_wal, const char *spool_dir, wal_queue_stat *st,
                        pgd_error *err);

#endif
