/*
 * timeline.c - the timeline recovery follows, checked against the backup
 * (see timeline.h) before anything is written. The history files read are
 * those PostgreSQL's recovery reads: the probe for the newest timeline and
 * for the next one at its end (findNewestTimeLine()), those of the
 * timelines from the backup's up to the target (restoreTimeLineHistoryFiles())
 * and the target's own; the test of the target's history is PostgreSQL's
 * "is not a child of this server's history" check, with the backup's end.
 */
#include "restore/timeline.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pg/lsn.h"
#include "pg/wal_history.h"
#include "pg/wal_name.h"
#include "wal/wal_archive.h"
#include "util/log.h"
#include "util/xmalloc.h"

#define TIMELINE_PG_LATEST_DEFAULT 120000 /* recovery_target_timeline defaults to latest */

bool timeline_parse(const char *value, timeline_choice *c, char *why, size_t whylen)
{
    memset(c, 0, sizeof(*c));
    if (strcmp(value, "latest") == 0) {
        c->goal = TIMELINE_LATEST;
        return true;
    }
    if (strcmp(value, "current") == 0) {
        c->goal = TIMELINE_CURRENT;
        return true;
    }
    if (!wal_name_timeline_parse(value, &c->number)) {
        snprintf(why, whylen, "expected latest, current or a timeline number from 1 to %u",
                 (unsigned)UINT32_MAX);
        return false;
    }
    c->goal = TIMELINE_NUMBER;
    return true;
}

/*
 * The history file of timeline tli, read and checked; *found false when it
 * is not archived. On failure p->failure says whether it is damaged.
 */
static bool timeline_history(storage *repo, uint32_t tli, wal_history_entry **entries, size_t *n,
                             bool *found, timeline_path *p, pgd_error *err)
{
    char name[WAL_HISTORY_NAME_LEN + 1], *text;
    size_t len;

    *entries = NULL;
    *n = 0;
    wal_name_history(tli, name);
    if (!wal_archive_read_text(repo, name, &text, &len, found, err)) {
        char cause[PGD_ERROR_MAX];

        p->failure = err_is(err, PGD_ERR_DAMAGED) ? TIMELINE_DAMAGED : TIMELINE_UNREADABLE;
        if (!err_is(err, PGD_ERR_DAMAGED)) {
            err_prefix(err, "the history of timeline %u, which recovery would read", tli);
            return false;
        }
        snprintf(cause, sizeof(cause), "%s", err->msg);
        err_clear(err);
        err_set(err,
                "the history of timeline %u, which recovery would read: %s (PostgreSQL "
                "reads it whatever --target-timeline says: the restored server would not "
                "start until it is repaired in the repository)",
                tli, cause);
        err_mark(err, PGD_ERR_DAMAGED);
        return false;
    }
    if (!*found)
        return true;
    wal_history_parse(text, len, entries, n);
    free(text);
    return true;
}

/*
 * PostgreSQL's findNewestTimeLine(): history files of tli + 1, + 2, ...
 * until one is missing, each read and checked; *newest gets the last found
 * (tli when none), *h and *n its history (NULL when none was found).
 * Recovery makes this probe to find the newest timeline when it follows
 * the latest, and at its end, whatever it followed, to choose the next.
 */
static bool timeline_newest(storage *repo, uint32_t tli, uint32_t *newest, wal_history_entry **h,
                            size_t *n, timeline_path *p, pgd_error *err)
{
    *newest = tli;
    *h = NULL;
    *n = 0;
    for (uint32_t probe = tli + 1; probe > tli; probe++) {
        wal_history_entry *entries;
        size_t count;
        bool found;

        if (!timeline_history(repo, probe, &entries, &count, &found, p, err)) {
            free(*h);
            *h = NULL;
            return false;
        }
        if (!found)
            break;
        free(*h);
        *h = entries;
        *n = count;
        *newest = probe;
    }
    return true;
}

