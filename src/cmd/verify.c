/*
 * verify.c - `pgdirect verify [ID|LATEST|--all] [--json]`: re-read stored
 * backups and their WAL without restoring them (verify/verify.h), and say
 * which are restorable and how far a point-in-time restore can reach.
 *
 * The exit status tells a scheduler what to do: 0 every backup checked is
 * good, EXIT_DAMAGED (3) at least one is damaged (its sentinel too, however
 * the backup was named), or damaged WAL ends a window, or a restore of one
 * the default way would be refused because of the timeline it follows
 * (page someone: a backup cannot be restored as it normally would), 1
 * verify itself could not run (the repository did not answer or cannot be
 * read, a signal; try again), 2 a usage error. Nothing of a backup is
 * changed; its verdict is recorded beside it (repo/verify_record.h) for
 * list, and a local repository is read without filling the page cache
 * (storage/fs.c drops what it read).
 */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cmd/cmd.h"
#include "cmd/common.h"
#include "repo/backup_info.h"
#include "repo/layout.h"
#include "repo/verify_record.h"
#include "restore/chain.h"
#include "verify/verify.h"
#include "util/interrupt.h"
#include "util/log.h"
#include "util/units.h"
#include "util/xmalloc.h"

#define VERIFY_CONCURRENCY_MAX 256
#define VERIFY_CONCURRENCY_MIN 2
#define VERIFY_TIME_TEXT       32

static const command_help verify_help = {
    CMD_VERIFY, "usage: pgdirect verify [ID|LATEST|--all] [--json] [OPTIONS]",
    "Re-read a backup (LATEST by default, or every backup with --all) without restoring it:\n"
    "each partition's size and CRC-32C, each file's size (its tar header's too) and CRC-32C\n"
    "against the manifest, the manifest against the partitions, and the WAL from the\n"
    "backup's start to its stop segment (without it the backup cannot be restored), each\n"
    "segment read and checked.\n"
    "The point-in-time window is the unbroken run of intact segments after the stop, each\n"
    "read and checked once per run (--concurrency at a time): it ends before the first\n"
    "missing or damaged one. It follows the timelines a restore the default way follows\n"
    "(the newest PostgreSQL finds, when its history passes through the backup).\n"
    "Nothing of a backup is changed; the verdict is recorded beside it (verify.json in its\n"
    "directory), and list shows it.\n"
    "A delta backup is verified with its chain (its parents down to the full backup, each\n"
    "against its own manifest, increments against their own CRCs too); a delta whose parent\n"
    "is damaged or missing is damaged. LATEST is the backup restore LATEST restores; each\n"
    "newer one restore would pass over as damaged is reported damaged too.\n"
    "\n"
    "Exit status: 0 every backup verified is good; 3 at least one is damaged (a corrupt\n"
    "sentinel too, whether the backup was named by id, LATEST or --all), or a WAL\n"
    "segment after a stop is, or a restore the default way would be refused because the\n"
    "newest timeline does not pass through the backup (each problem is named; restore\n"
    "--target-timeline current restores along the backup's own); 1 verify could not run\n"
    "(repository unreachable or unreadable, interrupted); 2 usage error."};

typedef struct verify_settings {
    const char *id; /* NULL with --all */
    bool json;
    int concurrency;
} verify_settings;

static bool verify_read_settings(const pgd_options *opts, verify_settings *s, pgd_error *err)
{
    bool all;
    long concurrency;

    memset(s, 0, sizeof(*s));
    if (!opt_bool(opts, OPT_ALL, &all, err) || !opt_bool(opts, OPT_JSON, &s->json, err))
        return false;
    if (all && opts->nargs > 0)
        return err_set(err, "give a backup id or --all, not both");
    s->id = all ? NULL : opts->nargs == 1 ? opts->args[0] : "LATEST";
    if (strcmp(opt_str(opts, OPT_CONCURRENCY), "auto") == 0) {
        concurrency = sysconf(_SC_NPROCESSORS_ONLN);
        if (concurrency < VERIFY_CONCURRENCY_MIN)
            concurrency = VERIFY_CONCURRENCY_MIN;
    } else if (!opt_int(opts, OPT_CONCURRENCY, 1, VERIFY_CONCURRENCY_MAX, &concurrency, err)) {
        return false;
    }
    s->concurrency = (int)concurrency;
    return true;
}

