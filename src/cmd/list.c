/*
 * list.c - `pgdirect list [--json]`: the complete backups of a repository,
 * and the damaged ones, marked as such so one bad object neither hides the
 * others nor goes unnoticed. A delta whose chain meets a parent that is not
 * listed, or is damaged, is marked "chain broken".
 *
 * What it reads is kept cheap: every sentinel, and the manifests restore
 * LATEST reads before it chooses (repo/backup_info.h,
 * backup_info_check_latest): the newest backup's, and an older one's only
 * while the newer ones are damaged. So the newest backup listed "ok" is the
 * one restore LATEST restores, at the cost of one more GET on S3, not one
 * per backup; an older backup's manifest is left to verify --all.
 *
 * Each backup's last verify verdict (repo/verify_record.h: a GET per backup, as for its
 * sentinel), and the backup directories without a sentinel with what their claims say (running
 * on host H as pid P, or interrupted: repo/repo_contents.h), come after the complete ones.
 */
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cmd/cmd.h"
#include "cmd/common.h"
#include "cmd/wal_async.h"
#include "repo/backup_info.h"
#include "repo/layout.h"
#include "repo/repo_contents.h"
#include "repo/verify_record.h"
#include "util/log.h"
#include "util/units.h"
#include "util/xmalloc.h"

static const command_help list_help = {
    CMD_LIST, "usage: pgdirect list [--json] [OPTIONS]",
    "List the complete backups in the repository, oldest first; after them the ones\n"
    "without a sentinel yet (running, or interrupted: see the end). A backup whose\n"
    "sentinel is empty or corrupt is shown with status \"damaged\" and the reason, and so\n"
    "is one whose manifest is missing or does not parse, among those restore LATEST\n"
    "considers (the newest, and older ones while the newer are damaged). A delta\n"
    "backup shows its parent and its depth in the chain; one whose parent (or a parent\n"
    "of that) is missing or damaged cannot be restored and is shown \"chain broken\".\n"
    "VERIFIED is the last verify's verdict on each backup, and when it was given.\n"
    "Backups without a sentinel follow: \"running\" (host and pid of the run), \"interrupted\"\n"
    "(what a killed run left: delete --garbage removes it), or \"unknown\".\n"
    "With --pgdata DIR (the cluster on this host archiving with wal-push --archive-async),\n"
    "each repository's archive backlog follows its backups: the WAL files not stored in it\n"
    "yet (ready in pg_wal, or in its queue), their bytes, the oldest and its age; in --json,\n"
    "one object {\"archive_backlog\": {...}} after the repository's backups."};

/* What list shows of one backup besides its sentinel. */
typedef struct list_extra {
    verify_record verified;
} list_extra;

/* VERIFIED: "good 2026-12-05", "DAMAGED 2026-12-05", or "-" when never verified. */
static void list_verified(const verify_record *v, char *out, size_t len)
{
    char day[16];
    time_t t = (time_t)v->time;
    struct tm tm;

    if (!v->present) {
        snprintf(out, len, "-");
        return;
    }
    gmtime_r(&t, &tm);
    strftime(day, sizeof(day), "%Y-%m-%d", &tm);
    snprintf(out, len, "%s %s", strcmp(v->status, "good") == 0 ? "good" : "DAMAGED", day);
}

/* A backup directory without a sentinel, as its claim says: its status word. */
static const char *list_incomplete_status(const repo_dir *d)
{
    return d->state == RETENTION_CLAIM_RUNNING ? "running"
           : d->state == RETENTION_CLAIM_DEAD  ? "interrupted"
                                               : "unknown";
}

/* BAD PAGES: pages that failed their data checksum; "off": the cluster has none; "-": not verified.
 */
static void list_bad_pages(const backup_info *b, char *out, size_t len)
{
    if (strcmp(b->page_checksums, "verified") == 0)
        snprintf(out, len, "%llu", (unsigned long long)b->checksum_errors);
    else
        snprintf(out, len, "%s", strcmp(b->page_checksums, "off") == 0 ? "off" : "-");
}

