/*
 * retention.c - the retention decision: which backups and WAL files go.
 * Pure functions of the lists they are given; see retention.h for the
 * rules.
 *
 * About 520 lines on purpose: the rules are applied in one pass over one
 * working state (retention_work), in the order retention.h gives them, so
 * that the order can be read top to bottom; the WAL cut-off and the claim
 * classification at the end are the few lines that make the same decision
 * for WAL and for runs that never finished.
 */
#define _GNU_SOURCE
#include "repo/retention.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "util/xmalloc.h"

#define RETENTION_NONE         ((size_t)-1)
#define RETENTION_TIME_TEXT    32
#define RETENTION_SEGNO_OFFSET WAL_TLI_NAME_LEN /* the timeline's hex digits come first */
#define RETENTION_SEGNO_LEN    (WAL_FILE_NAME_LEN - WAL_TLI_NAME_LEN) /* then the segment number */

/* What retention_plan_make works on, built once. */
typedef struct retention_work {
    const retention_backup *b;
    size_t n;
    size_t *order;                        /* input indexes by start time, start LSN, id */
    size_t *parent;                       /* input index of the parent, RETENTION_NONE */
    char (*broken)[RETENTION_REASON_MAX]; /* "" when the chain is whole */
    bool *keep;
    int64_t *start; /* start time; a damaged backup's from its id */
    size_t named;   /* --backup ID's index, RETENTION_NONE */
    retention_decision *d;
} retention_work;

bool retention_id_time(const char *id, int64_t *t)
{
    struct tm tm;
    const char *end;

    if (!layout_is_backup_id(id))
        return false;
    memset(&tm, 0, sizeof(tm));
    end = strptime(id, "%Y%m%dT%H%M%S", &tm);
    if (end == NULL || end != id + BACKUP_ID_LEN - 1)
        return false;
    *t = (int64_t)timegm(&tm);
    return true;
}

static void retention_format_time(int64_t t, char out[RETENTION_TIME_TEXT])
{
    time_t tt = (time_t)t;
    struct tm tm;

    gmtime_r(&tt, &tm);
    strftime(out, RETENTION_TIME_TEXT, "%Y-%m-%d %H:%M:%S UTC", &tm);
}

/* Start time, then start LSN (a damaged backup's is unknown: 0), then id. */
static int retention_order_cmp(const void *pa, const void *pb, void *arg)
{
    const retention_work *w = arg;
    size_t a = *(const size_t *)pa, b = *(const size_t *)pb;
    const retention_backup *x = &w->b[a], *y = &w->b[b];
    uint64_t lx = x->damaged ? 0 : x->start_lsn, ly = y->damaged ? 0 : y->start_lsn;

    if (w->start[a] != w->start[b])
        return w->start[a] < w->start[b] ? -1 : 1;
    if (lx != ly)
        return lx < ly ? -1 : 1;
    return strcmp(x->id, y->id);
}

static size_t retention_find(const retention_work *w, const char *id)
{
    for (size_t i = 0; i < w->n; i++)
        if (strcmp(w->b[i].id, id) == 0)
            return i;
    return RETENTION_NONE;
}

/* A chain is broken when a parent is missing or damaged, or parents loop. */
static void retention_check_chain(retention_work *w, size_t i)
{
    size_t at = i, steps = 0;

    while (w->b[at].parent[0] != '\0') {
        size_t p = w->parent[at];
        if (p == RETENTION_NONE) {
            snprintf(w->broken[i], RETENTION_REASON_MAX,
                     "its chain is broken: parent %s is missing", w->b[at].parent);
            return;
        }
        if (w->b[p].damaged) {
            snprintf(w->broken[i], RETENTION_REASON_MAX,
                     "its chain is broken: parent %s is damaged", w->b[p].id);
            return;
        }
        if (++steps > w->n) {
            snprintf(w->broken[i], RETENTION_REASON_MAX, "its chain is broken: parents loop");
            return;
        }
        at = p;
    }
}

static bool retention_usable(const retention_work *w, size_t i)
{
    return !w->b[i].damaged && w->broken[i][0] == '\0';
}

