/*
 * check.c - `pgdirect check`: prove the set-up end to end before relying
 * on it. One line per check, ok or FAILED with the reason; a non-zero exit
 * when any check failed.
 *
 * The server's settings are read (wal_level, full_page_writes,
 * archive_mode); the repository is listed, and a probe object written,
 * read back and removed; a local repository's free space is compared with
 * the cluster's size; and, last because it may wait, a WAL switch proves
 * that archive_command stores WAL in *this* repository: the segment the
 * switch completes must arrive in it. A setting that looks right proves
 * nothing when archive_command points at another directory or bucket.
 *
 * About 540 lines on purpose: the checks above, one function each and none
 * over 50 lines, share one state (check_run: the session, the results) and
 * one way of reporting (check_add); a file per check would export both for
 * no reader's benefit. The work each check calls is in the modules.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <jansson.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

#include "backup/archive_probe.h"
#include "cmd/cmd.h"
#include "cmd/common.h"
#include "cmd/wal_async.h"
#include "pg/pq_api.h"
#include "pg/session.h"
#include "repo/backup_info.h"
#include "repo/layout.h"
#include "wal/wal_archive.h"
#include "restore/timeline.h"
#include "storage/crypt/storage.h"
#include "storage/s3/s3.h"
#include "util/log.h"
#include "util/progress.h"
#include "util/text.h"
#include "util/units.h"
#include "util/xmalloc.h"

#define CHECK_SETTING_MAX   1024
#define CHECK_PROBE_DIR     "check"
#define CHECK_HOST_MAX      256
#define ARCHIVE_TIMEOUT_MAX 86400
/* Free space below this many times the cluster size is a warning; see check_free_space. */
#define CHECK_FREE_FACTOR 1

static const command_help check_help = {
    CMD_CHECK, "usage: pgdirect check [--json] [OPTIONS]",
    "Prove the set-up end to end: the server's wal_level, full_page_writes and archive_mode;\n"
    "that the repository can be listed, written, read and cleaned; that a local repository\n"
    "has room for a backup; and that archive_command stores WAL in this repository (a WAL\n"
    "switch, then a wait for that segment, up to --archive-timeout); for an S3 repository,\n"
    "whether its bucket has Object Lock and its default retention. One line per check;\n"
    "exit status 1 when any check failed. Needs superuser (or EXECUTE on pg_switch_wal)."};

typedef enum { CHECK_OK, CHECK_WARNING, CHECK_FAILED, CHECK_SKIPPED } check_status;

typedef struct check_item {
    const char *name;
    check_status status;
    char detail[PGD_ERROR_MAX];
    char *repository; /* several repositories: the one it is about (NULL: one, or the server) */
} check_item;

typedef struct check_run {
    check_item *items; /* grown as results come: one set per repository */
    size_t n, cap;
    bool json;
    pg_session pg;
    bool connected;
    storage *repo;
    const char *where; /* several repositories: the one the checks are about (NULL: one) */
    int archive_timeout;
} check_run;

static const char *check_status_word(check_status s, bool json)
{
    static const char *const text[] = {"ok", "warning", "FAILED", "skipped"};
    static const char *const lower[] = {"ok", "warning", "failed", "skipped"};

    return json ? lower[s] : text[s];
}