static void verify_format_time(int64_t t, char *out, size_t outlen)
{
    time_t tt = (time_t)t;
    struct tm tm;

    if (t <= 0 || gmtime_r(&tt, &tm) == NULL)
        snprintf(out, outlen, "unknown");
    else
        strftime(out, outlen, "%Y-%m-%d %H:%M:%S UTC", &tm);
}

/* With several repositories, every line starts with the repository it is about (as list's). */
static void verify_where(const char *where)
{
    if (where != NULL)
        printf("%s  ", where);
}

static void verify_print_text(const backup_info *bi, const verify_result *r, const char *where)
{
    char stored[32], bytes[32], stop[VERIFY_TIME_TEXT];
    char start_lsn[LSN_TEXT_MAX], stop_lsn[LSN_TEXT_MAX];

    lsn_format(bi->start_lsn, start_lsn);
    lsn_format(bi->stop_lsn, stop_lsn);
    units_format_bytes(r->stored_bytes, stored, sizeof(stored));
    units_format_bytes(r->file_bytes, bytes, sizeof(bytes));
    verify_where(where);
    printf("backup %s: %s: %llu partitions (%s stored), %llu files (%s) read and checked\n", r->id,
           r->damaged ? "DAMAGED" : "ok", (unsigned long long)r->partitions, stored,
           (unsigned long long)r->files, bytes);
    for (size_t i = 0; i < r->nproblems; i++) {
        verify_where(where);
        printf("  problem: %s\n", r->problems[i]);
    }
    if (r->nproblems_all > r->nproblems) {
        verify_where(where);
        printf("  ... and %zu more problems\n", r->nproblems_all - r->nproblems);
    }
    if (bi->damaged)
        return;
    verify_format_time(bi->stop_time, stop, sizeof(stop));
    if (!r->restorable) {
        verify_where(where);
        printf("  WAL: NOT restorable: the WAL from %s (start, %s) to %s (stop, %s) is not all "
               "there and intact\n",
               bi->start_wal, start_lsn, bi->stop_wal, stop_lsn);
        return;
    }
    verify_where(where);
    printf("  WAL: restorable: %s to %s present and checked (consistent at %s, %s)\n",
           bi->start_wal, bi->stop_wal, stop_lsn, stop);
    if (r->timeline_problem != NULL && r->timeline_damaged) {
        verify_where(where);
        printf("  TIMELINE: a restore would fail: %s\n", r->timeline_problem);
    } else if (r->timeline_problem != NULL) {
        verify_where(where);
        printf("  TIMELINE: a restore the default way would fail: %s; the window below is along "
               "the backup's own timeline (restore --target-timeline current)\n",
               r->timeline_problem);
    }
    verify_where(where);
    printf("  point-in-time window: from %s (%s) to %s (the end of segment %s)\n", stop_lsn, stop,
           r->window_end_lsn, r->window_end_wal);
    if (r->gap_wal[0] != '\0') {
        verify_where(where);
        printf("  WAL gap: segment %s is missing (the window ends there); later WAL resumes at "
               "%s but cannot be reached from this backup\n",
               r->gap_wal, r->gap_resume_wal);
    }
    if (r->damaged_wal[0] != '\0') {
        verify_where(where);
        printf("  WAL DAMAGED: segment %s (the window ends before it): %s\n", r->damaged_wal,
               r->damaged_wal_why);
    }
}