/*
 * Whether the chain of b[i] meets a parent that is not in the list, or is
 * damaged, or loops; why says which. A full's chain is whole.
 */
static bool list_chain_broken(const backup_info *b, size_t n, size_t i, char *why, size_t len)
{
    size_t at = i;

    for (size_t steps = 0; b[at].parent[0] != '\0'; steps++) {
        size_t p = n;
        for (size_t k = 0; k < n; k++)
            if (strcmp(b[k].id, b[at].parent) == 0)
                p = k;
        if (p == n) {
            snprintf(why, len, "parent %s is missing", b[at].parent);
            return true;
        }
        if (b[p].damaged) {
            snprintf(why, len, "parent %s is damaged", b[p].id);
            return true;
        }
        if (steps > n) {
            snprintf(why, len, "parents loop");
            return true;
        }
        at = p;
    }
    return false;
}

/* The start and stop times are whole seconds: under one second is "<1s", not "0.0s". */
static void list_format_duration(int64_t secs, char *out, size_t outlen)
{
    if (secs < 1)
        snprintf(out, outlen, "<1s");
    else if (secs < 60)
        snprintf(out, outlen, "%llds", (long long)secs);
    else
        units_format_duration((double)secs, out, outlen);
}

/* With several repositories, every line of the table starts with the one it is about. */
static void list_where(const char *where)
{
    if (where != NULL)
        printf("%s  ", where);
}

/* A backup's annotations on a line of their own under it: "  annotations: KEY=VALUE, ...". */
static void list_print_annotations(const backup_info *b, const char *where)
{
    json_t *o = b->annotations[0] ? json_loads(b->annotations, 0, NULL) : NULL;
    const char *key;
    json_t *v;
    bool first = true;

    json_object_foreach(o, key, v)
    {
        if (first)
            list_where(where);
        printf("%s%s=%s", first ? "  annotations: " : ", ", key, json_string_value(v));
        first = false;
    }
    if (!first)
        printf("\n");
    json_decref(o);
}

/*
 * STATUS comes last, so scripts that read the columns before it by position keep working.
 * A delta shows its PARENT and its DEPTH in the chain (0: a full); READ is what the backup
 * read from PGDATA, STORED what it wrote (a delta reads everything, stores what changed).
 */
