/*
 * wal.c - `pgdirect wal-push %p` (archive_command) and
 * `pgdirect wal-fetch %f %p` (restore_command).
 *
 * wal-fetch exits 1 without a message when the file is not archived: that
 * is how PostgreSQL learns it reached the end of the archive, and it asks
 * for files that do not exist (the next timeline's history) all the time.
 */
#include <stdio.h>

#include "cmd/cmd.h"
#include "cmd/common.h"
#include "repo/wal_archive.h"
#include "util/log.h"

static const command_help push_help = {
    CMD_WAL_PUSH, "usage: pgdirect wal-push [OPTIONS] PATH",
    "Archive one WAL file (archive_command = 'pgdirect wal-push %p'). Pushing the same file\n"
    "again succeeds; a different file under an archived name is an error."};

static const command_help fetch_help = {
    CMD_WAL_FETCH, "usage: pgdirect wal-fetch [OPTIONS] NAME DEST",
    "Restore one archived WAL file (restore_command = 'pgdirect wal-fetch %f %p'). Exits 1\n"
    "quietly when the file is not in the archive."};

int cmd_wal_push(int argc, char **argv)
{
    pgd_options opts;
    pgd_error err = {0};
    storage *repo = NULL;
    compress_kind kind;
    wal_push_result result;
    int level, rc;

    if (!command_start(&opts, &push_help, 1, argc, argv, &rc))
        return rc;
    if (opts.nargs != 1) {
        log_error("wal-push takes one WAL file path (see --help)");
        options_free(&opts);
        return EXIT_USAGE;
    }
    if (!command_compression(&opts, &kind, &level, &err) ||
        (repo = command_open_repo(&opts, &err)) == NULL ||
        !wal_archive_push(repo, opts.args[0], kind, level, &result, &err)) {
        rc = command_fail(&err);
    } else {
        if (result == WAL_PUSH_IDENTICAL)
            log_info("WAL file \"%s\" was already archived with the same content", opts.args[0]);
        rc = EXIT_OK;
    }
    storage_free(repo);
    options_free(&opts);
    return rc;
}

int cmd_wal_fetch(int argc, char **argv)
{
    pgd_options opts;
    pgd_error err = {0};
    storage *repo = NULL;
    bool found = false;
    int rc;

    if (!command_start(&opts, &fetch_help, 2, argc, argv, &rc))
        return rc;
    if (opts.nargs != 2) {
        log_error("wal-fetch takes a WAL file name and a destination path (see --help)");
        options_free(&opts);
        return EXIT_USAGE;
    }
    if ((repo = command_open_repo(&opts, &err)) == NULL ||
        !wal_archive_fetch(repo, opts.args[0], opts.args[1], &found, &err))
        rc = command_fail(&err);
    else
        rc = found ? EXIT_OK : EXIT_ERROR;
    storage_free(repo);
    options_free(&opts);
    return rc;
}