/* Whether `ancestor` is on the parent chain of `i` (not i itself). */
static bool retention_depends_on(const retention_work *w, size_t i, size_t ancestor)
{
    size_t at = i;

    for (size_t steps = 0; steps <= w->n; steps++) {
        at = w->parent[at];
        if (at == RETENTION_NONE)
            return false;
        if (at == ancestor)
            return true;
    }
    return false;
}

static void retention_keep(retention_work *w, size_t i, const char *fmt, const char *arg)
{
    if (w->keep[i])
        return;
    w->keep[i] = true;
    snprintf(w->d[i].reason, RETENTION_REASON_MAX, fmt, arg);
}

/* Every kept backup keeps its parents, up its chain. */
static void retention_keep_parents(retention_work *w)
{
    for (size_t k = w->n; k-- > 0;) {
        size_t i = w->order[k];
        if (!w->keep[i])
            continue;
        for (size_t at = i, steps = 0; w->parent[at] != RETENTION_NONE && steps <= w->n; steps++) {
            retention_keep(w, w->parent[at], "parent of kept backup %s", w->b[i].id);
            at = w->parent[at];
        }
    }
}

static size_t retention_newest_usable(const retention_work *w)
{
    for (size_t k = w->n; k-- > 0;)
        if (retention_usable(w, w->order[k]))
            return w->order[k];
    return RETENTION_NONE;
}

static void retention_keep_full(retention_work *w, long count)
{
    char why[RETENTION_REASON_MAX];
    long found = 0;

    snprintf(why, sizeof(why), "one of the %ld newest full backups", count);
    for (size_t k = w->n; k-- > 0 && found < count;) {
        size_t i = w->order[k];
        if (!retention_usable(w, i) || w->b[i].parent[0] != '\0')
            continue;
        retention_keep(w, i, "%s", why);
        found++;
    }
    /* their dependents: usable backups whose chain reaches a kept full */
    for (size_t i = 0; i < w->n; i++) {
        size_t root = i;
        if (!retention_usable(w, i) || w->b[i].parent[0] == '\0')
            continue;
        while (w->parent[root] != RETENTION_NONE)
            root = w->parent[root];
        if (w->keep[root])
            retention_keep(w, i, "depends on %s, a kept full backup", w->b[root].id);
    }
}

static void retention_keep_since(retention_work *w, int64_t since)
{
    char when[RETENTION_TIME_TEXT], why[RETENTION_REASON_MAX];
    size_t anchor = RETENTION_NONE, anchor_rank = 0;

    retention_format_time(since, when);
    for (size_t k = w->n; k-- > 0;) {
        size_t i = w->order[k];
        if (retention_usable(w, i) && w->b[i].stop_time <= since) {
            anchor = i;
            anchor_rank = k;
            break;
        }
    }
    if (anchor == RETENTION_NONE) {
        for (size_t i = 0; i < w->n; i++)
            if (retention_usable(w, i))
                retention_keep(w, i, "no backup finished by %s: every one is needed", when);
        return;
    }
    retention_keep(w, anchor, "the newest backup that finished by %s", when);
    snprintf(why, sizeof(why), "started after %s, the newest backup that finished by %s",
             w->b[anchor].id, when);
    for (size_t k = anchor_rank + 1; k < w->n; k++)
        if (retention_usable(w, w->order[k]))
            retention_keep(w, w->order[k], "%s", why);
}

/*
 * --backup ID: everything stays but ID (and, when asked, what depends on
 * it). Refused when that would remove the newest usable backup, or leave a
 * dependent without its parent.
 */