static void list_print_table(const backup_info *b, const list_extra *x, size_t n,
                             const repo_contents *c, const char *where)
{
    size_t shown = 0;

    if (where != NULL)
        printf("REPOSITORY  ");
    printf("%-17s  %-5s  %-17s  %5s  %-20s  %9s  %10s  %10s  %5s  %-12s  %-12s  %-24s  %-18s  %9s  "
           "%s\n",
           "ID", "TYPE", "PARENT", "DEPTH", "STARTED (UTC)", "DURATION", "READ", "STORED", "RATIO",
           "START LSN", "STOP LSN", "WAL START", "VERIFIED", "BAD PAGES", "STATUS");
    for (size_t i = 0; i < n; i++) {
        char started[32], dur[32], size[32], stored[32], bad[24], why[96], status[128];
        char start_lsn[LSN_TEXT_MAX], stop_lsn[LSN_TEXT_MAX];
        char verified[32];
        struct tm tm;
        time_t t = (time_t)b[i].start_time;

        shown++;
        list_verified(&x[i].verified, verified, sizeof(verified));
        list_where(where);
        if (b[i].damaged) {
            printf("%-17s  %-5s  %-17s  %5s  %-20s  %9s  %10s  %10s  %5s  %-12s  %-12s  %-24s  "
                   "%-18s  %9s  damaged: %s\n",
                   b[i].id, "-", "-", "-", "-", "-", "-", "-", "-", "-", "-", "-", verified, "-",
                   b[i].damage);
            continue;
        }
        if (list_chain_broken(b, n, i, why, sizeof(why)))
            snprintf(status, sizeof(status), "chain broken: %s", why);
        else
            snprintf(status, sizeof(status), "%s",
                     b[i].checksum_failed ? "checksum errors (--checksum-errors fail)" : "ok");
        list_bad_pages(&b[i], bad, sizeof(bad));
        gmtime_r(&t, &tm);
        strftime(started, sizeof(started), "%Y-%m-%d %H:%M:%S", &tm);
        list_format_duration(b[i].stop_time - b[i].start_time, dur, sizeof(dur));
        units_format_bytes(b[i].size, size, sizeof(size));
        units_format_bytes(b[i].compressed_size, stored, sizeof(stored));
        printf("%-17s  %-5s  %-17s  %5u  %-20s  %9s  %10s  %10s  %5.2f  %-12s  %-12s  %-24s  "
               "%-18s  %9s  %s\n",
               b[i].id, b[i].type[0] ? b[i].type : "full", b[i].parent[0] ? b[i].parent : "-",
               b[i].depth, started, dur, size, stored,
               b[i].compressed_size ? (double)b[i].size / (double)b[i].compressed_size : 0.0,
               lsn_format(b[i].start_lsn, start_lsn), lsn_format(b[i].stop_lsn, stop_lsn),
               b[i].start_wal, verified, bad, status);
        list_print_annotations(&b[i], where);
    }
    for (size_t i = 0; i < c->ndirs; i++) {
        const repo_dir *d = &c->dirs[i];
        char started[32] = "-";
        time_t t = (time_t)d->start_time;
        struct tm tm;

        if (d->sentinel || d->objects == 0)
            continue;
        shown++;
        if (t > 0 && gmtime_r(&t, &tm) != NULL)
            strftime(started, sizeof(started), "%Y-%m-%d %H:%M:%S", &tm);
        list_where(where);
        printf("%-17s  %-5s  %-17s  %5s  %-20s  %9s  %10s  %10s  %5s  %-12s  %-12s  %-24s  %-18s  "
               "%9s  %s: %s\n",
               d->id, d->id[BACKUP_ID_LEN - 1] == 'D' ? "delta" : "full",
               d->parent[0] ? d->parent : "-", "-", started, "-", "-", "-", "-", "-", "-", "-", "-",
               "-", list_incomplete_status(d), d->why);
    }
    if (shown == 0) {
        list_where(where);
        printf("(no backups)\n");
    }
}

/*
 * One backup as a JSON object: the sentinel's fields and "status" ("ok",
 * "checksum errors", or "chain broken" with "reason"), or id, status and reason.
 */
static json_t *list_backup_json(const backup_info *all, const list_extra *x, size_t n, size_t i,
                                pgd_error *err)
{
    const backup_info *b = &all[i];
    const verify_record *v = &x[i].verified;
    const char *status;
    char why[96];
    bool broken;
    json_t *o;
    char *one;

    if (b->damaged) {
        o = json_pack("{s:s, s:s, s:s}", "id", b->id, "status", "damaged", "reason", b->damage);
    } else {
        if (!backup_info_to_json(b, &one, err))
            return NULL;
        o = json_loads(one, 0, NULL);
        free(one);
        broken = list_chain_broken(all, n, i, why, sizeof(why));
        status = broken ? "chain broken" : b->checksum_failed ? "checksum errors" : "ok";
        if (o != NULL && (json_object_set_new(o, "status", json_string(status)) != 0 ||
                          (broken && json_object_set_new(o, "reason", json_string(why)) != 0))) {
            json_decref(o);
            o = NULL;
        }
    }
    if (o != NULL && json_object_set_new(
                         o, "verified",
                         v->present ? json_pack("{s:I, s:s, s:I, s:s}", "time", (json_int_t)v->time,
                                                "status", v->status, "problems",
                                                (json_int_t)v->problems, "summary", v->summary)
                                    : json_null()) != 0) {
        json_decref(o);
        o = NULL;
    }
    return o;
}

