/*
 * delete.c - `pgdirect delete`: retention (--retain-full, --retain-since),
 * one backup (--backup ID), and the garbage killed runs leave (--garbage),
 * with --dry-run printing exactly what would go.
 *
 * Which backups and WAL go is decided by repo/retention.c from the
 * repository's listing alone (repo/repo_contents.h); this file holds the
 * repository's "delete" lease (repo/repo_lock.h) while it removes, and
 * reports. Removal order keeps the repository consistent if the run dies
 * midway: a backup's sentinel goes first (it stops existing), dependents
 * before their parents, and WAL only once every backup meant to go is gone.
 *
 * A backup directory without a sentinel belongs to a run that is going,
 * or to one that was killed. Its claim says when it started: younger than
 * --garbage-age, or claimed by a live process of this host, it is running
 * and nothing of it is touched, nor any WAL (its start is not known yet),
 * nor, for a delta, the parent its claim names and that parent's chain.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <jansson.h>
#include <stdarg.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "backup/backup_id.h"
#include "cmd/cmd.h"
#include "cmd/common.h"
#include "pg/wal_name.h"
#include "repo/backup_info.h"
#include "repo/layout.h"
#include "repo/repo_contents.h"
#include "repo/repo_lock.h"
#include "repo/retention.h"
#include "wal/wal_archive.h"
#include "restore/timeline.h"
#include "storage/crypt/keyring.h"
#include "util/log.h"
#include "util/text.h"
#include "util/xmalloc.h"

#define DELETE_LOCK_NAME "delete"
#define DELETE_BATCH     1000 /* objects per removal request: S3 DeleteObjects' limit */
#define RETAIN_FULL_MAX  100000
#define GARBAGE_AGE_MAX  (3650LL * 24 * 3600)

static const command_help delete_help = {
    CMD_DELETE,
    "usage: pgdirect delete [--retain-full N] [--retain-since TIME|AGE] [--backup ID "
    "[--with-dependents]] [--garbage] [--dry-run] [OPTIONS]",
    "Remove what the repository no longer needs. --retain-full and --retain-since expire old\n"
    "backups (a delta backup goes with its full backup, never before its dependents) and the\n"
    "WAL before the oldest backup kept; --backup removes one backup; --garbage removes what\n"
    "killed runs left. The newest usable backup is never removed, nor anything a running\n"
    "backup needs. One delete runs at a time per repository (a lease in lock/). --dry-run\n"
    "prints what would go and removes nothing.\n"
    "\n"
    "--timeline N removes a stray timeline: its history file and WAL, which a test restore\n"
    "that was promoted and archived into this repository leaves (check and backup warn of\n"
    "it: a default restore would follow it). Refused while a backup is on timeline N or on\n"
    "one that descends from it. Stop the server that archived it first.\n"
    "\n"
    "On an S3 bucket with Object Lock, a backup whose objects are still locked is kept, with\n"
    "the date its lock ends, and so are the backups it depends on and its WAL; the rest is\n"
    "removed, and delete exits 0 with a warning (1 with --strict).\n"
    "\n"
    "With --repo given several times, each repository is done on its own, with its own\n"
    "retention when its value has one (--repo 'URI?retain-full=N&retain-since=AGE'), and\n"
    "every line names it; one that fails is named, and the others are still done."};

typedef struct delete_settings {
    retention_policy policy;
    bool retention, garbage, dry_run;
    bool strict; /* --strict: a backup kept by S3 Object Lock fails the run */
    int64_t garbage_age;
    uint32_t timeline; /* --timeline N; 0 when not given */
    bool json;
} delete_settings;

typedef struct delete_run {
    const delete_settings *s;
    const char *where; /* several repositories: the one this run is about (NULL: one) */
    storage *repo;
    repo_lock *lock;
    repo_contents c;
    size_t removed_backups, removed_wal, removed_garbage;
    size_t locked;            /* backups retention would remove that S3 Object Lock keeps */
    unsigned char *lock_kept; /* per backup of c: an ancestor of a locked backup */
    json_t *actions, *notes;  /* --json: what delete_say and delete_note would have printed */
} delete_run;

