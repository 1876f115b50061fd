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
 *
 * --archive-async and --prefetch (wal/wal_async.h) only change how fast:
 * what PostgreSQL is told is decided by the same checks, or by these
 * direct commands, which they fall back to.
 */
#include <dirent.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cmd/cmd.h"
#include "cmd/common.h"
#include "cmd/wal_async.h"
#include "repo/wal_pushed.h"
#include "wal/wal_archive.h"
#include "wal/wal_spool.h"
#include "util/log.h"
#include "util/xmalloc.h"

static const command_help push_help = {
    CMD_WAL_PUSH, "usage: pgdirect wal-push [OPTIONS] PATH",
    "Archive one WAL file (archive_command = 'pgdirect wal-push %p'). The file is checked\n"
    "against its name first (a segment's size, page headers and record checksums). Pushing\n"
    "the same file again succeeds; a different file under an archived name is an error,\n"
    "whatever the compression of either.\n"
    "With --archive-async, a background pusher (one per data directory and repository,\n"
    "started by this command when none runs) archives every file PostgreSQL marks ready in\n"
    "pg_wal/archive_status, --archive-push-concurrency at a time, and records each one in\n"
    "the spool once the repository has confirmed it. This command exits 0 only when that\n"
    "record (fsynced) is of exactly this file; it waits up to --archive-timeout, reports\n"
    "the pusher's error for the file, and archives the file itself when the spool cannot\n"
    "be written. More WAL waiting than --archive-push-queue-max is warned about on every\n"
    "call; nothing is dropped.\n"
    "With several --repo and --archive-async, a pusher per repository; this command exits 0\n"
    "once one repository holds the file and a copy of it waits, fsynced, in the queue of\n"
    "each of the others. Each queue holds at most --archive-push-queue-max: at the bound\n"
    "nothing more is acknowledged (one line names the repository)."};

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
    "again. Corruption stays fatal there too.\n"
    "With --prefetch N (also PGDIRECT_PREFETCH in the server's environment, or\n"
    "\"prefetch = N\" in the config file, with no change to restore_command), a background\n"
    "fetcher downloads the N segments after each one served into the spool, checked as\n"
    "above; they are served from there after their size and CRC are checked again. Whether\n"
    "a file is archived (exit 1) is only ever decided by a look at the repository."};

/*
 * WAL files PostgreSQL marked ready and not yet archived: the .ready files of archive_status
 * beside the file pushed (%p is pg_wal/NAME); -1 when that directory cannot be read.
 */
static int64_t wal_backlog_count(const char *path)
{
    char dir[PATH_MAX], copy[PATH_MAX];
    struct dirent *de;
    int64_t n = 0;
    DIR *d;

    snprintf(copy, sizeof(copy), "%s", path);
    if ((size_t)snprintf(dir, sizeof(dir), "%s/archive_status", dirname(copy)) >= sizeof(dir) ||
        (d = opendir(dir)) == NULL)
        return -1;
    while ((de = readdir(d)) != NULL) {
        size_t len = strlen(de->d_name);
        n += len > 6 && strcmp(de->d_name + len - 6, ".ready") == 0;
    }
    closedir(d);
    return n;
}

/*
 * After a segment newly stored, with --metrics-file: when, which, and the backlog, in the
 * repository for `pgdirect metrics` (repo/wal_pushed.h); a failure costs only the record.
 */
static void wal_push_note_metrics(storage *repo, const char *path, const char *name,
                                  metrics_extra *extra)
{
    wal_pushed rec = {
        .present = true, .time = extra->wal_archived_at, .backlog = extra->archive_backlog};
    pgd_error err = {0};
    struct stat st;

    if (wal_name_kind(name) != WAL_FILE_SEGMENT || stat(path, &st) != 0)
        return;
    snprintf(rec.segment, sizeof(rec.segment), "%s", name);
    rec.segment_size = (uint64_t)st.st_size;
    extra->wal_segment = name;
    extra->wal_segment_size = rec.segment_size;
    if (!wal_pushed_write(repo, &rec, &err))
        log_warn("%s", err.msg);
}

/*
 * Push the file at `path` now to repository i: durable there, or err names it
 * (*result: what the push found).
 */
static bool wal_push_one(const pgd_options *opts, size_t i, const char *path, compress_kind kind,
                         int level, storage **repo, wal_push_result *result, pgd_error *err)
{
    if ((*repo = command_open_repo_at(opts, i, err)) == NULL)
        return false;
    if (wal_archive_push(*repo, path, kind, level, result, err))
        return true;
    if (command_repo_count(opts) > 1 && strstr(err->msg, (*repo)->uri) == NULL)
        err_prefix(err, "repository \"%s\"", (*repo)->uri);
    return false;
}

/*
 * Push the file at `path` now (archive_command without --archive-async): to
 * every repository in turn, acknowledged only once it is durable in all of
 * them; the first that fails is the error (PostgreSQL retries the file, and
 * the repositories that have it find it identical).
 */