/* A backup directory without a sentinel: id, status (running, interrupted, unknown), why. */
static json_t *list_incomplete_json(const repo_dir *d)
{
    return json_pack("{s:s, s:s, s:s, s:s?, s:I, s:s?, s:I, s:s}", "id", d->id, "type",
                     d->id[BACKUP_ID_LEN - 1] == 'D' ? "delta" : "full", "status",
                     list_incomplete_status(d), "host", d->host[0] ? d->host : NULL, "pid",
                     (json_int_t)d->pid, "parent", d->parent[0] ? d->parent : NULL, "start_time",
                     (json_int_t)d->start_time, "reason", d->why);
}

/* Append the backups of one repository to arr; with several, each object names it. */
static bool list_append_json(json_t *arr, const backup_info *b, const list_extra *x, size_t n,
                             const repo_contents *c, const char *where, pgd_error *err)
{
    for (size_t i = 0; i < n + c->ndirs; i++) {
        json_t *o;
        if (i >= n && (c->dirs[i - n].sentinel || c->dirs[i - n].objects == 0))
            continue;
        o = i < n ? list_backup_json(b, x, n, i, err) : list_incomplete_json(&c->dirs[i - n]);
        if (o != NULL && where != NULL &&
            json_object_set_new(o, "repository", json_string(where)) != 0) {
            json_decref(o);
            o = NULL;
        }
        if (o == NULL || json_array_append_new(arr, o) != 0)
            return err_set(err, "could not serialise the backup list");
    }
    return true;
}

static bool list_print_json(json_t *arr, pgd_error *err)
{
    char *text = json_dumps(arr, JSON_INDENT(2) | JSON_PRESERVE_ORDER);

    if (text == NULL)
        return err_set(err, "could not serialise the backup list");
    printf("%s\n", text);
    free(text);
    return true;
}

/* The last verify's verdict on each backup. */
static bool list_read_extra(storage *repo, const backup_info *b, size_t n, list_extra **out,
                            pgd_error *err)
{
    *out = xcalloc(n + 1, sizeof(**out));
    for (size_t i = 0; i < n; i++)
        if (!verify_record_load(repo, b[i].id, &(*out)[i].verified, err))
            return false;
    return true;
}

/* A list cut short by a full disk or a closed pipe must not exit 0. */
static bool list_flush_stdout(pgd_error *err)
{
    if (fflush(stdout) != 0 || ferror(stdout))
        return err_errno(err, errno, "could not write the backup list to standard output");
    return true;
}

/*
 * With --pgdata: what waits on this host for repository r (wal-push --archive-async), as a
 * line under its table or an object after its backups in arr. Nothing without --pgdata.
 */
static bool list_backlog(const pgd_options *opts, size_t r, json_t *arr, const char *where,
                         pgd_error *err)
{
    const char *pgdata = opt_str(opts, OPT_PGDATA);
    wal_queue_stat st;
    char bytes[32];
    bool none;
    long long age;
    json_t *o;

    if (pgdata == NULL)
        return true;
    if (!cmd_wal_async_backlog(opts, r, pgdata, &st, &none, err)) {
        err_prefix(err, "could not measure the archive backlog");
        return false;
    }
    age = st.files > 0 ? (long long)(time(NULL) - st.oldest_mtime) : 0;
    if (arr == NULL) {
        units_format_bytes(st.bytes, bytes, sizeof(bytes));
        list_where(where);
        if (st.files == 0)
            printf("archive backlog: 0 WAL files%s\n",
                   none ? " (no --archive-async spool for this repository)" : "");
        else
            printf("archive backlog: %u WAL files (%s), the oldest \"%s\" for %lld s\n", st.files,
                   bytes, st.oldest, age);
        return true;
    }
    o = json_pack("{s:{s:I, s:I, s:s?, s:I, s:b}}", "archive_backlog", "files",
                  (json_int_t)st.files, "bytes", (json_int_t)st.bytes, "oldest",
                  st.files > 0 ? st.oldest : NULL, "oldest_age_s", (json_int_t)age, "spool", !none);
    if (o != NULL && where != NULL && json_object_set_new(o, "repository", json_string(where)))
        o = (json_decref(o), NULL);
    if (o == NULL || json_array_append_new(arr, o) != 0)
        return err_set(err, "could not serialise the backup list");
    return true;
}