/* The legs from the backup's timeline (h[own]) to the target, whose history h is. */
static void timeline_legs(timeline_path *p, const wal_history_entry *h, size_t n, size_t own)
{
    p->legs = xcalloc(n - own + 1, sizeof(*p->legs));
    p->legs[0] = (timeline_leg){.tli = h[own].tli, .begin = 0};
    p->nlegs = 1;
    for (size_t j = own; j < n; j++)
        p->legs[p->nlegs++] =
            (timeline_leg){.tli = j + 1 < n ? h[j + 1].tli : p->target, .begin = h[j].end};
}

void timeline_log_path(const timeline_path *p, const backup_info *bi, const timeline_choice *c)
{
    char begin_s[LSN_TEXT_MAX], stop_s[LSN_TEXT_MAX];

    if (p->nlegs < 2)
        return;
    lsn_format(p->legs[1].begin, begin_s);
    log_info("recovery will follow timeline %u%s, which leaves the backup's timeline %u at %s; "
             "the backup ends at %s",
             p->target,
             c->goal == TIMELINE_NUMBER ? "" : " (the newest PostgreSQL finds in the repository)",
             bi->timeline, begin_s, lsn_format(bi->stop_lsn, stop_s));
}

void timeline_path_free(timeline_path *p)
{
    free(p->legs);
    p->legs = NULL;
    p->nlegs = 0;
}