static bool delete_read_settings(const pgd_options *opts, delete_settings *s, pgd_error *err)
{
    memset(s, 0, sizeof(*s));
    if (!opt_bool(opts, OPT_GARBAGE, &s->garbage, err) ||
        !opt_bool(opts, OPT_JSON, &s->json, err) ||
        !opt_bool(opts, OPT_DRY_RUN, &s->dry_run, err) ||
        !opt_bool(opts, OPT_STRICT, &s->strict, err) ||
        !opt_bool(opts, OPT_WITH_DEPENDENTS, &s->policy.with_dependents, err) ||
        !opt_duration(opts, OPT_GARBAGE_AGE, 0, GARBAGE_AGE_MAX, &s->garbage_age, err))
        return false;
    if (opt_str(opts, OPT_RETAIN_FULL) != NULL &&
        !opt_int(opts, OPT_RETAIN_FULL, 1, RETAIN_FULL_MAX, &s->policy.retain_full, err))
        return false;
    if (opt_str(opts, OPT_RETAIN_SINCE) != NULL) {
        if (!opt_point_in_time(opts, OPT_RETAIN_SINCE, (int64_t)time(NULL), &s->policy.retain_since,
                               err))
            return false;
        s->policy.retain_since_set = true;
    }
    s->policy.backup_id = opt_str(opts, OPT_BACKUP_ID);
    if (s->policy.backup_id != NULL && !layout_is_backup_id(s->policy.backup_id))
        return err_set(err,
                       "invalid value \"%s\" for option \"--backup\": expected an id like "
                       "20261129T215959F",
                       s->policy.backup_id);
    if (s->policy.backup_id != NULL && (s->policy.retain_full > 0 || s->policy.retain_since_set))
        return err_set(err, "--backup cannot be combined with --retain-full or --retain-since");
    if (s->policy.with_dependents && s->policy.backup_id == NULL)
        return err_set(err, "--with-dependents goes with --backup");
    s->retention =
        s->policy.retain_full > 0 || s->policy.retain_since_set || s->policy.backup_id != NULL;
    if (opt_str(opts, OPT_TIMELINE) != NULL) {
        long tli;
        /* from 2: timeline 1, where every cluster begins, has no history and is never stray */
        if (!opt_int(opts, OPT_TIMELINE, 2, UINT32_MAX, &tli, err))
            return false;
        if (s->retention || s->garbage)
            return err_set(err, "--timeline cannot be combined with --retain-full, "
                                "--retain-since, --backup or --garbage");
        s->timeline = (uint32_t)tli;
    }
    if (!s->retention && !s->garbage && s->timeline == 0)
        return err_set(err, "nothing to do: give --retain-full, --retain-since, --backup, "
                            "--garbage or --timeline (see --help)");
    return true;
}

/* ---- removal ---- */

/*
 * The signal (SIGINT, SIGTERM, SIGHUP) that asked the run to stop, 0 while
 * none did. The run stops before its next removal, gives its lease back
 * (so the next run need not wait for it to expire) and dies of that
 * signal; a second one ends it at once (SA_RESETHAND).
 */
static volatile sig_atomic_t delete_signal;

static void delete_on_signal(int sig)
{
    delete_signal = sig;
}

static void delete_catch_signals(void)
{
    static const int sigs[] = {SIGINT, SIGTERM, SIGHUP};
    struct sigaction sa;

    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = delete_on_signal;
    sa.sa_flags = SA_RESETHAND;
    sigemptyset(&sa.sa_mask);
    for (size_t i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++)
        sigaction(sigs[i], &sa, NULL);
}

/* Before each removal: not interrupted, and the lease still ours (renewed when due). */
static bool delete_keep_lease(delete_run *r, pgd_error *err)
{
    if (delete_signal != 0)
        return err_set(err, "delete interrupted by signal %d (%s): stopped before the next removal",
                       (int)delete_signal, strsignal(delete_signal));
    return r->lock == NULL || repo_lock_keep(r->lock, err);
}

/* With several repositories, every line of the report starts with the one it is about (as list's).
 */
static void delete_where(const delete_run *r)
{
    if (r->where != NULL)
        printf("%s  ", r->where);
}

/*
 * One line per decision on standard output: "removed backup ID: why", or
 * with --dry-run "would remove backup ID: why". verb is the infinitive
 * ("remove"), done its past ("removed").
 */
static void delete_say(const delete_run *r, const char *verb, const char *done, const char *what,
                       const char *id, const char *why)
{
    char action[64];

    snprintf(action, sizeof(action), "%s%s", r->s->dry_run ? "would " : "",
             r->s->dry_run ? verb : done);
    if (r->actions != NULL) {
        json_array_append_new(r->actions,
                              json_pack("{s:s, s:s, s:s, s:s, s:s?}", "action", action, "what",
                                        what, "id", id, "reason", why, "repository", r->where));
        return;
    }
    delete_where(r);
    printf("%s %s %s: %s\n", action, what, id, why);
    fflush(stdout);
}