static int wal_push_direct(const pgd_options *opts, const char *path)
{
    pgd_error err = {0};
    storage *repo = NULL;
    compress_kind kind;
    wal_push_result result;
    int level, rc = EXIT_OK;

    if (!command_compression(opts, &kind, &level, &err))
        return command_fail(CMD_WAL_PUSH, &err);
    for (size_t i = 0; rc == EXIT_OK && i < command_repo_count(opts); i++) {
        if (!wal_push_one(opts, i, path, kind, level, &repo, &result, &err)) {
            rc = command_fail(CMD_WAL_PUSH, &err);
        } else if (result == WAL_PUSH_IDENTICAL) {
            log_info("WAL file \"%s\" was already archived with the same content%s%s%s", path,
                     command_repo_count(opts) > 1 ? " in repository \"" : "",
                     command_repo_count(opts) > 1 ? repo->uri : "",
                     command_repo_count(opts) > 1 ? "\"" : "");
        }
        /* housekeeping after a push that worked, now and then: a failing repository gets one
         * error line */
        if (rc == EXIT_OK) {
            char copy[PATH_MAX];
            pgd_error sweep = {0};
            const char *name;

            snprintf(copy, sizeof(copy), "%s", path);
            name = basename(copy);
            if (wal_archive_sweep_due(name) && !wal_archive_remove_stale_temp(repo, name, &sweep))
                log_warn("%s", sweep.msg);
            /* this file's own .ready is renamed to .done only after we return: not counted */
            metrics_extra extra = {.wal_archived_at = time(NULL),
                                   .archive_backlog = wal_backlog_count(path)};
            if (extra.archive_backlog > 0)
                extra.archive_backlog--;
            if (opt_str(opts, OPT_METRICS_FILE) != NULL && result == WAL_PUSH_STORED)
                wal_push_note_metrics(repo, path, name, &extra);
            if (i == 0)
                command_write_metrics(opts, repo, &extra);
        }
        storage_free(repo);
        repo = NULL;
    }
    return rc;
}

int cmd_wal_push(int argc, char **argv)
{
    pgd_options opts;
    pgd_error err = {0};
    bool async;
    int rc;

    if (!command_start(&opts, &push_help, 1, argc, argv, &rc))
        return rc;
    if (opts.nargs != 1) {
        err_set(&err, "wal-push takes one WAL file path (see --help)");
        err_mark(&err, PGD_ERR_USAGE);
        rc = command_fail(CMD_WAL_PUSH, &err);
        options_free(&opts);
        return rc;
    }
    if (!opt_bool(&opts, OPT_ARCHIVE_ASYNC, &async, &err))
        rc = command_fail(CMD_WAL_PUSH, &err);
    else if (async)
        rc = cmd_wal_async_push(&opts, opts.args[0], wal_push_direct);
    else
        rc = wal_push_direct(&opts, opts.args[0]);
    options_free(&opts);
    return rc;
}

/*
 * One line for a failed fetch, naming the file; the exit status PostgreSQL
 * must see (command_exit_status: 1 only on a standby, for a repository that
 * did not answer, with a warning).
 */
static int wal_fetch_fail(const char *name, pgd_error *err)
{
    int rc;

    if (!err->set)
        err_set(err, "unknown error");
    if (strstr(err->msg, name) == NULL)
        err_prefix(err, "could not fetch WAL file \"%s\"", name);
    rc = command_exit_status(CMD_WAL_FETCH, err);
    if (rc != EXIT_WAL_NOT_ARCHIVED || !err_is(err, PGD_ERR_TRANSIENT))
        return command_fail(CMD_WAL_FETCH, err);
    log_warn("%s (standby: PostgreSQL will ask again)", err->msg);
    return rc;
}

/* Fetch `name` from the repository now; the exit status PostgreSQL must see. */
static int wal_fetch_direct(const pgd_options *opts, const char *name, const char *dest)
{
    pgd_error err = {0};
    storage *repo = NULL;
    bool found = false;
    int rc;

    if ((repo = command_open_repo(opts, &err)) == NULL ||
        !wal_archive_fetch(repo, name, dest, &found, &err)) {
        rc = wal_fetch_fail(name, &err);
    } else if (!found) {
        /* quietly: PostgreSQL asks for files that do not exist all the time */
        err_set(&err, "WAL file \"%s\" is not in repository \"%s\"", name, repo->uri);
        err_mark(&err, PGD_ERR_NOT_FOUND);
        rc = command_exit_status(CMD_WAL_FETCH, &err);
    } else {
        rc = EXIT_OK;
    }
    storage_free(repo);
    return rc;
}

int cmd_wal_fetch(int argc, char **argv)
{
    pgd_options opts;
    pgd_error err = {0};
    long prefetch;
    int rc;

    /* no memory is no "not archived" either, here or in the --prefetch daemon forked from here */
    xmalloc_set_exit_status(EXIT_WAL_FATAL);
    if (!command_start(&opts, &fetch_help, 2, argc, argv, &rc))
        return rc;
    if (opts.nargs != 2) {
        err_set(&err, "wal-fetch takes a WAL file name and a destination path (see --help)");
        err_mark(&err, PGD_ERR_USAGE);
        rc = command_fail(CMD_WAL_FETCH, &err);
        options_free(&opts);
        return rc;
    }
    if (!opt_int(&opts, OPT_PREFETCH, 0, WAL_PREFETCH_MAX, &prefetch, &err)) {
        err_mark(&err, PGD_ERR_USAGE);
        rc = command_fail(CMD_WAL_FETCH, &err);
    } else {
        rc = cmd_wal_async_fetch(&opts, opts.args[0], opts.args[1], (unsigned)prefetch,
                                 wal_fetch_direct);
    }
    options_free(&opts);
    return rc;
}
