/*
 * source.h - the cluster a backup reads: the data directory given must be
 * the one the server runs on (else the files read and the WAL range the
 * server reports belong to different clusters), and the server must
 * archive the WAL the backup needs to be restorable.
 */
#ifndef PGD_SOURCE_H
#define PGD_SOURCE_H

#include <stdbool.h>
#include <stddef.h>

#include "pg/session.h"
#include "util/error.h"

/* --pgdata (or $PGDATA) exists, is a directory; *real is its resolved path. */
bool source_resolve_pgdata(const char *pgdata, char *real, size_t reallen, pgd_error *err);

/* The server's data_directory is pgdata_real; with archive_check, its WAL reaches an archive. */
bool source_check(const pg_session *pg, const char *pgdata, const char *pgdata_real,
                  bool archive_check, pgd_error *err);

/*
 * A standby's backup is consistent only if the server stayed a standby
 * from start to stop (not promoted) and on one timeline: false, saying
 * which, otherwise. Both pass at once on a primary.
 */
bool source_standby_still(pg_session *pg, pgd_error *err);
/* backup_label is what pg_backup_stop returned: its START TIMELINE against the stop's. */
bool source_standby_timeline(pg_session *pg, const char *backup_label, pgd_error *err);

#endif