static json_t *verify_to_json(const backup_info *bi, const verify_result *r)
{
    json_t *problems = json_array(), *o;
    char start_lsn[LSN_TEXT_MAX], stop_lsn[LSN_TEXT_MAX];

    lsn_format(bi->start_lsn, start_lsn);
    lsn_format(bi->stop_lsn, stop_lsn);
    for (size_t i = 0; i < r->nproblems; i++)
        json_array_append_new(problems, json_string(r->problems[i]));
    o = json_pack("{s:s, s:s, s:I, s:I, s:I, s:I, s:o, s:I}", "id", r->id, "status",
                  r->damaged ? "damaged" : "ok", "partitions", (json_int_t)r->partitions, "files",
                  (json_int_t)r->files, "stored_bytes", (json_int_t)r->stored_bytes, "file_bytes",
                  (json_int_t)r->file_bytes, "problems", problems, "problem_count",
                  (json_int_t)r->nproblems_all);
    if (o == NULL || bi->damaged)
        return o;
    json_object_set_new(o, "wal",
                        json_pack("{s:s, s:s, s:s, s:s, s:I, s:b}", "start_segment", bi->start_wal,
                                  "start_lsn", start_lsn, "stop_segment", bi->stop_wal, "stop_lsn",
                                  stop_lsn, "stop_time", (json_int_t)bi->stop_time, "restorable",
                                  r->restorable));
    if (r->restorable)
        json_object_set_new(
            o, "window",
            json_pack("{s:s, s:I, s:s, s:s, s:s?, s:s?, s:s?, s:s?, s:s?}", "from_lsn", stop_lsn,
                      "from_time", (json_int_t)bi->stop_time, "to_lsn", r->window_end_lsn,
                      "to_segment", r->window_end_wal, "gap_segment",
                      r->gap_wal[0] ? r->gap_wal : NULL, "resumes_at_segment",
                      r->gap_resume_wal[0] ? r->gap_resume_wal : NULL, "damaged_segment",
                      r->damaged_wal[0] ? r->damaged_wal : NULL, "damaged_reason",
                      r->damaged_wal_why, "timeline_problem", r->timeline_problem));
    return o;
}

/*
 * A backup that looks damaged may only have been removed by a delete while
 * it was read: that is not damage, and says so (exit 1, not 3).
 */
static bool verify_still_there(storage *repo, const backup_info *bi, pgd_error *err)
{
    backup_info now;
    bool missing = false;
    pgd_error e = {0};

    if (bi->damaged || backup_info_load(repo, bi->id, &now, &missing, &e))
        return true;
    if (missing)
        return err_set(err, "backup %s was removed from repository \"%s\" while it was verified",
                       bi->id, repo->uri);
    if (err_is(&e, PGD_ERR_TRANSIENT)) {
        *err = e;
        return false;
    }
    return true; /* a sentinel that cannot be read now: the damage stands */
}

/*
 * A delta is verified with its chain: its parents are put before it, the
 * full backup first, as far as they can be read (verify_backup reports a
 * chain that is broken).
 */
static bool verify_select_chain(storage *repo, backup_info **out, size_t *n, pgd_error *err)
{
    while ((*out)[0].parent[0] != '\0' && *n < CHAIN_MEMBERS_MAX) {
        backup_info parent;
        backup_info *grown;
        pgd_error e = {0};
        bool missing = false;
        if (!layout_is_backup_id((*out)[0].parent) ||
            !backup_info_load(repo, (*out)[0].parent, &parent, &missing, &e)) {
            if (err_is(&e, PGD_ERR_TRANSIENT)) {
                *err = e;
                return false;
            }
            break;
        }
        grown = xrealloc(*out, (*n + 1) * sizeof(**out));
        memmove(grown + 1, grown, *n * sizeof(*grown));
        grown[0] = parent;
        *out = grown;
        (*n)++;
    }
    return true;
}

/*
 * LATEST: the backup restore LATEST takes, with its chain, and after it
 * every damaged backup newer than it. Restore passes those over with a
 * warning; verify reports each as damaged (exit 3), since finding damage
 * is what it runs for. When no backup is usable, the damaged ones are all
 * there is to report; with none damaged either (every one marked for
 * checksum errors), verify cannot run.
 */
