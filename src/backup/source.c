/*
 * source.c - checks of the cluster a backup reads (see source.h).
 */
#define _GNU_SOURCE
#include "backup/source.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "pg/wal_history.h"

bool source_resolve_pgdata(const char *pgdata, char *real, size_t reallen, pgd_error *err)
{
    char resolved[PATH_MAX];
    struct stat st;

    if (pgdata == NULL || pgdata[0] == '\0')
        return err_set(err, "no data directory given: use --pgdata or set PGDATA");
    if (stat(pgdata, &st) != 0)
        return err_errno(err, errno, "data directory \"%s\" is not accessible", pgdata);
    if (!S_ISDIR(st.st_mode))
        return err_set(err, "data directory \"%s\" is not a directory", pgdata);
    if (realpath(pgdata, resolved) == NULL)
        return err_errno(err, errno, "could not resolve data directory \"%s\"", pgdata);
    if ((size_t)snprintf(real, reallen, "%s", resolved) >= reallen)
        return err_set(err, "path too long: \"%s\"", resolved);
    return true;
}

bool source_check(const pg_session *pg, const char *pgdata, const char *pgdata_real,
                  bool archive_check, pgd_error *err)
{
    char server_real[PATH_MAX];

    if (realpath(pg->data_directory, server_real) == NULL)
        snprintf(server_real, sizeof(server_real), "%s", pg->data_directory);
    if (strcmp(server_real, pgdata_real) != 0)
        return err_set(err,
                       "data directory \"%s\" is not the one of the server (its "
                       "data_directory is \"%s\")",
                       pgdata, pg->data_directory);
    /*
     * A standby archives nothing unless archive_mode = always: its primary
     * archives the WAL, and the backup waits for it in the repository under
     * --archive-timeout whatever the standby's own archive_mode says.
     */
    if (archive_check && !pg->in_recovery && strcmp(pg->archive_mode, "off") == 0)
        return err_set(err, "archive_mode is off on the server: the WAL this backup needs would "
                            "not be archived (set archive_command = 'pgdirect wal-push %%p', or "
                            "--archive-check=off)");
    return true;
}

/*
 * A backup of a standby is consistent only if the standby stayed one, on
 * one timeline, from start to stop: promoted, it would mix pages of two
 * histories (PostgreSQL's own pg_backup_stop refuses too, "the standby was
 * promoted during online backup"); a timeline switch upstream would put
 * the stop point on a timeline the backup's WAL names do not follow.
 */
bool source_standby_still(pg_session *pg, pgd_error *err)
{
    bool in_recovery;

    if (!pg->in_recovery)
        return true;
    if (!pg_session_in_recovery(pg, &in_recovery, err))
        return false;
    if (!in_recovery)
        return err_set(err, "the standby was promoted during the backup (it is no longer in "
                            "recovery): its files mix two timelines, take a new backup");
    return true;
}

bool source_standby_timeline(pg_session *pg, const char *backup_label, pgd_error *err)
{
    uint32_t start_tli, stop_tli;

    if (!pg->in_recovery)
        return true;
    if (!wal_history_label_timeline(backup_label, &start_tli))
        return err_set(err, "backup_label returned by the server has no START TIMELINE line");
    if (!pg_session_min_recovery_timeline(pg, &stop_tli, err))
        return false;
    if (stop_tli == 0)
        return err_set(err, "the standby has no minimum recovery point timeline in pg_control: "
                            "its stop point cannot be placed on a timeline");
    if (stop_tli != start_tli)
        return err_set(err,
                       "the standby's timeline changed during the backup (from %u at the start "
                       "to %u at the stop): take a new backup",
                       start_tli, stop_tli);
    return true;
}