/*
 * One repository's list: the table printed, or its backups appended to arr (--json). where:
 * the repository's URI when there are several (NULL: one).
 */
static bool list_one(const pgd_options *opts, size_t r, json_t *arr, const char *several,
                     pgd_error *err)
{
    storage *repo = NULL;
    backup_info *backups = NULL;
    list_extra *extra = NULL;
    repo_contents dirs;
    size_t n = 0;
    bool ok;

    memset(&dirs, 0, sizeof(dirs));
    ok = (repo = command_open_repo_at(opts, r, err)) != NULL &&
         backup_info_scan(repo, &backups, &n, err) &&
         backup_info_check_latest(repo, backups, n, err) &&
         list_read_extra(repo, backups, n, &extra, err) &&
         repo_contents_scan_dirs(repo, RETENTION_GARBAGE_AGE_DEFAULT_S, &dirs, err);
    if (ok) {
        const char *where = several != NULL ? repo->uri : NULL;
        for (size_t i = 0; i < n; i++)
            if (backups[i].damaged)
                log_warn("backup %s%s%s%s is damaged: %s", backups[i].id,
                         where ? " in repository \"" : "", where ? where : "", where ? "\"" : "",
                         backups[i].damage);
        if (arr != NULL)
            ok = list_append_json(arr, backups, extra, n, &dirs, where, err);
        else
            list_print_table(backups, extra, n, &dirs, where);
    }
    /* the backlog also when the repository could not be read: that is when it grows */
    if (opt_str(opts, OPT_PGDATA) != NULL) {
        pgd_error berr = {0};
        pgd_options *o = command_repo_options(opts, r, &berr);
        const char *uri = o != NULL ? opt_str(o, OPT_REPO) : NULL;

        if (!list_backlog(opts, r, arr, several != NULL ? uri : NULL, &berr)) {
            if (ok)
                *err = berr;
            else
                log_warn("%s", berr.msg);
            ok = false;
        }
        command_repo_options_free(o);
    }
    repo_contents_free(&dirs);
    free(extra);
    free(backups);
    storage_free(repo);
    return ok;
}

int cmd_list(int argc, char **argv)
{
    pgd_options opts;
    pgd_error err = {0};
    json_t *arr = NULL;
    size_t nrepos;
    bool json;
    int rc;

    if (!command_start(&opts, &list_help, 0, argc, argv, &rc))
        return rc;
    rc = EXIT_OK;
    if (!opt_bool(&opts, OPT_JSON, &json, &err)) {
        rc = command_fail(CMD_LIST, &err);
        options_free(&opts);
        return rc;
    }
    nrepos = command_repo_count(&opts);
    arr = json ? json_array() : NULL;
    /* several: each repository on its own; one that fails is named, the others still listed */
    for (size_t r = 0; r < nrepos; r++) {
        pgd_error one = {0};
        if (list_one(&opts, r, arr, nrepos > 1 ? "" : NULL, &one))
            continue;
        if (nrepos > 1 && strstr(one.msg, "repository") == NULL)
            err_prefix(&one, "repository %zu of %zu", r + 1, nrepos);
        rc = command_fail(CMD_LIST, &one);
    }
    if (json && rc == EXIT_OK && !list_print_json(arr, &err))
        rc = command_fail(CMD_LIST, &err);
    if (rc == EXIT_OK && !list_flush_stdout(&err))
        rc = command_fail(CMD_LIST, &err);
    json_decref(arr);
    options_free(&opts);
    return rc;
}