static bool verify_select_latest(storage *repo, backup_info **out, size_t *n, pgd_error *err)
{
    backup_info *all;
    size_t count, latest = 0;
    pgd_error none = {0};
    bool found;

    if (!backup_info_scan(repo, &all, &count, err))
        return false;
    if (!backup_info_check_latest(repo, all, count, err)) {
        free(all);
        return false;
    }
    *out = xcalloc(count ? count : 1, sizeof(**out));
    found = backup_info_pick_latest(repo, all, count, false, &latest, &none);
    *n = 0;
    if (found)
        (*out)[(*n)++] = all[latest];
    for (size_t i = found ? latest + 1 : 0; i < count; i++)
        if (all[i].damaged)
            (*out)[(*n)++] = all[i];
    free(all);
    if (*n == 0) {
        *err = none;
        return false;
    }
    return !found || verify_select_chain(repo, out, n, err);
}

/*
 * The backups to verify: one (an id or LATEST) with its chain, or every
 * one, the damaged ones included. A damaged sentinel is a verdict (exit 3),
 * whichever way the backup was named; one that cannot be read is not.
 */
static bool verify_select(storage *repo, const verify_settings *s, backup_info **out, size_t *n,
                          pgd_error *err)
{
    if (s->id == NULL) {
        if (!backup_info_scan(repo, out, n, err))
            return false;
        return *n > 0 || err_set(err, "repository \"%s\" holds no backups", repo->uri);
    }
    if (strcmp(s->id, "LATEST") == 0)
        return verify_select_latest(repo, out, n, err);
    *out = xcalloc(1, sizeof(**out));
    *n = 1;
    if (!backup_info_find(repo, s->id, *out, err))
        return false;
    return (*out)[0].damaged || verify_select_chain(repo, out, n, err);
}

/*
 * The verdict beside the backup, for list. A repository verify may only read (credentials
 * that cannot write) loses the record, not the verify: one warning says so.
 */
static void verify_record_verdict(storage *repo, const verify_result *r, bool *warned)
{
    verify_record rec = {.time = (int64_t)time(NULL), .problems = r->nproblems_all};
    pgd_error werr = {0};

    snprintf(rec.status, sizeof(rec.status), "%s",
             r->damaged                    ? "damaged"
             : r->damaged_wal[0] != '\0'   ? "wal damaged"
             : r->timeline_problem != NULL ? "timeline"
                                           : "good");
    if (r->nproblems > 0)
        snprintf(rec.summary, sizeof(rec.summary), "%s", r->problems[0]);
    else if (r->damaged_wal[0] != '\0')
        snprintf(rec.summary, sizeof(rec.summary), "WAL segment %s: %s", r->damaged_wal,
                 r->damaged_wal_why);
    else if (r->timeline_problem != NULL)
        snprintf(rec.summary, sizeof(rec.summary), "%s", r->timeline_problem);
    if (!verify_record_write(repo, r->id, &rec, &werr) && !*warned) {
        log_warn("could not record the verdict in the repository (list shows no verify result): "
                 "%s",
                 werr.msg);
        *warned = true;
    }
}

/* What verify found, over every repository verified. */
typedef struct verify_tally {
    size_t n, damaged, wal_damaged, timeline_bad;
    char where[PGD_ERROR_MAX / 2]; /* several repositories: those a verdict is about */
    size_t nwhere;
} verify_tally;

/* Several repositories: name `where` among those with a verdict, once. */
static void verify_tally_where(verify_tally *t, const char *where)
{
    char quoted[PGD_ERROR_MAX / 2];

    snprintf(quoted, sizeof(quoted), "\"%s\"", where);
    if (strstr(t->where, quoted) != NULL)
        return;
    snprintf(t->where + strlen(t->where), sizeof(t->where) - strlen(t->where), "%s%s",
             t->where[0] ? ", " : "", quoted);
    t->nwhere++;
}

