/*
 * timeline.c - the timeline recovery follows, checked against the backup
 * (see timeline.h): the probe for the newest timeline and the test of its
 * history are PostgreSQL's findNewestTimeLine() and the "is not a child of
 * this server's history" check, made before anything is written.
 */
#include "restore/timeline.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pg/session.h"
#include "pg/wal_history.h"
#include "repo/wal_archive.h"
#include "util/log.h"

#define TIMELINE_PG_LATEST_DEFAULT 120000 /* recovery_target_timeline defaults to latest */
#define HISTORY_NAME_LEN           17     /* 8 hex digits + ".history" */
#define LSN_TEXT                   20

bool timeline_parse(const char *value, timeline_choice *c, char *why, size_t whylen)
{
    unsigned long long n;
    char *end;

    memset(c, 0, sizeof(*c));
    if (strcmp(value, "latest") == 0) {
        c->goal = TIMELINE_LATEST;
        return true;
    }
    if (strcmp(value, "current") == 0) {
        c->goal = TIMELINE_CURRENT;
        return true;
    }
    errno = 0;
    n = value[0] >= '1' && value[0] <= '9' ? strtoull(value, &end, 10) : 0;
    if (n == 0 || *end != '\0' || errno != 0 || n > UINT32_MAX) {
        snprintf(why, whylen, "expected latest, current or a timeline number from 1 to %u",
                 (unsigned)UINT32_MAX);
        return false;
    }
    c->goal = TIMELINE_NUMBER;
    c->number = (uint32_t)n;
    return true;
}

static void timeline_lsn(uint64_t lsn, char out[LSN_TEXT])
{
    snprintf(out, LSN_TEXT, "%X/%X", (unsigned)(lsn >> 32), (unsigned)lsn);
}

/* The history file of timeline tli, read and checked; *found false when it is not archived. */
static bool timeline_history(storage *repo, uint32_t tli, wal_history_entry **entries, size_t *n,
                             bool *found, pgd_error *err)
{
    char name[HISTORY_NAME_LEN + 1], *text;
    size_t len;
    bool ok;

    *entries = NULL;
    *n = 0;
    snprintf(name, sizeof(name), "%08X.history", tli);
    if (!wal_archive_read_text(repo, name, &text, &len, found, err)) {
        err_prefix(err, "the history of timeline %u, which recovery would read", tli);
        return false;
    }
    if (!*found)
        return true;
    ok = wal_history_parse(text, len, entries, n, err);
    free(text);
    return ok;
}

/* PostgreSQL's findNewestTimeLine(): history files of tli + 1, + 2, ... until one is missing. */
static bool timeline_newest(storage *repo, uint32_t tli, uint32_t *newest, wal_history_entry **h,
                            size_t *n, pgd_error *err)
{
    *newest = tli;
    *h = NULL;
    *n = 0;
    for (uint32_t probe = tli + 1; probe > tli; probe++) {
        wal_history_entry *entries;
        size_t count;
        bool found;

        if (!timeline_history(repo, probe, &entries, &count, &found, err)) {
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

bool timeline_resolve(storage *repo, const backup_info *bi, const timeline_choice *c,
                      uint32_t *target, uint64_t *leaves, pgd_error *err)
{
    timeline_goal goal = c->goal;
    wal_history_entry *h = NULL;
    size_t n = 0;
    uint64_t stop;
    const wal_history_entry *own = NULL;
    char stop_s[LSN_TEXT], end_s[LSN_TEXT];
    const char *which = "";
    bool ok = true;

    *target = bi->timeline;
    *leaves = 0;
    if (goal == TIMELINE_DEFAULT)
        goal =
            bi->pg_version_num >= TIMELINE_PG_LATEST_DEFAULT ? TIMELINE_LATEST : TIMELINE_CURRENT;
    if (goal == TIMELINE_CURRENT || (goal == TIMELINE_NUMBER && c->number == bi->timeline))
        return true;
    if (!pg_parse_lsn(bi->stop_lsn, &stop))
        return err_set(err, "the backup's sentinel has no valid stop LSN (\"%s\")", bi->stop_lsn);
    timeline_lsn(stop, stop_s);
    if (goal == TIMELINE_LATEST) {
        if (!timeline_newest(repo, bi->timeline, target, &h, &n, err))
            return false;
        if (*target == bi->timeline)
            return true;
        which = ", the newest in the repository";
    } else {
        bool found;
        *target = c->number;
        if (c->number < bi->timeline)
            return err_set(err,
                           "--target-timeline %u is older than the backup's timeline %u: the "
                           "restored server would not start",
                           c->number, bi->timeline);
        if (!timeline_history(repo, c->number, &h, &n, &found, err))
            return false;
        if (!found)
            return err_set(err,
                           "timeline %u has no history file in repository \"%s\": PostgreSQL "
                           "would refuse to start (\"recovery target timeline %u does not exist\")",
                           c->number, repo->uri, c->number);
    }
    for (size_t i = 0; i < n; i++)
        if (h[i].tli == bi->timeline)
            own = &h[i];
    if (own == NULL) {
        ok = err_set(err,
                     "recovery would follow timeline %u%s, which does not descend from the "
                     "backup's timeline %u: the restored server would not start; "
                     "--target-timeline current recovers along the backup's own timeline",
                     *target, which, bi->timeline);
    } else if (own->end < stop) {
        timeline_lsn(own->end, end_s);
        ok = err_set(err,
                     "recovery would follow timeline %u%s, which leaves the backup's timeline %u "
                     "at %s, before the backup's end at %s (was a standby promoted, or did a "
                     "restored server archive into this repository?): the restored server would "
                     "not start; --target-timeline current recovers along the backup's own "
                     "timeline",
                     *target, which, bi->timeline, end_s, stop_s);
    } else {
        *leaves = own->end;
        timeline_lsn(own->end, end_s);
        log_info("recovery will follow timeline %u%s, which leaves the backup's timeline %u at "
                 "%s; the backup ends at %s",
                 *target, goal == TIMELINE_LATEST ? " (the newest in the repository)" : "",
                 bi->timeline, end_s, stop_s);
    }
    free(h);
    return ok;
}
