/*
 * archive_probe.h - does the server's archive_command store WAL in this repository?
 *
 * A setting that looks right proves nothing when archive_command points at another directory or
 * bucket, or fails. check proves it end to end, and backup asks the same before it reads the
 * cluster (a backup whose WAL never reaches the repository would read everything, then wait out
 * --archive-timeout and fail). The probe:
 *   - refuses at once what cannot work: archive_mode off, an empty archive_command, a pgdirect
 *     wal-push without %p (PostgreSQL would pass it no file);
 *   - takes the cheap proof when there is one (backup only): the WAL file the server archived
 *     last (pg_stat_archiver) is in the repository;
 *   - else switches WAL (after writing a record, so that a segment is completed) and waits, up to
 *     the timeout, for that segment to arrive, failing at once when the server reports it archived
 *     and the repository does not have it (archived elsewhere), or reports that archiving it
 * failed.
 */
#ifndef PGD_ARCHIVE_PROBE_H
#define PGD_ARCHIVE_PROBE_H

#include <stdbool.h>
#include <stddef.h>

#include "pg/session.h"
#include "storage/storage.h"
#include "util/error.h"

typedef enum archive_probe_status {
    ARCHIVE_PROBE_OK,
    ARCHIVE_PROBE_FAILED,  /* archive_command does not store WAL here (detail says why) */
    ARCHIVE_PROBE_SKIPPED, /* cannot be told from this server: a standby (detail says so) */
} archive_probe_status;

typedef struct archive_probe_request {
    pg_session *pg;
    storage *repo;
    int timeout_s;      /* how long to wait for the switched segment */
    bool accept_latest; /* the last archived file found in the repository is proof enough */
} archive_probe_request;

/* The verdict; detail (one line) says what was proved, or why not, naming setting and repository.
 */
archive_probe_status archive_probe_run(const archive_probe_request *req, char *detail, size_t len);

#endif
