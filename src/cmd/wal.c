/*
 * wal.c - `pgdirect wal-push %p` (archive_command) and
 * `pgdirect wal-fetch %f %p` (restore_command).
 *
 * wal-fetch's exit status is read by PostgreSQL, and a wrong one loses
 * data: 1 says "not archived", and recovery ends there and the server
 * promotes. So 1 is said only, quietly, when the repository is there and
 * the file is not in it (PostgreSQL asks for files that do not exist all
 * the time: the next timeline's history, the segment after the last). Any
 * other outcome, a usage error included, prints one line and exits with
 * EXIT_WAL_FATAL, which stops recovery instead (cmd.h).
 */
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cmd/cmd.h"
#include "cmd/common.h"
#include "repo/wal_archive.h"
#include "util/log.h"

/* In the data directory, which is restore_command's working directory (PostgreSQL >= 12). */
#define STANDBY_SIGNAL_FILE "standby.signal"

static const command_help push_help = {
    CMD_WAL_PUSH, "usage: pgdirect wal-push [OPTIONS] PATH",
    "Archive one WAL file (archive_command = 'pgdirect wal-push %p'). The file is checked\n"
    "against its name first (a segment's size, page headers and record checksums). Pushing\n"
    "the same file again succeeds; a different file under an archived name is an error,\n"
    "whatever the compression of either."};

static const command_help fetch_help = {
    CMD_WAL_FETCH, "usage: pgdirect wal-fetch [OPTIONS] NAME DEST",
    "Restore one archived WAL file (restore_command = 'pgdirect wal-fetch %f %p'), checked\n"
    "against its name before PostgreSQL sees it. Exit status, as PostgreSQL reads it:\n"
    "  0    restored\n"
    "  1    not in the repository: recovery ends here (nothing is printed)\n"
    "  254  anything else: a corrupt, truncated or misnamed file, permission, a repository\n"
    "       that is missing, empty or unreachable after retries, a usage or configuration\n"
    "       error. PostgreSQL stops recovery (FATAL) instead of promoting without the rest\n"
    "       of the archive.\n"
    "In standby mode (standby.signal in the data directory) a repository that is unreachable\n"
    "after retries exits 1 with a warning instead: a standby does not promote, it tries\n"
    "again. Corruption stays fatal there too."};

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
    /* housekeeping after a push that worked: a failing repository gets one error line */
    if (rc == EXIT_OK) {
        char path[PATH_MAX];
        pgd_error sweep = {0};

        snprintf(path, sizeof(path), "%s", opts.args[0]);
        if (!wal_archive_remove_stale_temp(repo, basename(path), &sweep))
            log_warn("%s", sweep.msg);
    }
    storage_free(repo);
    options_free(&opts);
    return rc;
}

/* One line for a failed fetch, naming the file; the exit status PostgreSQL must see. */
static int wal_fetch_fail(const char *name, pgd_error *err)
{
    if (!err->set)
        err_set(err, "unknown error");
    if (strstr(err->msg, name) == NULL)
        err_prefix(err, "could not fetch WAL file \"%s\"", name);
    if (err->transient && access(STANDBY_SIGNAL_FILE, F_OK) == 0) {
        log_warn("%s (standby: PostgreSQL will ask again)", err->msg);
        return EXIT_WAL_NOT_ARCHIVED;
    }
    command_fail(err);
    return EXIT_WAL_FATAL;
}

int cmd_wal_fetch(int argc, char **argv)
{
    pgd_options opts;
    pgd_error err = {0};
    storage *repo = NULL;
    bool found = false;
    int rc;

    if (!command_start(&opts, &fetch_help, 2, argc, argv, &rc))
        return rc == EXIT_OK ? EXIT_OK : EXIT_WAL_FATAL;
    if (opts.nargs != 2) {
        log_error("wal-fetch takes a WAL file name and a destination path (see --help)");
        options_free(&opts);
        return EXIT_WAL_FATAL;
    }
    if ((repo = command_open_repo(&opts, &err)) == NULL ||
        !wal_archive_fetch(repo, opts.args[0], opts.args[1], &found, &err))
        rc = wal_fetch_fail(opts.args[0], &err);
    else
        rc = found ? EXIT_OK : EXIT_WAL_NOT_ARCHIVED;
    storage_free(repo);
    options_free(&opts);
    return rc;
}