static bool retention_keep_all_but(retention_work *w, const retention_policy *p, size_t newest,
                                   pgd_error *err)
{
    size_t target = retention_find(w, p->backup_id), ndeps = 0;
    char deps[RETENTION_REASON_MAX] = "";

    if (p->retain_full > 0 || p->retain_since_set)
        return err_set(err, "--backup cannot be combined with --retain-full or --retain-since");
    if (target == RETENTION_NONE)
        return err_set(err, "backup \"%s\" not found", p->backup_id);
    w->named = target;
    if (target == newest)
        return err_set(err,
                       "backup %s is the newest usable backup, which delete never removes (take "
                       "a newer backup first)",
                       p->backup_id);
    for (size_t i = 0; i < w->n; i++) {
        if (!retention_depends_on(w, i, target))
            continue;
        if (i == newest && p->with_dependents)
            return err_set(err,
                           "removing backup %s with its dependents would remove %s, the newest "
                           "usable backup",
                           p->backup_id, w->b[i].id);
        if (ndeps++ < 4)
            snprintf(deps + strlen(deps), sizeof(deps) - strlen(deps), "%s%s",
                     ndeps > 1 ? ", " : "", w->b[i].id);
    }
    if (ndeps > 0 && !p->with_dependents)
        return err_set(err,
                       "backup %s has %zu dependent backup%s (%s%s) that would lose their "
                       "parent: remove them too with --with-dependents",
                       p->backup_id, ndeps, ndeps == 1 ? "" : "s", deps, ndeps > 4 ? ", ..." : "");
    for (size_t i = 0; i < w->n; i++) {
        if (i == target)
            snprintf(w->d[i].reason, RETENTION_REASON_MAX, "named by --backup");
        else if (retention_depends_on(w, i, target))
            snprintf(w->d[i].reason, RETENTION_REASON_MAX, "depends on %s, named by --backup",
                     p->backup_id);
        else
            retention_keep(w, i, "%s", "not named by --backup");
    }
    return true;
}

/*
 * A running delta's parent is the one its claim names (kept whatever its
 * state: the run reads it); a claim that names none, the newest usable
 * backup that started before it. retention_keep_parents then keeps the
 * parent's chain.
 */
static void retention_keep_running_parents(retention_work *w, const retention_running *r, size_t nr)
{
    for (size_t j = 0; j < nr; j++) {
        int64_t t;
        size_t parent = RETENTION_NONE;
        if (r[j].parent[0] != '\0') {
            if ((parent = retention_find(w, r[j].parent)) != RETENTION_NONE)
                retention_keep(w, parent, "parent of running backup %s", r[j].id);
            continue;
        }
        if (r[j].id[BACKUP_ID_LEN - 1] != 'D' || !retention_id_time(r[j].id, &t))
            continue;
        for (size_t k = 0; k < w->n; k++)
            if (retention_usable(w, w->order[k]) && w->start[w->order[k]] <= t)
                parent = w->order[k];
        if (parent != RETENTION_NONE)
            retention_keep(w, parent, "possible parent of running delta backup %s", r[j].id);
    }
}

/* --backup ID must not end up kept by another rule (a running delta's parent). */
static bool retention_check_named(const retention_work *w, const retention_policy *p,
                                  pgd_error *err)
{
    size_t target = p->backup_id != NULL ? retention_find(w, p->backup_id) : RETENTION_NONE;

    if (target != RETENTION_NONE && w->keep[target])
        return err_set(err, "backup %s cannot be removed: it is the %s", p->backup_id,
                       w->d[target].reason);
    return true;
}

/* The oldest kept usable backup (in order), RETENTION_NONE when none. */
static size_t retention_oldest_kept(const retention_work *w)
{
    for (size_t k = 0; k < w->n; k++)
        if (w->keep[w->order[k]] && retention_usable(w, w->order[k]))
            return w->order[k];
    return RETENTION_NONE;
}

/* Damaged backups and broken chains are never counted as kept; see retention.h. */
static void retention_decide_unusable(retention_work *w, size_t oldest)
{
    for (size_t i = 0; i < w->n; i++) {
        const char *what = w->b[i].damaged ? "damaged (sentinel unreadable)" : w->broken[i];
        if (retention_usable(w, i) || w->keep[i] || i == w->named)
            continue;
        if (oldest != RETENTION_NONE && w->start[i] < w->start[oldest]) {
            snprintf(w->d[i].reason, RETENTION_REASON_MAX,
                     "%s, and started before %s, the oldest kept backup", what, w->b[oldest].id);
            continue;
        }
        w->keep[i] = true;
        snprintf(w->d[i].reason, RETENTION_REASON_MAX,
                 "%s; not counted as kept, left for a person to look at (delete --backup %s)", what,
                 w->b[i].id);
    }
}

