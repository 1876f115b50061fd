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
