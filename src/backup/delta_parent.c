/*
 * delta_parent.c - the parent of a delta backup (see delta_parent.h).
 */
#define _GNU_SOURCE
#include "backup/delta_parent.h"

#include <stdarg.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pg/lsn.h"
#include "pg/pg_version.h"
#include "pg/wal_history.h"
#include "pg/wal_name.h"
#include "repo/layout.h"
#include "repo/backup_read.h"
#include "util/xmalloc.h"

#define DELTA_PARENT_HISTORY_MAX (1024 * 1024) /* a history file is a line per timeline */

void delta_parent_free(delta_parent *p)
{
    manifest_free(&p->m);
}

static bool delta_parent_refuse(delta_parent *out, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static bool delta_parent_refuse(delta_parent *out, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(out->why, sizeof(out->why), fmt, ap);
    va_end(ap);
    out->found = false;
    return true;
}

bool delta_parent_timeline_ok(uint32_t tli, pg_lsn lsn, uint32_t current, const char *history)
{
    wal_history_entry *h;
    size_t n;
    bool ok = false;

    if (tli == current)
        return true;
    if (tli > current || history == NULL)
        return false;
    wal_history_parse(history, strlen(history), &h, &n);
    for (size_t i = 0; i < n; i++)
        if (h[i].tli == tli) {
            ok = lsn < h[i].end;
            break;
        }
    free(h);
    return ok;
}

/* pg_wal/<current>.history of the server's data directory, or NULL. */
static char *delta_parent_read_history(const char *pgdata, uint32_t current)
{
    char path[PATH_MAX], name[WAL_HISTORY_NAME_LEN + 1];
    FILE *f;
    char *text;
    size_t n;

    wal_name_history(current, name);
    snprintf(path, sizeof(path), "%s/pg_wal/%s", pgdata, name);
    if ((f = fopen(path, "r")) == NULL)
        return NULL;
    text = xmalloc(DELTA_PARENT_HISTORY_MAX + 1);
    n = fread(text, 1, DELTA_PARENT_HISTORY_MAX, f);
    fclose(f);
    text[n] = '\0';
    return text;
}

/* The chain below `bi`: every member present and readable down to a full. */
static bool delta_parent_chain(storage *repo, const backup_info *bi, delta_parent *out,
                               pgd_error *err)
{
    backup_info cur = *bi;

    for (uint32_t steps = 0; cur.parent[0] != '\0'; steps++) {
        backup_info up;
        pgd_error lerr = {0};
        bool missing = false;
        if (steps > DELTA_MAX_STEPS_MAX)
            return delta_parent_refuse(out, "the chain of backup %s loops", bi->id);
        if (!backup_info_load(repo, cur.parent, &up, &missing, &lerr)) {
            if (err_is(&lerr, PGD_ERR_TRANSIENT)) {
                *err = lerr;
                return false;
            }
            return delta_parent_refuse(out, "backup %s is damaged: its chain needs %s, which %s",
                                       bi->id, cur.parent,
                                       missing ? "is not in the repository" : lerr.msg);
        }
        cur = up;
    }
    out->found = true;
    return true;
}

bool delta_parent_choose(storage *repo, const delta_parent_request *req, delta_parent *out,
                         pgd_error *err)
{
    backup_info *all = NULL, *bi;
    size_t n = 0;
    char *history;
    pgd_error lerr = {0};
    bool missing = false, ok;

    memset(out, 0, sizeof(*out));
    manifest_init(&out->m);
    if (strcmp(req->from, "LATEST") != 0) {
        if (!layout_is_backup_id(req->from)) {
            err_set(err,
                    "invalid value \"%s\" for option \"--delta-from\": expected LATEST or "
                    "a backup id like 20261129T215959F",
                    req->from);
            err_mark(err, PGD_ERR_USAGE);
            return false;
        }
        if (!backup_info_load(repo, req->from, &out->info, &missing, &lerr)) {
            if (missing) {
                err_set(err, "--delta-from: backup \"%s\" not found in repository \"%s\"",
                        req->from, repo->uri);
                err_mark(err, PGD_ERR_USAGE);
                return false;
            }
            if (err_is(&lerr, PGD_ERR_TRANSIENT)) {
                *err = lerr;
                return false;
            }
            return delta_parent_refuse(out, "backup %s is damaged: %s", req->from, lerr.msg);
        }
    } else {
        if (!backup_info_scan(repo, &all, &n, err))
            return false;
        if (n == 0) {
            free(all);
            return delta_parent_refuse(out, "no earlier backup in repository \"%s\"", repo->uri);
        }
        bi = &all[n - 1];
        out->info = *bi;
        free(all);
        if (out->info.damaged)
            return delta_parent_refuse(out, "backup %s is damaged: %s", out->info.id,
                                       out->info.damage);
    }
    bi = &out->info;
    if (bi->checksum_failed)
        return delta_parent_refuse(out,
                                   "backup %s is marked: %llu pages failed their data checksum",
                                   bi->id, (unsigned long long)bi->checksum_errors);
    if (strcmp(bi->system_identifier, req->system_identifier) != 0)
        return delta_parent_refuse(out,
                                   "backup %s is of another system (system identifier %s, "
                                   "the server's is %s)",
                                   bi->id, bi->system_identifier, req->system_identifier);
    if (pg_version_major(bi->pg_version_num) != pg_version_major(req->pg_version_num))
        return delta_parent_refuse(
            out,
            "backup %s is of another PostgreSQL release (%d, the server's is "
            "%d)",
            bi->id, bi->pg_version_num, req->pg_version_num);
    history = bi->timeline == req->timeline ? NULL
                                            : delta_parent_read_history(req->pgdata, req->timeline);
    ok = delta_parent_timeline_ok(bi->timeline, bi->start_lsn, req->timeline, history);
    free(history);
    if (!ok)
        return delta_parent_refuse(out,
                                   "backup %s is on timeline %u, which is not an ancestor of the "
                                   "server's timeline %u before the backup's start " LSN_FORMAT,
                                   bi->id, bi->timeline, req->timeline, LSN_ARGS(bi->start_lsn));
    if (bi->depth >= req->max_steps)
        return delta_parent_refuse(out, "the chain of %s reached %u deltas (--delta-max-steps %u)",
                                   bi->id, bi->depth, req->max_steps);
    if (!delta_parent_chain(repo, bi, out, err) || !out->found)
        return !err->set;
    lerr = (pgd_error){0};
    if (!backup_read_manifest(repo, bi->id, &out->m, &lerr)) {
        if (err_is(&lerr, PGD_ERR_TRANSIENT)) {
            *err = lerr;
            return false;
        }
        return delta_parent_refuse(out, "backup %s is damaged: %s", bi->id, lerr.msg);
    }
    out->found = true;
    return true;
}

/* The sentinel of `id` (the parent, or a member of its chain) loads; `what` names its role. */
static bool delta_parent_load_again(storage *repo, const char *id, const char *what,
                                    backup_info *bi, pgd_error *err)
{
    char path[LAYOUT_PATH_MAX];
    pgd_error lerr = {0};
    bool missing = false;

    if (backup_info_load(repo, id, bi, &missing, &lerr))
        return true;
    if (err_is(&lerr, PGD_ERR_TRANSIENT) && !missing) {
        *err = lerr;
        return false;
    }
    layout_sentinel_path(id, path, sizeof(path));
    if (missing)
        return err_set(err,
                       "%s %s is no longer in the repository (its sentinel %s is gone): a delta "
                       "on it could not be restored",
                       what, id, path);
    return err_set(err, "%s %s can no longer be read (%s): a delta on it could not be restored",
                   what, id, lerr.msg);
}

bool delta_parent_still_there(storage *repo, const delta_parent *p, pgd_error *err)
{
    char path[LAYOUT_PATH_MAX];
    backup_info now, cur;
    bool exists = false;

    if (!delta_parent_load_again(repo, p->info.id, "parent backup", &now, err))
        return false;
    if (strcmp(now.id, p->info.id) != 0 || now.start_lsn != p->info.start_lsn)
        return err_set(err,
                       "parent backup %s is not the backup this delta was taken on (its sentinel "
                       "now says start LSN " LSN_FORMAT ", it said " LSN_FORMAT ")",
                       p->info.id, LSN_ARGS(now.start_lsn), LSN_ARGS(p->info.start_lsn));
    layout_manifest_path(p->info.id, path, sizeof(path));
    if (!storage_exists(repo, path, &exists, err))
        return false;
    if (!exists)
        return err_set(err,
                       "parent backup %s has lost its manifest (%s is gone): a delta on it could "
                       "not be restored",
                       p->info.id, path);
    cur = now;
    for (uint32_t steps = 0; cur.parent[0] != '\0' && steps <= DELTA_MAX_STEPS_MAX; steps++) {
        char child[sizeof(cur.id)], up[sizeof(cur.parent)];
        snprintf(child, sizeof(child), "%s", cur.id);
        snprintf(up, sizeof(up), "%s", cur.parent);
        if (!delta_parent_load_again(repo, up, "backup", &cur, err)) {
            err_prefix(err, "the chain of parent backup %s is broken at %s's parent", p->info.id,
                       child);
            return false;
        }
    }
    return true;
}