static void retention_reason_expired(retention_work *w, const retention_policy *p)
{
    char when[RETENTION_TIME_TEXT];

    retention_format_time(p->retain_since, when);
    for (size_t i = 0; i < w->n; i++) {
        if (w->keep[i] || w->d[i].reason[0] != '\0')
            continue;
        if (p->retain_full > 0 && p->retain_since_set)
            snprintf(w->d[i].reason, RETENTION_REASON_MAX,
                     "expired: not among the %ld newest full backups or their dependents, and "
                     "not needed after %s",
                     p->retain_full, when);
        else if (p->retain_full > 0)
            snprintf(w->d[i].reason, RETENTION_REASON_MAX,
                     "expired: not among the %ld newest full backups or their dependents",
                     p->retain_full);
        else
            snprintf(w->d[i].reason, RETENTION_REASON_MAX, "expired: not needed after %s", when);
    }
}

/* The kept readable backup whose start segment number is lowest. */
static void retention_wal_cutoff(const retention_work *w, size_t nrunning,
                                 const retention_running *running, retention_plan *plan)
{
    const char *low = NULL;

    if (nrunning > 0) {
        snprintf(plan->wal_note, sizeof(plan->wal_note),
                 "backup %s may still be running (no sentinel yet): no WAL goes until it "
                 "finishes or is removed",
                 running[0].id);
        return;
    }
    for (size_t i = 0; i < w->n; i++)
        if (w->keep[i] && !w->b[i].damaged &&
            (low == NULL || strncmp(w->b[i].start_wal + RETENTION_SEGNO_OFFSET,
                                    low + RETENTION_SEGNO_OFFSET, RETENTION_SEGNO_LEN) < 0))
            low = w->b[i].start_wal;
    if (low == NULL)
        snprintf(plan->wal_note, sizeof(plan->wal_note), "no readable backup is kept: no WAL goes");
    else
        snprintf(plan->wal_keep_from, sizeof(plan->wal_keep_from), "%s", low);
}

static void retention_work_free(retention_work *w)
{
    free(w->order);
    free(w->parent);
    free(w->broken);
    free(w->keep);
    free(w->start);
}

static void retention_work_init(retention_work *w, const retention_backup *b, size_t n,
                                retention_decision *d)
{
    memset(w, 0, sizeof(*w));
    w->b = b;
    w->n = n;
    w->d = d;
    w->named = RETENTION_NONE;
    w->order = xcalloc(n + 1, sizeof(*w->order));
    w->parent = xcalloc(n + 1, sizeof(*w->parent));
    w->broken = xcalloc(n + 1, sizeof(*w->broken));
    w->keep = xcalloc(n + 1, sizeof(*w->keep));
    w->start = xcalloc(n + 1, sizeof(*w->start));
    for (size_t i = 0; i < n; i++) {
        w->order[i] = i;
        w->start[i] = b[i].start_time;
        if (b[i].damaged && !retention_id_time(b[i].id, &w->start[i]))
            w->start[i] = 0;
    }
    qsort_r(w->order, n, sizeof(*w->order), retention_order_cmp, w);
    for (size_t i = 0; i < n; i++)
        w->parent[i] = b[i].damaged || b[i].parent[0] == '\0' ? RETENTION_NONE
                                                              : retention_find(w, b[i].parent);
    for (size_t i = 0; i < n; i++)
        if (!b[i].damaged)
            retention_check_chain(w, i);
}

