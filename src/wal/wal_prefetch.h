/*
 * wal_prefetch.h - the background fetcher of wal-fetch --prefetch N: keeps
 * the N segments after the one PostgreSQL was last served downloaded in the
 * spool (wal/wal_spool.h), several at a time, so that the next
 * restore_command finds its segment on local disk.
 *
 * Each download is checked exactly as a direct fetch checks it (repo/
 * wal_archive.h, pg/wal_segment.h) and made visible under a name that
 * carries its size and CRC-32C, which wal-fetch verifies again before it
 * serves the file. What the fetcher cannot find or cannot fetch is only
 * left out of the spool: whether a segment is archived is decided by the
 * direct fetch of the restore_command that asks for it, never here.
 */
#ifndef PGD_WAL_PREFETCH_H
#define PGD_WAL_PREFETCH_H

#include <stdbool.h>

#include "wal/wal_spool.h"
#include "storage/storage.h"
#include "util/error.h"

typedef struct wal_prefetch_config {
    const char *spool_dir; /* fetch-<key> (wal/wal_spool.h) */
    unsigned concurrency;  /* downloads in flight */
    int idle_exit_s;       /* stop when no new request came for this long */
    wal_daemon_hooks hooks;
} wal_prefetch_config;

/* Why a prefetcher stopped without an error. */
typedef enum {
    WAL_PREFETCH_STOP_IDLE,       /* no new request for idle_exit_s */
    WAL_PREFETCH_STOP_NO_REQUEST, /* the spool holds no request to follow */
    WAL_PREFETCH_STOP_SETTINGS,   /* restore_command runs with other settings now */
} wal_prefetch_stop;

/*
 * Keep the requested segments downloaded until no request came for
 * idle_exit_s; *why (may be NULL) says why it stopped when it returns true.
 */
bool wal_prefetch_run(const wal_prefetch_config *cfg, wal_prefetch_stop *why, pgd_error *err);

#endif