/*
 * One repository's backups verified, each printed (or appended to arr, --json) as it is done,
 * naming the repository when there are several (where: its URI; NULL: one). false: verify
 * could not run there (err), which is no verdict.
 */
static bool verify_repository(const verify_settings *s, storage *repo, const char *where,
                              json_t *arr, verify_tally *t, pgd_error *err)
{
    backup_info *infos = NULL;
    size_t n = 0;
    unsigned char *bad = NULL; /* per backup verified: damaged */
    verify_wal_memo memo = {0};
    bool ok, record_warned = false;

    ok = verify_select(repo, s, &infos, &n, err);
    if (ok)
        bad = xcalloc(n ? n : 1, 1);
    for (size_t i = 0; ok && i < n; i++) {
        verify_request req = {.repo = repo,
                              .bi = &infos[i],
                              .concurrency = s->concurrency,
                              .cancel = interrupt_flag(),
                              .memo = &memo};
        verify_result r;
        if (interrupt_signal() != 0) {
            ok = err_set(err, "interrupted by %s", interrupt_signal_name(interrupt_signal()));
            break;
        }
        ok = verify_backup(&req, &r, err);
        if (!ok) {
            err_prefix(err, "verify of backup %s failed", infos[i].id);
            break;
        }
        if (r.damaged && !verify_still_there(repo, &infos[i], err)) {
            verify_result_free(&r);
            ok = false;
            break;
        }
        /* parents come first (ids sort by time): a delta of a damaged chain cannot be restored */
        for (size_t j = 0; j < i && infos[i].parent[0] != '\0'; j++)
            if (strcmp(infos[j].id, infos[i].parent) == 0 && bad != NULL && bad[j])
                verify_problem(&r, "its parent %s is damaged, and it cannot be restored without it",
                               infos[i].parent);
        if (bad != NULL)
            bad[i] = r.damaged;
        t->n++;
        t->damaged += r.damaged;
        t->wal_damaged += !r.damaged && r.damaged_wal[0] != '\0';
        t->timeline_bad += !r.damaged && r.timeline_problem != NULL;
        if (where != NULL && (r.damaged || r.damaged_wal[0] != '\0' || r.timeline_problem != NULL))
            verify_tally_where(t, where);
        verify_record_verdict(repo, &r, &record_warned);
        if (arr != NULL) {
            json_t *o = verify_to_json(&infos[i], &r);
            if (where != NULL)
                json_object_set_new(o, "repository", json_string(where));
            json_array_append_new(arr, o);
        } else {
            verify_print_text(&infos[i], &r, where);
        }
        verify_result_free(&r);
        fflush(stdout);
    }
    verify_wal_memo_free(&memo);
    free(bad);
    free(infos);
    if (!ok && where != NULL && err->set && strstr(err->msg, where) == NULL)
        err_prefix(err, "repository \"%s\"", where);
    return ok;
}

/*
 * Every repository (--repo given several times) verified on its own, in order: one that cannot
 * be verified is named (1) and the others are still verified; the exit status is the worst,
 * damage (3: in a backup, its WAL, or the repository's keyring) before a failure to run (1).
 */