bool retention_plan_make(const retention_backup *backups, size_t n,
                         const retention_running *running, size_t nrunning,
                         const retention_policy *policy, retention_plan *plan, pgd_error *err)
{
    retention_work w;
    size_t newest;
    bool ok = true;

    memset(plan, 0, sizeof(*plan));
    plan->decisions = xcalloc(n + 1, sizeof(*plan->decisions));
    plan->remove_order = xcalloc(n + 1, sizeof(*plan->remove_order));
    retention_work_init(&w, backups, n, plan->decisions);
    newest = retention_newest_usable(&w);
    if (policy->backup_id != NULL)
        ok = retention_keep_all_but(&w, policy, newest, err);
    if (ok && newest != RETENTION_NONE)
        retention_keep(&w, newest, "%s", "the newest usable backup, always kept");
    if (ok && policy->retain_full > 0)
        retention_keep_full(&w, policy->retain_full);
    if (ok && policy->retain_since_set)
        retention_keep_since(&w, policy->retain_since);
    if (ok) {
        retention_keep_running_parents(&w, running, nrunning);
        retention_keep_parents(&w);
        retention_decide_unusable(&w, retention_oldest_kept(&w));
        retention_keep_parents(&w);
        ok = retention_check_named(&w, policy, err);
    }
    if (ok) {
        retention_reason_expired(&w, policy);
        retention_wal_cutoff(&w, nrunning, running, plan);
        /* newest first: a dependent always goes before its parent */
        for (size_t k = n; k-- > 0;)
            if (!w.keep[w.order[k]]) {
                plan->decisions[w.order[k]].remove = true;
                plan->remove_order[plan->nremove++] = w.order[k];
            }
    }
    retention_work_free(&w);
    if (!ok)
        retention_plan_free(plan);
    return ok;
}

void retention_plan_free(retention_plan *plan)
{
    free(plan->decisions);
    free(plan->remove_order);
    memset(plan, 0, sizeof(*plan));
}

bool retention_wal_removable(const char *name, const char *keep_from)
{
    wal_file_kind kind = wal_name_kind(name);

    /* a segment, .partial or .backup: each starts with its segment's name */
    if (keep_from == NULL || strlen(keep_from) != WAL_FILE_NAME_LEN || kind == WAL_FILE_UNKNOWN ||
        kind == WAL_FILE_HISTORY)
        return false;
    return strncmp(name + RETENTION_SEGNO_OFFSET, keep_from + RETENTION_SEGNO_OFFSET,
                   RETENTION_SEGNO_LEN) < 0;
}

/* "1d02h", "3h05m", "42s": an age in a message. */
static void retention_format_age(int64_t s, char *out, size_t outlen)
{
    const int64_t minute = 60, hour = 60 * minute, day = 24 * hour;

    if (s >= day)
        snprintf(out, outlen, "%lldd%02lldh", (long long)(s / day), (long long)(s % day / hour));
    else if (s >= hour)
        snprintf(out, outlen, "%lldh%02lldm", (long long)(s / hour),
                 (long long)(s % hour / minute));
    else
        snprintf(out, outlen, "%llds", (long long)s);
}

retention_claim_state retention_claim_classify(const retention_claim *c, int64_t now,
                                               int64_t garbage_age, char *why, size_t whylen)
{
    char age[32], limit[32];

    if (!c->present) {
        snprintf(why, whylen, "no claim, so its age is unknown");
        return RETENTION_CLAIM_UNKNOWN;
    }
    if (!c->readable) {
        snprintf(why, whylen, "its claim does not say when the run started");
        return RETENTION_CLAIM_UNKNOWN;
    }
    retention_format_age(now > c->start_time ? now - c->start_time : 0, age, sizeof(age));
    retention_format_age(garbage_age, limit, sizeof(limit));
    if (c->process == PROCESS_GONE) {
        snprintf(why, whylen, "claimed %s ago by %s: no sentinel, so garbage", age, c->process_why);
        return RETENTION_CLAIM_DEAD;
    }
    if (c->process == PROCESS_ALIVE) {
        snprintf(why, whylen, "claimed %s ago by %s", age, c->process_why);
        return RETENTION_CLAIM_RUNNING;
    }
    if (now - c->start_time < garbage_age) {
        snprintf(why, whylen,
                 "claimed %s ago by %s, less than --garbage-age %s: taken as running (if that run "
                 "has ended, delete --backup %s --garbage-age 0 removes it)",
                 age, c->process_why, limit, c->id);
        return RETENTION_CLAIM_RUNNING;
    }
    snprintf(why, whylen, "claimed %s ago by %s, no sentinel, older than --garbage-age %s", age,
             c->process_why, limit);
    return RETENTION_CLAIM_DEAD;
}