static bool timeline_refuse(timeline_path *p, pgd_error *err, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static bool timeline_refuse(timeline_path *p, pgd_error *err, const char *fmt, ...)
{
    char msg[PGD_ERROR_MAX];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    p->failure = TIMELINE_REFUSED;
    return err_set(err, "%s", msg);
}

bool timeline_resolve(storage *repo, const backup_info *bi, const timeline_choice *c,
                      timeline_path *p, pgd_error *err)
{
    timeline_goal goal = c->goal;
    wal_history_entry *h = NULL;
    size_t n = 0, own = SIZE_MAX;
    uint64_t stop;
    char stop_s[LSN_TEXT_MAX], end_s[LSN_TEXT_MAX];
    const char *which = "";
    bool ok = true;

    memset(p, 0, sizeof(*p));
    p->target = bi->timeline;
    p->failure = TIMELINE_UNREADABLE;
    if (goal == TIMELINE_DEFAULT)
        goal =
            bi->pg_version_num >= TIMELINE_PG_LATEST_DEFAULT ? TIMELINE_LATEST : TIMELINE_CURRENT;
    if (goal == TIMELINE_NUMBER && c->number < bi->timeline)
        return timeline_refuse(p, err,
                               "--target-timeline %u is older than the backup's timeline %u: the "
                               "restored server would not start",
                               c->number, bi->timeline);
    if (goal == TIMELINE_LATEST && !timeline_newest(repo, bi->timeline, &p->target, &h, &n, p, err))
        return false;
    if (goal == TIMELINE_NUMBER)
        p->target = c->number;
    /* the history of the timeline recovery follows (timeline 1 has none) */
    if (h == NULL && p->target > 1) {
        bool found;
        if (!timeline_history(repo, p->target, &h, &n, &found, p, err))
            return false;
        if (!found && p->target != bi->timeline)
            return timeline_refuse(p, err,
                                   "timeline %u has no history file in repository \"%s\": "
                                   "PostgreSQL would refuse to start (\"recovery target timeline "
                                   "%u does not exist\")",
                                   c->number, repo->uri, c->number);
    }
    /*
     * Before replay, recovery fetches the history of every timeline from the
     * backup's up to the one it follows (restoreTimeLineHistoryFiles();
     * timeline 1 has none): the latest's probe read those above the backup's.
     */
    for (uint32_t tli = bi->timeline > 1 ? bi->timeline : 2; tli < p->target; tli++) {
        wal_history_entry *between;
        size_t nbetween;
        bool found;
        if (goal == TIMELINE_LATEST && tli > bi->timeline)
            break;
        if (!timeline_history(repo, tli, &between, &nbetween, &found, p, err)) {
            free(h);
            return false;
        }
        free(between);
    }
    /* the probe at the end of recovery, for the next timeline (made above for the latest) */
    if (goal != TIMELINE_LATEST) {
        wal_history_entry *later;
        size_t nlater;
        uint32_t newest;
        if (!timeline_newest(repo, p->target, &newest, &later, &nlater, p, err)) {
            free(h);
            return false;
        }
        free(later);
    }
    if (p->target == bi->timeline) {
        free(h);
        p->legs = xcalloc(1, sizeof(*p->legs));
        p->legs[0] = (timeline_leg){.tli = bi->timeline, .begin = 0};
        p->nlegs = 1;
        return true;
    }
    if (goal == TIMELINE_LATEST)
        which = ", the newest PostgreSQL finds in the repository";
    stop = bi->stop_lsn;
    lsn_format(stop, stop_s);
    for (size_t i = 0; i < n; i++)
        if (h[i].tli == bi->timeline)
            own = i;
    if (own == SIZE_MAX) {
        ok = timeline_refuse(p, err,
                             "recovery would follow timeline %u%s, which does not descend from the "
                             "backup's timeline %u: the restored server would not start; "
                             "--target-timeline current recovers along the backup's own timeline",
                             p->target, which, bi->timeline);
    } else if (h[own].end < stop) {
        lsn_format(h[own].end, end_s);
        ok = timeline_refuse(
            p, err,
            "recovery would follow timeline %u%s, which leaves the backup's timeline %u at %s, "
            "before the backup's end at %s (was a standby promoted, or did a restored server "
            "archive into this repository?): the restored server would not start; "
            "--target-timeline current recovers along the backup's own timeline",
            p->target, which, bi->timeline, end_s, stop_s);
    } else {
        timeline_legs(p, h, n, own);
        ok = true;
    }
    free(h);
    return ok;
}

bool timeline_find_stray(storage *repo, uint32_t server_tli, const backup_info *newest,
                         char *warning, size_t len, pgd_error *err)
{
    timeline_choice latest = {.goal = TIMELINE_DEFAULT};
    timeline_path p = {0};
    wal_history_entry *h;
    size_t n;
    uint32_t found;
    char history[WAL_HISTORY_NAME_LEN + 1];

    warning[0] = '\0';
    if (!timeline_newest(repo, server_tli, &found, &h, &n, &p, err)) {
        if (p.failure == TIMELINE_UNREADABLE)
            return false;
        snprintf(warning, len, "%s", err->msg); /* a damaged history file: a restore refuses */
        err_clear(err);
        return true;
    }
    free(h);
    if (found > server_tli) {
        wal_name_history(found, history);
        snprintf(warning, len,
                 "repository \"%s\" holds timeline %u (%s), newer than the server's "
                 "timeline %u: a restore that follows the latest timeline, PostgreSQL's default, "
                 "would recover along it and not along this server's WAL (a restore of a later "
                 "backup would refuse); if a test restore or another server archived it, "
                 "\"pgdirect delete --timeline %u\" removes it",
                 repo->uri, found, history, server_tli, found);
        return true;
    }
    if (newest == NULL)
        return true;
    if (timeline_resolve(repo, newest, &latest, &p, err)) {
        timeline_path_free(&p);
        return true;
    }
    if (p.failure == TIMELINE_UNREADABLE)
        return false;
    snprintf(warning, len, "a restore of the newest backup %s the default way would refuse: %s",
             newest->id, err->msg);
    err_clear(err);
    return true;
}

bool timeline_descends(storage *repo, uint32_t tli, uint32_t ancestor, bool *descends,
                       pgd_error *err)
{
    timeline_path p = {0};
    wal_history_entry *h;
    size_t n;
    bool found;

    *descends = false;
    if (tli <= ancestor)
        return true;
    if (!timeline_history(repo, tli, &h, &n, &found, &p, err))
        return false;
    for (size_t i = 0; found && i < n; i++)
        *descends = *descends || h[i].tli == ancestor;
    free(h);
    return true;
}