/* Any other line of the report: printed, or with --json kept in "notes". */
static void delete_note(const delete_run *r, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static void delete_note(const delete_run *r, const char *fmt, ...)
{
    char line[PGD_ERROR_MAX];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(line, sizeof(line), fmt, ap);
    va_end(ap);
    if (r->notes != NULL) {
        json_array_append_new(r->notes, json_string(line));
        return;
    }
    delete_where(r);
    printf("%s\n", line);
    fflush(stdout);
}

static void delete_running(const repo_contents *c, retention_running **out, size_t *n)
{
    *n = 0;
    *out = xcalloc(c->ndirs + 1, sizeof(**out));
    for (size_t i = 0; i < c->ndirs; i++)
        if (!c->dirs[i].sentinel && c->dirs[i].objects > 0 &&
            c->dirs[i].state != RETENTION_CLAIM_DEAD) {
            retention_running *run = &(*out)[(*n)++];
            memcpy(run->id, c->dirs[i].id, sizeof(run->id));
            memcpy(run->parent, c->dirs[i].parent, sizeof(run->parent));
        }
}

/* A backup with a sentinel that the first scan did not see (it finished since). */
static bool delete_new_sentinel(const delete_run *r, const repo_contents *now)
{
    for (size_t d = 0; d < now->ndirs; d++) {
        bool known = !now->dirs[d].sentinel;
        for (size_t i = 0; !known && i < r->c.n; i++)
            known = strcmp(r->c.backups[i].id, now->dirs[d].id) == 0;
        if (!known)
            return true;
    }
    return false;
}

/*
 * Just before removing backup i: the claims read again and the plan made
 * again with them (and with every sentinel read again when a backup finished
 * since the first scan). A delta that claimed its id after this run first read
 * the repository names its parent in its claim, or in its sentinel if it has
 * finished since: that parent and its chain stay (--backup of it fails, as it
 * would have from the start). Only a claim written between this read and the
 * removal right after it still races.
 */
static bool delete_still_removable(delete_run *r, size_t i, bool *removable, char *why,
                                   size_t whylen, pgd_error *err)
{
    repo_contents now;
    const repo_contents *b = &r->c;
    retention_running *running = NULL;
    retention_plan plan;
    size_t nrunning;
    bool ok;

    memset(&now, 0, sizeof(now));
    *removable = true; /* gone already: nothing left to keep */
    ok = repo_contents_scan_dirs(r->repo, r->s->garbage_age, &now, err);
    if (ok)
        delete_running(&now, &running, &nrunning);
    if (ok && delete_new_sentinel(r, &now)) {
        ok = repo_contents_scan_backups(r->repo, &now, err);
        b = &now;
    }
    ok = ok && retention_plan_make(b->backups, b->n, running, nrunning, &r->s->policy, &plan, err);
    for (size_t j = 0; ok && j < b->n; j++)
        if (strcmp(b->backups[j].id, r->c.backups[i].id) == 0) {
            *removable = plan.decisions[j].remove;
            snprintf(why, whylen, "%s", plan.decisions[j].reason);
        }
    if (ok)
        retention_plan_free(&plan);
    free(running);
    repo_contents_free(&now);
    return ok;
}

/* Index of backup `id` in c, or SIZE_MAX. */
static size_t delete_find(const repo_contents *c, const char *id)
{
    for (size_t i = 0; i < c->n; i++)
        if (strcmp(c->backups[i].id, id) == 0)
            return i;
    return SIZE_MAX;
}

/* A backup kept after all: the WAL from its start on stays (segment numbers, as retention's). */
static void delete_keep_wal_from(retention_plan *plan, const char *start_wal)
{
    if (plan->wal_keep_from[0] != '\0' && strlen(start_wal) == WAL_FILE_NAME_LEN &&
        strcmp(start_wal + WAL_TLI_NAME_LEN, plan->wal_keep_from + WAL_TLI_NAME_LEN) < 0)
        snprintf(plan->wal_keep_from, sizeof(plan->wal_keep_from), "%s", start_wal);
}

/*
 * S3 Object Lock: is backup i still locked? Its sentinel, written last, is locked longest, but
 * annotate rewrites it, maybe without a lock; its manifest, written just before it and never
 * rewritten, is locked at least as long as every partition: the later of the two dates. A
 * locked backup is kept, and with it the chain it depends on (marked in lock_kept, ahead of
 * the parents in removal order) and the WAL from its start on (the plan's cut-off lowered).
 */
static bool delete_locked(delete_run *r, retention_plan *plan, size_t i, bool *locked,
                          pgd_error *err)
{
    const retention_backup *b = &r->c.backups[i];
    char path[LAYOUT_PATH_MAX], why[RETENTION_REASON_MAX], date[32];
    int64_t until, manifest_until;
    time_t t;
    struct tm tm;

    *locked = false;
    layout_sentinel_path(b->id, path, sizeof(path));
    if (!storage_retained_until(r->repo, path, &until, err))
        return false;
    layout_manifest_path(b->id, path, sizeof(path));
    if (!storage_retained_until(r->repo, path, &manifest_until, err))
        return false;
    if (manifest_until > until)
        until = manifest_until;
    if (until <= (int64_t)time(NULL))
        return true;
    *locked = true;
    r->locked++;
    t = (time_t)until;
    gmtime_r(&t, &tm);
    strftime(date, sizeof(date), "%Y-%m-%d %H:%M:%S UTC", &tm);
    snprintf(why, sizeof(why), "locked by S3 Object Lock until %s (retention would remove it)",
             date);
    delete_say(r, "keep", "kept", "backup", b->id, why);
    for (size_t p = delete_find(&r->c, b->parent); p != SIZE_MAX;
         p = delete_find(&r->c, r->c.backups[p].parent))
        r->lock_kept[p] = 1;
    delete_keep_wal_from(plan, b->start_wal);
    return true;
}

/*
 * plan is the retention plan; a backup kept by the late check clears its WAL
 * cut-off (the WAL it needs would have gone with it), as a running backup
 * does from the start.
 */
static bool delete_backups(delete_run *r, retention_plan *plan, pgd_error *err)
{
    for (size_t i = 0; i < r->c.n; i++)
        if (!plan->decisions[i].remove)
            delete_say(r, "keep", "kept", "backup", r->c.backups[i].id, plan->decisions[i].reason);
    r->lock_kept = xcalloc(r->c.n ? r->c.n : 1, 1);
    for (size_t k = 0; k < plan->nremove; k++) {
        size_t i = plan->remove_order[k];
        char why[RETENTION_REASON_MAX];
        bool removable = true, locked;

        if (r->lock_kept[i]) {
            delete_say(r, "keep", "kept", "backup", r->c.backups[i].id,
                       "a backup S3 Object Lock keeps depends on it");
            delete_keep_wal_from(plan, r->c.backups[i].start_wal);
            continue;
        }
        if (!delete_locked(r, plan, i, &locked, err))
            return false;
        if (locked)
            continue;
        if (!r->s->dry_run) {
            if (!delete_keep_lease(r, err) ||
                !delete_still_removable(r, i, &removable, why, sizeof(why), err) ||
                !delete_keep_lease(r, err)) /* the re-read may have taken a while */
                return false;
            if (!removable) {
                delete_say(r, "keep", "kept", "backup", r->c.backups[i].id, why);
                plan->wal_keep_from[0] = '\0';
                snprintf(plan->wal_note, sizeof(plan->wal_note),
                         "backup %s is kept after all (the repository changed while delete ran)",
                         r->c.backups[i].id);
                continue;
            }
            if (!backup_id_discard(r->repo, r->c.backups[i].id, err))
                return false;
            r->removed_backups++;
        }
        delete_say(r, "remove", "removed", "backup", r->c.backups[i].id, plan->decisions[i].reason);
    }
    return true;
}

/* One timeline's WAL before keep_from, in batches, the lease renewed between them. */
static bool delete_wal_timeline(delete_run *r, const char *timeline, const char *keep_from,
                                pgd_error *err)
{
    repo_contents_names l;
    bool ok = repo_contents_wal_before(r->repo, timeline, keep_from, &l, err);

    for (size_t i = 0; ok && i < l.n; i += DELETE_BATCH) {
        size_t count = l.n - i < DELETE_BATCH ? l.n - i : DELETE_BATCH;
        if (r->s->dry_run) {
            for (size_t j = i; j < i + count; j++)
                delete_note(r, "would remove WAL file %s", l.names[j]);
            continue;
        }
        ok = delete_keep_lease(r, err) &&
             storage_remove_many(r->repo, (const char *const *)&l.names[i], count, err);
        if (ok)
            r->removed_wal += count;
    }
    if (ok && !r->s->dry_run && l.n > 0)
        delete_note(r, "removed WAL of timeline %s: %zu files before segment %s", timeline, l.n,
                    keep_from);
    repo_contents_names_free(&l);
    return ok;
}

static bool delete_wal(delete_run *r, const retention_plan *plan, pgd_error *err)
{
    repo_contents_names timelines;
    bool ok;

    if (plan->wal_keep_from[0] == '\0') {
        delete_note(r, "%skeep all WAL: %s", r->s->dry_run ? "would " : "", plan->wal_note);
        return true;
    }
    delete_note(r,
                "%skeep WAL from segment %s on (the oldest kept backup's start), on every "
                "timeline, and every .history file",
                r->s->dry_run ? "would " : "", plan->wal_keep_from);
    ok = repo_contents_wal_timelines(r->repo, &timelines, err);
    for (size_t i = 0; ok && i < timelines.n; i++)
        ok = delete_wal_timeline(r, timelines.names[i], plan->wal_keep_from, err);
    repo_contents_names_free(&timelines);
    return ok;
}

static bool delete_retention(delete_run *r, pgd_error *err)
{
    retention_running *running;
    retention_plan plan;
    size_t nrunning;
    bool ok;

    delete_running(&r->c, &running, &nrunning);
    ok = retention_plan_make(r->c.backups, r->c.n, running, nrunning, &r->s->policy, &plan, err);
    free(running);
    if (!ok)
        return false;
    ok = delete_backups(r, &plan, err) && delete_wal(r, &plan, err);
    retention_plan_free(&plan);
    return ok;
}

/* Remove one dead (or named) backup directory without a sentinel. */
static bool delete_dir_remove(delete_run *r, const repo_dir *d, pgd_error *err)
{
    char dir[LAYOUT_PATH_MAX], sentinel[LAYOUT_PATH_MAX];
    bool exists = false;

    layout_backup_dir(d->id, dir, sizeof(dir));
    layout_sentinel_path(d->id, sentinel, sizeof(sentinel));
    if (r->s->dry_run)
        return true;
    if (!delete_keep_lease(r, err) || !storage_exists(r->repo, sentinel, &exists, err))
        return false;
    if (exists) { /* it finished after all: a complete backup is not garbage */
        log_warn("backup %s got its sentinel while delete looked at it: left alone", d->id);
        return true;
    }
    /* unfinished uploads and temporary files first: no live writer is left under it */
    if (!storage_remove_stale_temp(r->repo, dir, 0, err) || !backup_id_discard(r->repo, d->id, err))
        return false;
    r->removed_garbage++;
    return true;
}

/* --backup ID of a directory without a sentinel: the leftovers of one run, by hand. */
static bool delete_named_dir(delete_run *r, const repo_dir *d, pgd_error *err)
{
    if (d->state == RETENTION_CLAIM_RUNNING)
        return err_set(err, "backup %s has no sentinel and is taken as running (%s): not removed",
                       d->id, d->why);
    if (!delete_dir_remove(r, d, err))
        return false;
    delete_say(r, "remove", "removed", "incomplete backup", d->id, d->why);
    return true;
}

static bool delete_garbage(delete_run *r, pgd_error *err)
{
    int64_t wal_age =
        r->s->garbage_age > WAL_STALE_TEMP_AGE_S ? r->s->garbage_age : WAL_STALE_TEMP_AGE_S;

    for (size_t i = 0; i < r->c.ndirs; i++) {
        const repo_dir *d = &r->c.dirs[i];
        char dir[LAYOUT_PATH_MAX];

        layout_backup_dir(d->id, dir, sizeof(dir));
        if (d->sentinel) {
            /* a complete backup: only temporary objects nobody wrote to for --garbage-age */
            if (!r->s->dry_run &&
                (!delete_keep_lease(r, err) ||
                 !storage_remove_stale_temp(r->repo, dir, r->s->garbage_age, err)))
                return false;
            continue;
        }
        if (d->objects == 0)
            continue;
        if (d->state == RETENTION_CLAIM_RUNNING) {
            delete_say(r, "leave", "left", "running backup", d->id, d->why);
            continue;
        }
        if (d->state == RETENTION_CLAIM_UNKNOWN) {
            log_warn("left %s/ alone: %s (if no backup is writing it, remove it with pgdirect "
                     "delete --backup %s)",
                     dir, d->why, d->id);
            continue;
        }
        if (!delete_dir_remove(r, d, err))
            return false;
        delete_say(r, "remove", "removed", "incomplete backup", d->id, d->why);
    }
    if (r->s->dry_run) {
        delete_note(r,
                    "would remove temporary objects (unfinished uploads, *.tmp.* files) idle for "
                    "--garbage-age under complete backups and beside %s and %s (a killed key "
                    "rotate's or first encrypted write's), and for %llds under %s/",
                    CRYPT_KEYRING_NAME, CRYPT_MARKER_NAME, (long long)wal_age, WAL_DIR);
        return true;
    }
    /* a killed key rotate's keyring.pgdirect.tmp.*, a killed first encrypted write's marker
     * temporary: the root is not swept as a whole */
    return delete_keep_lease(r, err) &&
           storage_remove_stale_temp_of(r->repo, CRYPT_KEYRING_NAME, r->s->garbage_age, err) &&
           storage_remove_stale_temp_of(r->repo, CRYPT_MARKER_NAME, r->s->garbage_age, err) &&
           storage_remove_stale_temp(r->repo, WAL_DIR, wal_age, err);
}

/*
 * --timeline N: why timeline N may not go, into why ("" when it may): a backup on it or on a
 * timeline that descends from it, a timeline that descends from it, a backup running.
 */
static bool delete_timeline_needed(delete_run *r, const repo_contents_names *timelines, char *why,
                                   size_t whylen, pgd_error *err)
{
    uint32_t tli = r->s->timeline;
    bool descends;

    why[0] = '\0';
    for (size_t i = 0; i < r->c.ndirs; i++)
        if (!r->c.dirs[i].sentinel && r->c.dirs[i].objects > 0 &&
            r->c.dirs[i].state != RETENTION_CLAIM_DEAD) {
            snprintf(why, whylen, "backup %s is running (%s): run delete again once it is done",
                     r->c.dirs[i].id, r->c.dirs[i].why);
            return true;
        }
    for (size_t i = 0; i < r->c.n; i++) {
        const backup_info *bi = &r->c.infos[i];
        if (bi->damaged)
            continue;
        if (!timeline_descends(r->repo, bi->timeline, tli, &descends, err))
            return false;
        if (bi->timeline == tli || descends) {
            if (descends)
                snprintf(why, whylen,
                         "backup %s is on timeline %u, which descends from it: timeline %u is "
                         "part of that backup's history, not a stray one",
                         bi->id, bi->timeline, tli);
            else
                snprintf(why, whylen, "backup %s is on it", bi->id);
            return true;
        }
    }
    for (size_t i = 0; i < timelines->n; i++) {
        uint32_t t = 0;
        if (!wal_name_timeline_hex(timelines->names[i], &t) || t <= tli)
            continue;
        if (!timeline_descends(r->repo, t, tli, &descends, err))
            return false;
        if (descends) {
            snprintf(why, whylen,
                     "timeline %u descends from it and would lose its past: remove timeline %u "
                     "first",
                     t, t);
            return true;
        }
    }
    return true;
}

/* --timeline N: its history file and every WAL file of it, when nothing needs them. */
static bool delete_timeline(delete_run *r, pgd_error *err)
{
    repo_contents_names timelines, files;
    char dir[WAL_TLI_NAME_LEN + 1], why[PGD_ERROR_MAX];
    bool ok;

    wal_name_timeline_text(r->s->timeline, dir);
    if (!repo_contents_wal_all(r->repo, dir, &files, err))
        return false;
    if (files.n == 0) {
        repo_contents_names_free(&files);
        return err_set(err, "repository \"%s\" holds nothing of timeline %u (%s/%s/ is empty)",
                       r->repo->uri, r->s->timeline, WAL_DIR, dir);
    }
    ok = repo_contents_wal_timelines(r->repo, &timelines, err);
    if (ok) {
        ok = delete_timeline_needed(r, &timelines, why, sizeof(why), err);
        repo_contents_names_free(&timelines);
    }
    if (ok && why[0] != '\0')
        ok = err_set(err, "timeline %u not removed: %s", r->s->timeline, why);
    for (size_t i = 0; ok && i < files.n && r->s->dry_run; i++)
        delete_note(r, "would remove %s", files.names[i]);
    for (size_t i = 0; ok && !r->s->dry_run && i < files.n; i += DELETE_BATCH) {
        size_t count = files.n - i < DELETE_BATCH ? files.n - i : DELETE_BATCH;
        ok = delete_keep_lease(r, err) &&
             storage_remove_many(r->repo, (const char *const *)&files.names[i], count, err);
        if (ok)
            r->removed_wal += count;
    }
    if (ok)
        delete_note(
            r,
            "%s timeline %u: %zu files (its history file and WAL) under %s/%s/; no backup is on "
            "it or descends from it",
            r->s->dry_run ? "would remove" : "removed", r->s->timeline, files.n, WAL_DIR, dir);
    repo_contents_names_free(&files);
    return ok;
}

static bool delete_execute(delete_run *r, pgd_error *err)
{
    const char *named = r->s->policy.backup_id;

    if (!r->s->dry_run &&
        (r->lock = repo_lock_acquire(r->repo, DELETE_LOCK_NAME, REPO_LOCK_LEASE_S, err)) == NULL)
        return false;
    if (!repo_contents_scan_backups(r->repo, &r->c, err) ||
        !repo_contents_scan_dirs(r->repo, r->s->garbage_age, &r->c, err))
        return false;
    if (r->s->timeline != 0)
        return delete_timeline(r, err);
    if (named != NULL) {
        for (size_t i = 0; i < r->c.ndirs; i++)
            if (strcmp(r->c.dirs[i].id, named) == 0 && !r->c.dirs[i].sentinel)
                return delete_named_dir(r, &r->c.dirs[i], err) &&
                       (!r->s->garbage || delete_garbage(r, err));
    }
    if (r->s->retention && !delete_retention(r, err))
        return false;
    return !r->s->garbage || delete_garbage(r, err);
}

/* What a run over several repositories adds up. */
typedef struct delete_totals {
    size_t removed_backups, removed_wal, removed_garbage, locked;
} delete_totals;

/* An error of one of several repositories names it, once. */
static void delete_name_repository(const char *where, pgd_error *err)
{
    if (where != NULL && err->set && strstr(err->msg, where) == NULL)
        err_prefix(err, "repository \"%s\"", where);
}

/* The end of one repository's run: its lease given back, its counts said; its exit status. */
static int delete_finish(delete_run *r, bool failed, pgd_error *err)
{
    const char *in = r->where != NULL ? " in repository \"" : "", *q = r->where != NULL ? "\"" : "";
    const char *where = r->where != NULL ? r->where : "";
    pgd_error release_err = {0};

    if (failed) {
        if (r->lock != NULL && !repo_lock_release(r->lock, &release_err))
            log_warn("%s", release_err.msg);
        r->lock = NULL;
        delete_name_repository(r->where, err);
        return command_fail(CMD_DELETE, err);
    }
    if (r->lock != NULL && !repo_lock_release(r->lock, err)) {
        delete_name_repository(r->where, err);
        return command_fail(CMD_DELETE, err);
    }
    if (fflush(stdout) != 0 || ferror(stdout)) {
        err_errno(err, errno, "could not write to standard output");
        return command_fail(CMD_DELETE, err);
    }
    if (!r->s->dry_run)
        log_info("delete done%s%s%s: %zu backups, %zu WAL files and %zu incomplete backups removed",
                 in, where, q, r->removed_backups, r->removed_wal, r->removed_garbage);
    if (r->locked > 0 && r->s->strict) {
        err_set(err,
                "%zu backups that retention would remove are locked by S3 Object Lock and "
                "were kept (--strict); the rest was removed",
                r->locked);
        delete_name_repository(r->where, err);
        return command_fail(CMD_DELETE, err);
    }
    if (r->locked > 0)
        log_warn("%zu backups that retention would remove%s%s%s are locked by S3 Object Lock and "
                 "were kept, with what they need; a later delete removes them once their "
                 "lock ends",
                 r->locked, in, where, q);
    return EXIT_OK;
}

/*
 * One repository (opts: as it sees them, its own --retain-* in place): its lease, its plan,
 * its report, each line naming it when there are several. With --json, what was done is
 * returned in *result (with several, one object of "repositories"), else printed.
 */
static int delete_repository(const pgd_options *opts, const delete_settings *s, bool several,
                             json_t **result, delete_totals *tot)
{
    pgd_error err = {0};
    delete_run r;
    json_t *o;
    int rc;

    memset(&r, 0, sizeof(r));
    r.s = s;
    if (s->json) {
        r.actions = json_array();
        r.notes = json_array();
    }
    r.repo = command_open_repo(opts, &err);
    if (several)
        r.where = r.repo != NULL ? r.repo->uri : opt_str(opts, OPT_REPO);
    rc = delete_finish(&r, r.repo == NULL || !delete_execute(&r, &err), &err);
    tot->removed_backups += r.removed_backups;
    tot->removed_wal += r.removed_wal;
    tot->removed_garbage += r.removed_garbage;
    tot->locked += r.locked;
    if (s->json) {
        o = json_pack("{s:b, s:o, s:o, s:I, s:I, s:I, s:I}", "dry_run", s->dry_run, "actions",
                      r.actions, "notes", r.notes, "backups_removed", (json_int_t)r.removed_backups,
                      "wal_files_removed", (json_int_t)r.removed_wal, "incomplete_removed",
                      (json_int_t)r.removed_garbage, "locked_kept", (json_int_t)r.locked);
        if (several && o != NULL) {
            json_object_del(o, "dry_run");
            json_object_set_new(o, "repository", json_string(r.where));
            *result = command_json_outcome(o, rc, &err);
        } else {
            rc = command_print_json(o, rc, &err);
        }
    }
    repo_contents_free(&r.c);
    free(r.lock_kept);
    storage_free(r.repo);
    return rc;
}

/*
 * Every repository's settings, before anything is touched: with several, each may have its
 * own --retain-full and --retain-since (--repo URI?retain-full=N), the command's otherwise.
 */
static bool delete_read_all(const pgd_options *opts, pgd_options **ropts, delete_settings *s,
                            size_t n, pgd_error *err)
{
    for (size_t i = 0; i < n; i++) {
        if ((ropts[i] = command_repo_options(opts, i, err)) == NULL)
            return false;
        if (!delete_read_settings(ropts[i], &s[i], err)) {
            if (n > 1)
                err_prefix(err, "repository \"%s\"", opt_str(ropts[i], OPT_REPO));
            return false;
        }
    }
    return true;
}

/*
 * Several repositories: each on its own, in order; one that fails is named and the others are
 * still done, and the run exits non-zero. --json: one object, "repositories" holding each one's.
 */
static int delete_all(pgd_options **ropts, const delete_settings *s, size_t n)
{
    json_t *results = s[0].json ? json_array() : NULL, *one = NULL;
    delete_totals tot = {0};
    char failed[PGD_ERROR_MAX] = "";
    size_t nfailed = 0, ndone = 0;
    pgd_error err = {0};
    int rc = EXIT_OK;

    for (size_t i = 0; i < n && delete_signal == 0; i++, ndone++) {
        int one_rc = delete_repository(ropts[i], &s[i], true, &one, &tot);
        if (one != NULL)
            json_array_append_new(results, one);
        one = NULL;
        if (one_rc == EXIT_OK)
            continue;
        snprintf(failed + strlen(failed), sizeof(failed) - strlen(failed), "%s\"%s\"",
                 nfailed++ > 0 ? ", " : "", opt_str(ropts[i], OPT_REPO));
        if (one_rc > rc)
            rc = one_rc;
    }
    if (nfailed > 0) {
        err_set(&err, "delete failed in %zu of %zu repositories: %s%s", nfailed, n, failed,
                ndone < n     ? " (stopped by a signal: those after it were not done)"
                : nfailed < n ? " (the others were done)"
                              : "");
        log_error("%s", err.msg);
    }
    if (results != NULL)
        rc = command_print_json(
            json_pack("{s:b, s:o, s:I, s:I, s:I, s:I}", "dry_run", s[0].dry_run, "repositories",
                      results, "backups_removed", (json_int_t)tot.removed_backups,
                      "wal_files_removed", (json_int_t)tot.removed_wal, "incomplete_removed",
                      (json_int_t)tot.removed_garbage, "locked_kept", (json_int_t)tot.locked),
            rc, &err);
    return rc;
}

int cmd_delete(int argc, char **argv)
{
    pgd_options opts, **ropts;
    pgd_error err = {0};
    delete_settings *s;
    delete_totals tot = {0};
    size_t n;
    int rc;

    if (!command_start(&opts, &delete_help, 0, argc, argv, &rc))
        return rc;
    n = command_repo_count(&opts);
    ropts = xcalloc(n, sizeof(*ropts));
    s = xcalloc(n, sizeof(*s));
    if (!delete_read_all(&opts, ropts, s, n, &err)) {
        err_mark(&err, PGD_ERR_USAGE);
        rc = command_fail(CMD_DELETE, &err);
    } else {
        delete_catch_signals();
        rc =
            n > 1 ? delete_all(ropts, s, n) : delete_repository(ropts[0], &s[0], false, NULL, &tot);
    }
    for (size_t i = 0; i < n; i++)
        command_repo_options_free(ropts[i]);
    free(ropts);
    free(s);
    options_free(&opts);
    if (delete_signal != 0)
        raise(delete_signal); /* the handler was reset: die of it, as the caller expects */
    return rc;
}