/* Record a result; in text mode print it at once (the archive check may take a while). */
static void check_add(check_run *r, const char *name, check_status status, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static void check_add(check_run *r, const char *name, check_status status, const char *fmt, ...)
{
    check_item *it;
    va_list ap;

    if (r->n == r->cap) {
        r->cap = r->cap ? 2 * r->cap : 16;
        r->items = xrealloc(r->items, r->cap * sizeof(*r->items));
    }
    it = &r->items[r->n++];
    it->name = name;
    it->repository = r->where != NULL ? xstrdup(r->where) : NULL;
    it->status = status;
    it->detail[0] = '\0';
    /* with several repositories, each repository's lines name it */
    if (r->where != NULL)
        snprintf(it->detail, sizeof(it->detail), "repository \"%s\": ", r->where);
    va_start(ap, fmt);
    vsnprintf(it->detail + strlen(it->detail), sizeof(it->detail) - strlen(it->detail), fmt, ap);
    va_end(ap);
    if (!r->json) {
        printf("%-8s %-17s %s\n", check_status_word(status, false), name, it->detail);
        fflush(stdout);
    }
}

/* One value from the server, or false with the server's message in why. */
static bool check_query(check_run *r, const char *sql, char *out, size_t outlen, char *why,
                        size_t whylen)
{
    PGresult *res = PQexec(r->pg.conn, sql);
    bool ok = PQresultStatus(res) == PGRES_TUPLES_OK && PQntuples(res) == 1 && PQnfields(res) == 1;

    if (ok)
        snprintf(out, outlen, "%s", PQgetisnull(res, 0, 0) ? "" : PQgetvalue(res, 0, 0));
    else
        pg_error_line(r->pg.conn, "unexpected result", why, whylen);
    PQclear(res);
    return ok;
}

static void check_server(check_run *r, const char *conninfo)
{
    pgd_error err = {0};

    if (!pg_session_open(&r->pg, conninfo, &err)) {
        check_add(r, "server", CHECK_FAILED, "%s", err.msg);
        return;
    }
    r->connected = true;
    check_add(r, "server", CHECK_OK, "PostgreSQL %s, data directory \"%s\"%s", r->pg.version,
              r->pg.data_directory, r->pg.in_recovery ? ", a standby" : "");
}

static void check_settings(check_run *r)
{
    char value[CHECK_SETTING_MAX], why[PGD_ERROR_MAX];

    if (!r->connected) {
        check_add(r, "wal_level", CHECK_SKIPPED, "no connection to the server");
        check_add(r, "full_page_writes", CHECK_SKIPPED, "no connection to the server");
        check_add(r, "archive_mode", CHECK_SKIPPED, "no connection to the server");
        return;
    }
    if (!check_query(r, "SHOW wal_level", value, sizeof(value), why, sizeof(why)))
        check_add(r, "wal_level", CHECK_FAILED, "could not read it: %s", why);
    else if (strcmp(value, "replica") == 0 || strcmp(value, "logical") == 0)
        check_add(r, "wal_level", CHECK_OK, "%s", value);
    else
        check_add(r, "wal_level", CHECK_FAILED,
                  "%s: a backup needs replica or logical (set wal_level = replica and restart)",
                  value);
    if (!check_query(r, "SHOW full_page_writes", value, sizeof(value), why, sizeof(why)))
        check_add(r, "full_page_writes", CHECK_FAILED, "could not read it: %s", why);
    else if (strcmp(value, "on") == 0)
        check_add(r, "full_page_writes", CHECK_OK, "on");
    else
        check_add(r, "full_page_writes", CHECK_FAILED,
                  "%s: pages torn while the backup read them could not be repaired by WAL "
                  "replay (set full_page_writes = on)",
                  value);
    if (strcmp(r->pg.archive_mode, "off") == 0)
        check_add(r, "archive_mode", CHECK_FAILED,
                  "off: WAL is not archived, so no backup can be restored (set archive_mode = "
                  "on and restart)");
    else if (r->pg.in_recovery && strcmp(r->pg.archive_mode, "always") != 0)
        check_add(r, "archive_mode", CHECK_FAILED,
                  "%s on a standby, which archives nothing unless archive_mode = always",
                  r->pg.archive_mode);
    else
        check_add(r, "archive_mode", CHECK_OK, "%s", r->pg.archive_mode);
}

/* Write a probe, read it back, remove it, and see it gone. */
static bool check_probe(storage *repo, pgd_error *err)
{
    char host[CHECK_HOST_MAX] = "", path[LAYOUT_PATH_MAX], text[LAYOUT_PATH_MAX + 64];
    char *back = NULL;
    size_t len;
    bool missing = false, exists = true;

    if (gethostname(host, sizeof(host) - 1) != 0)
        snprintf(host, sizeof(host), "unknown");
    snprintf(path, sizeof(path), CHECK_PROBE_DIR "/probe.%s.%ld", host, (long)getpid());
    snprintf(text, sizeof(text), "pgdirect check probe %s %ld %ld", host, (long)getpid(),
             (long)time(NULL));
    if (!storage_put(repo, path, text, strlen(text), 0, err)) {
        err_prefix(err, "could not write probe object \"%s\"", path);
        return false;
    }
    if (!storage_get(repo, path, &back, &len, &missing, err)) {
        if (missing)
            err_set(err, "probe object \"%s\" was written but cannot be found", path);
        err_prefix(err, "could not read back probe object \"%s\"", path);
        return false;
    }
    if (len != strlen(text) || memcmp(back, text, len) != 0) {
        free(back);
        return err_set(err, "probe object \"%s\" read back differs from what was written", path);
    }
    free(back);
    if (!storage_remove(repo, path, err)) {
        err_prefix(err, "could not remove probe object \"%s\"", path);
        return false;
    }
    if (!storage_exists(repo, path, &exists, err))
        return false;
    if (exists)
        return err_set(err, "probe object \"%s\" is still there after it was removed", path);
    return true;
}

/*
 * No timeline in the repository that a default restore would follow although the server was
 * never on it (restore/timeline.h, timeline_find_stray): what a promoted test restore leaves.
 */
static void check_timelines(check_run *r, const backup_info *backups, size_t n)
{
    const backup_info *newest = NULL;
    char warning[PGD_ERROR_MAX];
    pgd_error err = {0};
    uint32_t tli;

    if (!r->connected) {
        check_add(r, "timelines", CHECK_SKIPPED, "no connection to the server");
        return;
    }
    for (size_t i = n; newest == NULL && i-- > 0;)
        if (!backups[i].damaged && !backups[i].checksum_failed)
            newest = &backups[i];
    if (!pg_session_timeline(&r->pg, &tli, &err) ||
        !timeline_find_stray(r->repo, tli, newest, warning, sizeof(warning), &err))
        check_add(r, "timelines", CHECK_FAILED, "%s", err.msg);
    else if (warning[0] != '\0')
        check_add(r, "timelines", CHECK_WARNING, "%s", warning);
    else
        check_add(r, "timelines", CHECK_OK,
                  "no timeline newer than the server's (%u) in the repository%s%s%s", tli,
                  newest ? "; a default restore of the newest backup (" : "",
                  newest ? newest->id : "", newest ? ") follows a timeline through it" : "");
}

static void check_repository(check_run *r, const pgd_options *opts)
{
    pgd_error err = {0};
    backup_info *backups = NULL;
    size_t n = 0, damaged = 0;

    r->repo = command_open_repo(opts, &err);
    if (r->repo == NULL) {
        check_add(r, "repository", CHECK_FAILED, "%s", err.msg);
        return;
    }
    if (!backup_info_scan(r->repo, &backups, &n, &err)) {
        check_add(r, "repository", CHECK_FAILED, "could not list repository \"%s\": %s",
                  r->repo->uri, err.msg);
        return;
    }
    for (size_t i = 0; i < n; i++)
        damaged += backups[i].damaged;
    if (!check_probe(r->repo, &err))
        check_add(r, "repository", CHECK_FAILED, "repository \"%s\": %s", r->repo->uri, err.msg);
    else if (damaged > 0)
        check_add(r, "repository", CHECK_WARNING,
                  "\"%s\" is writable and readable; %zu backups, %zu of them damaged (see "
                  "pgdirect list)",
                  r->repo->uri, n, damaged);
    else
        check_add(r, "repository", CHECK_OK, "\"%s\" is writable and readable; %zu backups",
                  r->repo->uri, n);
    /* backups of another cluster mean WAL of two clusters under the same names */
    if (!r->connected)
        check_add(r, "cluster", CHECK_SKIPPED, "no connection to the server");
    else if (n == damaged)
        check_add(r, "cluster", CHECK_SKIPPED, "no readable backup yet");
    for (size_t i = n; r->connected && i-- > 0;) {
        if (backups[i].damaged)
            continue;
        if (strcmp(backups[i].system_identifier, r->pg.system_identifier) != 0)
            check_add(r, "cluster", CHECK_WARNING,
                      "the newest backup, %s, is of system %s but the server is system %s: one "
                      "repository per cluster",
                      backups[i].id, backups[i].system_identifier, r->pg.system_identifier);
        else
            check_add(r, "cluster", CHECK_OK, "the newest backup, %s, is of this cluster (%s)",
                      backups[i].id, r->pg.system_identifier);
        break;
    }
    check_timelines(r, backups, n);
    free(backups);
}

/*
 * An S3 repository: does its bucket have Object Lock, with which default retention, and does
 * that fit --s3-object-lock (whose writes a bucket without Object Lock refuses)?
 */
static void check_object_lock(check_run *r, const pgd_options *opts)
{
    const char *asked = opt_str(opts, OPT_S3_OBJECT_LOCK);
    char deflt[64] = "no default retention";
    s3_lock_config lc;
    pgd_error err = {0};

    if (r->repo == NULL || !storage_uri_is_s3(r->repo->uri))
        return;
    /* the bucket's, under the encryption filter */
    if (!s3_storage_lock_config((storage *)crypt_storage_inner(r->repo), &lc, &err)) {
        check_add(r, "object lock", asked ? CHECK_FAILED : CHECK_WARNING,
                  "could not read the bucket's Object Lock configuration: %s", err.msg);
        return;
    }
    if (!lc.enabled) {
        if (asked)
            check_add(r, "object lock", CHECK_FAILED,
                      "the bucket has no Object Lock, and --s3-object-lock %s asks for it: every "
                      "write would be refused (Object Lock is enabled when a bucket is created)",
                      asked);
        else
            check_add(r, "object lock", CHECK_OK,
                      "the bucket has no Object Lock: whoever holds these credentials can delete "
                      "every backup");
        return;
    }
    if (lc.mode[0] != '\0')
        snprintf(deflt, sizeof(deflt), "default retention %s for %u days", lc.mode, lc.days);
    check_add(r, "object lock", CHECK_OK, "the bucket has Object Lock enabled, %s; %s%s%s", deflt,
              asked ? "pgdirect locks each object it writes (" : "pgdirect sets no lock of its own",
              asked ? asked : "", asked ? ", --s3-lock-days)" : " (--s3-object-lock)");
}

/* The directory of a local repository, or NULL for S3 and "null:". */
static const char *check_local_path(const char *uri)
{
    if (strncmp(uri, "file://", strlen("file://")) == 0)
        return uri + strlen("file://");
    return strstr(uri, "://") != NULL || strcmp(uri, "null:") == 0 ? NULL : uri;
}

/* statvfs of `path` or, while it does not exist yet, of its nearest existing parent. */
static bool check_statvfs(const char *path, struct statvfs *st, char *used, size_t usedlen)
{
    char p[PATH_MAX];

    snprintf(p, sizeof(p), "%s", path);
    for (;;) {
        char *slash;
        if (statvfs(p, st) == 0) {
            snprintf(used, usedlen, "%s", p);
            return true;
        }
        if (errno != ENOENT || (slash = strrchr(p, '/')) == NULL)
            return false;
        if (slash == p) {
            p[1] = '\0';
        } else {
            *slash = '\0';
        }
    }
}

/*
 * The rule: warn when the repository's file system has less free space
 * than the cluster's databases take. Compression usually shrinks a backup
 * to a fraction of that, but the repository also takes WAL and the next
 * backup is written before retention removes an old one; below 1x the
 * next full backup may not fit.
 */
static void check_free_space(check_run *r, const char *uri)
{
    const char *path = check_local_path(uri);
    char value[CHECK_SETTING_MAX], why[PGD_ERROR_MAX], where[PATH_MAX];
    char free_text[32], cluster_text[32];
    struct statvfs st;
    uint64_t free_bytes, cluster;

    if (path == NULL) {
        check_add(r, "free space", CHECK_SKIPPED, "not a local repository");
        return;
    }
    if (!check_statvfs(path, &st, where, sizeof(where))) {
        check_add(r, "free space", CHECK_FAILED, "could not stat the file system of \"%s\": %s",
                  path, strerror(errno));
        return;
    }
    if (!r->connected) {
        check_add(r, "free space", CHECK_SKIPPED, "no connection to the server");
        return;
    }
    if (!check_query(r,
                     "SELECT sum(pg_catalog.pg_database_size(oid))::text FROM "
                     "pg_catalog.pg_database WHERE datallowconn",
                     value, sizeof(value), why, sizeof(why))) {
        check_add(r, "free space", CHECK_WARNING, "could not read the cluster's size: %s", why);
        return;
    }
    free_bytes = (uint64_t)st.f_bavail * st.f_frsize;
    cluster = strtoull(value, NULL, 10);
    units_format_bytes(free_bytes, free_text, sizeof(free_text));
    units_format_bytes(cluster, cluster_text, sizeof(cluster_text));
    check_add(r, "free space", free_bytes < cluster * CHECK_FREE_FACTOR ? CHECK_WARNING : CHECK_OK,
              "%s free on \"%s\", the cluster is %s (the rule: a warning below %dx the cluster "
              "size)",
              free_text, where, cluster_text, CHECK_FREE_FACTOR);
}

/*
 * What waits for repository i on this host (wal-push --archive-async: ready files its
 * pusher has not stored, and its queue); a warning when anything does.
 */
static void check_backlog(check_run *r, const pgd_options *opts, size_t i)
{
    char datadir[CHECK_SETTING_MAX], why[PGD_ERROR_MAX], bytes[32];
    pgd_error err = {0};
    wal_queue_stat st;
    bool none;

    if (!r->connected) {
        check_add(r, "archive backlog", CHECK_SKIPPED, "needs the server (its data directory)");
        return;
    }
    if (!check_query(r, "SHOW data_directory", datadir, sizeof(datadir), why, sizeof(why))) {
        check_add(r, "archive backlog", CHECK_SKIPPED, "could not read data_directory: %s", why);
        return;
    }
    if (!cmd_wal_async_backlog(opts, i, datadir, &st, &none, &err)) {
        check_add(r, "archive backlog", CHECK_FAILED, "%s", err.msg);
        return;
    }
    pgd_options *o = command_repo_options(opts, i, &err);
    char repo[PGD_ERROR_MAX] = "";

    /* with several repositories, check_add names it already (r->where) */
    if (r->where == NULL)
        snprintf(repo, sizeof(repo), "repository \"%s\": ", o != NULL ? opt_str(o, OPT_REPO) : "?");
    units_format_bytes(st.bytes, bytes, sizeof(bytes));
    if (none)
        check_add(r, "archive backlog", CHECK_OK,
                  "%s0 WAL files behind (no --archive-async spool for it on this host)", repo);
    else if (st.files == 0)
        check_add(r, "archive backlog", CHECK_OK, "%s0 WAL files behind", repo);
    else
        check_add(r, "archive backlog", CHECK_WARNING,
                  "%s%u WAL files behind (%s), the oldest \"%s\" for %lld s", repo, st.files, bytes,
                  st.oldest, (long long)(time(NULL) - st.oldest_mtime));
    command_repo_options_free(o);
}

/* archive_command stores WAL in this repository: a WAL switch, then a wait for that segment. */
static void check_archive(check_run *r)
{
    archive_probe_request req = {.pg = &r->pg, .repo = r->repo, .timeout_s = r->archive_timeout};
    static const check_status status[] = {[ARCHIVE_PROBE_OK] = CHECK_OK,
                                          [ARCHIVE_PROBE_FAILED] = CHECK_FAILED,
                                          [ARCHIVE_PROBE_SKIPPED] = CHECK_SKIPPED};
    char detail[PGD_ERROR_MAX];
    archive_probe_status st;

    if (!r->connected || r->repo == NULL) {
        check_add(r, "archive_command", CHECK_SKIPPED, "needs the server and the repository");
        return;
    }
    st = archive_probe_run(&req, detail, sizeof(detail));
    check_add(r, "archive_command", status[st], "%s", detail);
}

static int check_report(check_run *r)
{
    size_t failed = 0;
    char names[PGD_ERROR_MAX] = "";
    pgd_error err = {0};

    for (size_t i = 0; i < r->n; i++) {
        if (r->items[i].status != CHECK_FAILED)
            continue;
        if (failed++ > 0)
            strncat(names, ", ", sizeof(names) - strlen(names) - 1);
        strncat(names, r->items[i].name, sizeof(names) - strlen(names) - 1);
    }
    if (r->json) {
        json_t *arr = json_array(), *o;
        char *text;
        for (size_t i = 0; arr != NULL && i < r->n; i++)
            json_array_append_new(
                arr, json_pack("{s:s, s:s, s:s, s:s?}", "check", r->items[i].name, "status",
                               check_status_word(r->items[i].status, true), "detail",
                               r->items[i].detail, "repository", r->items[i].repository));
        o = json_pack("{s:b, s:o}", "ok", failed == 0, "checks", arr);
        text = o != NULL ? json_dumps(o, JSON_INDENT(2) | JSON_PRESERVE_ORDER) : NULL;
        json_decref(o);
        if (text == NULL) {
            err_set(&err, "could not serialise the check results");
            return command_fail(CMD_CHECK, &err);
        }
        printf("%s\n", text);
        free(text);
    }
    if (fflush(stdout) != 0 || ferror(stdout)) {
        err_errno(&err, errno, "could not write the check results to standard output");
        return command_fail(CMD_CHECK, &err);
    }
    if (failed == 0)
        return EXIT_OK;
    err_set(&err, "%zu of %zu checks failed: %s", failed, r->n, names);
    return command_fail(CMD_CHECK, &err);
}

int cmd_check(int argc, char **argv)
{
    pgd_options opts;
    pgd_error err = {0};
    check_run r;
    long timeout;
    int rc;

    if (!command_start(&opts, &check_help, 0, argc, argv, &rc))
        return rc;
    memset(&r, 0, sizeof(r));
    if (!opt_bool(&opts, OPT_JSON, &r.json, &err) ||
        !opt_int(&opts, OPT_ARCHIVE_TIMEOUT, 1, ARCHIVE_TIMEOUT_MAX, &timeout, &err)) {
        err_mark(&err, PGD_ERR_USAGE);
        rc = command_fail(CMD_CHECK, &err);
        options_free(&opts);
        return rc;
    }
    r.archive_timeout = (int)timeout;
    check_server(&r, opt_str(&opts, OPT_DBNAME));
    check_settings(&r);
    /* each repository on its own (--repo given several times), with its own settings */
    for (size_t i = 0; i < command_repo_count(&opts); i++) {
        pgd_options *o = command_repo_options(&opts, i, &err);

        if (o == NULL) { /* its form was checked by command_start: not expected */
            check_add(&r, "repository", CHECK_FAILED, "%s", err.msg);
            continue;
        }
        r.where = command_repo_count(&opts) > 1 ? opt_str(o, OPT_REPO) : NULL;
        check_repository(&r, o);
        check_object_lock(&r, o);
        check_free_space(&r, opt_str(o, OPT_REPO));
        check_backlog(&r, &opts, i);
        check_archive(&r);
        command_repo_options_free(o);
        if (command_repo_count(&opts) > 1) {
            storage_free(r.repo);
            r.repo = NULL;
        }
    }
    r.where = NULL;
    rc = check_report(&r);
    for (size_t i = 0; i < r.n; i++)
        free(r.items[i].repository);
    free(r.items);
    if (r.connected)
        pg_session_close(&r.pg);
    storage_free(r.repo);
    options_free(&opts);
    return rc;
}