static int verify_run(const verify_settings *s, const pgd_options *opts, pgd_error *err)
{
    size_t nrepos = command_repo_count(opts), failed = 0, unreadable = 0;
    json_t *arr = s->json ? json_array() : NULL;
    verify_tally t = {0};
    pgd_error verdict = {0};
    int rc = EXIT_OK;

    interrupt_catch(NULL);
    for (size_t i = 0; i < nrepos; i++) {
        pgd_error one = {0};
        storage *repo = command_open_repo_at(opts, i, &one);
        const char *where = nrepos > 1 && repo != NULL ? repo->uri : NULL;

        if (repo == NULL && err_is(&one, PGD_ERR_DAMAGED)) {
            /* its own data is damaged (the keyring: damaged or missing): a verdict, said */
            command_fail(CMD_VERIFY, &one);
            unreadable++;
        } else if (repo == NULL || !verify_repository(s, repo, where, arr, &t, &one)) {
            /* verify could not run: whatever it read, that is no verdict */
            if (err_is(&one, PGD_ERR_DAMAGED))
                err_mark(&one, PGD_ERR_FAILED);
            rc = command_fail(CMD_VERIFY, &one);
            failed++;
        }
        storage_free(repo);
        if (interrupt_signal() != 0)
            break;
    }
    interrupt_release();
    /* one repository that could not be verified: no report, as before several existed */
    if (arr != NULL && (failed == 0 || nrepos > 1)) {
        json_t *o =
            json_pack("{s:b, s:O}", "ok",
                      failed == 0 && t.damaged == 0 && t.wal_damaged == 0 && t.timeline_bad == 0,
                      "backups", arr);
        /* jansson allocates with xmalloc (main.c) and these values are all valid: no NULL */
        char *text = json_dumps(o, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
        printf("%s\n", text);
        free(text);
        json_decref(o);
    }
    json_decref(arr);
    if (fflush(stdout) != 0 || ferror(stdout)) {
        err_set(err, "could not write to standard output");
        return command_fail(CMD_VERIFY, err);
    }
    /* the verdicts: verify ran, and what it found is damaged */
    if (t.damaged > 0)
        err_set(&verdict, "%zu of %zu backups verified are damaged", t.damaged, t.n);
    else if (t.wal_damaged > 0)
        err_set(&verdict,
                "the repository holds damaged WAL after the stop of %zu of %zu backups "
                "verified (their point-in-time window ends before it)",
                t.wal_damaged, t.n);
    else if (t.timeline_bad > 0)
        err_set(&verdict,
                "a restore the default way of %zu of %zu backups verified would fail, because "
                "of the timelines it follows (see TIMELINE)",
                t.timeline_bad, t.n);
    if (verdict.set) {
        if (t.where[0] != '\0')
            err_prefix(&verdict, "in %s %s", t.nwhere == 1 ? "repository" : "repositories",
                       t.where);
        if (failed > 0)
            err_prefix(&verdict, "%zu of %zu repositories could not be verified", failed, nrepos);
        err_mark(&verdict, PGD_ERR_DAMAGED);
        return command_fail(CMD_VERIFY, &verdict);
    }
    if (unreadable > 0) { /* each one's damage was said */
        if (nrepos > 1) {
            err_set(&verdict, "%zu of %zu repositories cannot be read: their data is damaged",
                    unreadable, nrepos);
            if (failed > 0)
                err_prefix(&verdict, "%zu of %zu repositories could not be verified", failed,
                           nrepos);
            err_mark(&verdict, PGD_ERR_DAMAGED);
            return command_fail(CMD_VERIFY, &verdict);
        }
        return EXIT_DAMAGED;
    }
    if (failed > 0 && nrepos > 1) { /* each one's error was said: one line sums them up */
        pgd_error summary = {0};
        err_set(&summary, "%zu of %zu repositories could not be verified", failed, nrepos);
        return command_fail(CMD_VERIFY, &summary);
    }
    if (failed > 0)
        return rc;
    log_info("%zu backup%s verified: good", t.n, t.n == 1 ? "" : "s");
    return EXIT_OK;
}

int cmd_verify(int argc, char **argv)
{
    pgd_options opts;
    pgd_error err = {0};
    verify_settings s;
    storage *repo = NULL;
    int rc;

    if (!command_start(&opts, &verify_help, 1, argc, argv, &rc))
        return rc;
    if (!verify_read_settings(&opts, &s, &err)) {
        err_mark(&err, PGD_ERR_USAGE);
        rc = command_fail(CMD_VERIFY, &err);
    } else {
        rc = verify_run(&s, &opts, &err);
    }
    /* a repository that cannot be opened has no metrics to write (its error is said) */
    if (opt_str(&opts, OPT_METRICS_FILE) != NULL)
        repo = command_open_repo(&opts, &err);
    command_write_metrics(&opts, repo, NULL);
    storage_free(repo);
    options_free(&opts);
    return rc;
}
