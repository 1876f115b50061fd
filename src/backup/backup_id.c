/*
 * backup_id.c - claiming a backup id exclusively, and removing what a
 * failed backup wrote under it. See backup_id.h.
 */
#include "backup/backup_id.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "util/log.h"
#include "util/process.h"
#include "util/xmalloc.h"

/*
 * Seconds after the start tried before giving up. Each run started at the
 * same moment takes one; a hundred is more than any schedule starts at once
 * and bounds the requests a repository full of leftovers costs.
 */
#define BACKUP_ID_CLAIM_TRIES 100
/*
 * A live writer touches its temporary object at least every compressed
 * block (seconds, or minutes at the slowest --max-rate); a day is far
 * beyond any stall of a run still alive, and a daily schedule still clears
 * a killed run's garbage by the run after next.
 */
#define BACKUP_ID_STALE_S (24 * 60 * 60)

typedef struct backup_id_names {
    char **names;
    size_t n, cap;
} backup_id_names;

static bool backup_id_collect(void *arg, const char *name, uint64_t size, bool is_dir,
                              pgd_error *err)
{
    backup_id_names *l = arg;

    (void)size;
    (void)is_dir;
    (void)err;
    if (l->n == l->cap) {
        size_t cap = l->cap ? l->cap * 2 : 16;
        l->names = xrealloc(l->names, cap * sizeof(*l->names));
        l->cap = cap;
    }
    l->names[l->n++] = xstrdup(name);
    return true;
}

static void backup_id_names_free(backup_id_names *l)
{
    for (size_t i = 0; i < l->n; i++)
        free(l->names[i]);
    free(l->names);
    memset(l, 0, sizeof(*l));
}

/* The names directly under backups/<id>/. */
static bool backup_id_list(storage *repo, const char *id, backup_id_names *out, pgd_error *err)
{
    char dir[LAYOUT_PATH_MAX];

    layout_backup_dir(id, dir, sizeof(dir));
    if (storage_list(repo, dir, backup_id_collect, out, err))
        return true;
    backup_id_names_free(out);
    return false;
}

/*
 * The claim: id, the process (host, pid, boot id, its start time and pid namespace: see
 * util/process.h), start_time, the system identifier of the cluster when known; a delta's also
 * its parent and the parent's start_lsn, so that delete keeps that parent while the run goes.
 */
static char *backup_id_claim_text(const char *id, time_t start, const backup_id_parent *parent,
                                  const char *system_identifier, pgd_error *err)
{
    process_identity me;
    json_t *o;
    char *text, parent_lsn[LSN_TEXT_MAX];

    process_self(&me);
    o = json_pack("{s:s, s:s, s:I, s:s, s:I, s:I, s:I}", "id", id, "host", me.host, "pid",
                  (json_int_t)me.pid, "boot_id", me.boot_id, "pid_start",
                  (json_int_t)me.start_ticks, "pid_ns", (json_int_t)me.pid_ns, "start_time",
                  (json_int_t)start);
    if (o != NULL && system_identifier != NULL &&
        json_object_set_new(o, "system_identifier", json_string(system_identifier)) != 0) {
        json_decref(o);
        o = NULL;
    }
    if (o != NULL && parent != NULL &&
        (json_object_set_new(o, "parent", json_string(parent->id)) != 0 ||
         json_object_set_new(o, "parent_start_lsn",
                             json_string(lsn_format(parent->start_lsn, parent_lsn))) != 0)) {
        json_decref(o);
        o = NULL;
    }
    text = o != NULL ? json_dumps(o, JSON_INDENT(1) | JSON_PRESERVE_ORDER) : NULL;
    json_decref(o);
    if (text == NULL) /* jansson allocates with xmalloc: the host name is not UTF-8 */
        err_set(err,
                "could not encode the claim of backup %s in JSON: host name \"%s\" is not "
                "UTF-8",
                id, me.host);
    return text;
}

/*
 * Objects that a run without a claim left under `id`: a complete backup of
 * an older version, or a killed run of one. The id is not free then.
 */
static bool backup_id_foreign(storage *repo, const char *id, bool *foreign, pgd_error *err)
{
    char path[LAYOUT_PATH_MAX];
    backup_id_names names = {0};
    bool sentinel;

    layout_sentinel_path(id, path, sizeof(path));
    if (!storage_exists(repo, path, &sentinel, err) || !backup_id_list(repo, id, &names, err))
        return false;
    *foreign = sentinel;
    for (size_t i = 0; i < names.n; i++)
        if (strcmp(names.names[i], CLAIM_NAME) != 0)
            *foreign = true;
    backup_id_names_free(&names);
    return true;
}

/* Try to claim `id`: *taken when another run (or its leftovers) holds it. */
static bool backup_id_try(storage *repo, const char *id, time_t start,
                          const backup_id_parent *parent, const char *system_identifier,
                          bool *taken, pgd_error *err)
{
    char path[LAYOUT_PATH_MAX];
    pgd_error put_err = {0};
    char *text = backup_id_claim_text(id, start, parent, system_identifier, err);
    bool ok, foreign;

    *taken = false;
    if (text == NULL)
        return false;
    layout_backup_object(id, CLAIM_NAME, path, sizeof(path));
    ok = storage_put(repo, path, text, strlen(text), STORAGE_WRITE_NO_REPLACE, &put_err);
    free(text);
    if (!ok) {
        /*
         * a conflict leaves the other run's claim in place; anything else is
         * an error, even when our claim is there now (made visible, not durable)
         */
        if (!err_is(&put_err, PGD_ERR_EXISTS)) {
            *err = put_err;
            return false;
        }
        *taken = true;
        return true;
    }
    if (!backup_id_foreign(repo, id, &foreign, err)) {
        pgd_error ignore = {0};
        storage_remove(repo, path, &ignore); /* best effort: the caller reports err */
        return false;
    }
    if (foreign) {
        *taken = true;
        return storage_remove(repo, path, err);
    }
    return true;
}

/* Whether the id of the same second and the other kind holds anything (a claim, a sentinel). */
static bool backup_id_sibling_taken(storage *repo, const char *id, bool *taken, pgd_error *err)
{
    char sibling[BACKUP_ID_LEN + 1], path[LAYOUT_PATH_MAX];
    backup_id_names names = {0};
    bool sentinel;

    memcpy(sibling, id, sizeof(sibling));
    sibling[BACKUP_ID_LEN - 1] = id[BACKUP_ID_LEN - 1] == 'D' ? 'F' : 'D';
    layout_sentinel_path(sibling, path, sizeof(path));
    if (!storage_exists(repo, path, &sentinel, err) || !backup_id_list(repo, sibling, &names, err))
        return false;
    *taken = sentinel || names.n > 0;
    backup_id_names_free(&names);
    return true;
}

bool backup_id_claim(storage *repo, time_t start, char id[BACKUP_ID_LEN + 1], pgd_error *err)
{
    return backup_id_claim_kind(repo, start, NULL, NULL, id, err);
}

bool backup_id_claim_kind(storage *repo, time_t start, const backup_id_parent *parent,
                          const char *system_identifier, char id[BACKUP_ID_LEN + 1], pgd_error *err)
{
    char first[BACKUP_ID_LEN + 1];
    bool delta = parent != NULL;

    layout_backup_id(start, first);
    first[BACKUP_ID_LEN - 1] = delta ? 'D' : 'F';
    for (int i = 0; i < BACKUP_ID_CLAIM_TRIES; i++) {
        bool taken;

        layout_backup_id(start + i, id);
        id[BACKUP_ID_LEN - 1] = delta ? 'D' : 'F';
        if (!backup_id_sibling_taken(repo, id, &taken, err)) {
            err_prefix(err, "could not claim backup id %s", id);
            return false;
        }
        if (taken)
            continue;
        if (!backup_id_try(repo, id, start, parent, system_identifier, &taken, err)) {
            err_prefix(err, "could not claim backup id %s", id);
            return false;
        }
        if (!taken)
            return true;
    }
    return err_set(err,
                   "could not claim a backup id in repository \"%s\": %s and the %d ids after "
                   "it are taken",
                   repo->uri, first, BACKUP_ID_CLAIM_TRIES - 1);
}

/* Append what is left of backup `id` to the cause already in err. */
static void backup_id_leftovers(storage *repo, const char *id, pgd_error *err)
{
    char cause[PGD_ERROR_MAX], left[PGD_ERROR_MAX / 2] = "", path[LAYOUT_PATH_MAX];
    backup_id_names names = {0};
    pgd_error ignore = {0};
    bool sentinel = true;
    size_t len = 0;

    snprintf(cause, sizeof(cause), "%s", err->msg);
    layout_sentinel_path(id, path, sizeof(path));
    if (!storage_exists(repo, path, &sentinel, &ignore) || sentinel)
        len += (size_t)snprintf(left, sizeof(left), "%s, ", path);
    layout_backup_dir(id, path, sizeof(path));
    if (!backup_id_list(repo, id, &names, &ignore)) {
        snprintf(left + len, sizeof(left) - len, "%s/ (could not list it)", path);
    } else {
        len +=
            (size_t)snprintf(left + len, sizeof(left) - len, "%s/ with %zu objects", path, names.n);
        for (size_t i = 0; i < names.n && len < sizeof(left); i++)
            len += (size_t)snprintf(left + len, sizeof(left) - len, "%s%s", i == 0 ? ": " : ", ",
                                    names.names[i]);
        if (len >= sizeof(left))
            memcpy(left + sizeof(left) - 4, "...", 4); /* say it was cut */
    }
    backup_id_names_free(&names);
    err_clear(err);
    err_set(err, "could not remove backup %s from repository \"%s\": %s; left behind: %s", id,
            repo->uri, cause, left);
}

bool backup_id_discard(storage *repo, const char *id, pgd_error *err)
{
    char sentinel[LAYOUT_PATH_MAX], claim[LAYOUT_PATH_MAX], dir[LAYOUT_PATH_MAX];
    char(*paths)[LAYOUT_PATH_MAX] = NULL;
    const char **list = NULL;
    backup_id_names names = {0};
    size_t n = 0;
    bool ok;

    layout_sentinel_path(id, sentinel, sizeof(sentinel));
    layout_backup_object(id, CLAIM_NAME, claim, sizeof(claim));
    layout_backup_dir(id, dir, sizeof(dir));
    /* the sentinel first: from then on the backup does not exist for list or restore */
    ok = storage_remove(repo, sentinel, err) && backup_id_list(repo, id, &names, err);
    if (ok && names.n > 0) {
        paths = xcalloc(names.n, sizeof(*paths));
        list = xcalloc(names.n, sizeof(*list));
    }
    for (size_t i = 0; ok && i < names.n; i++) {
        if (strcmp(names.names[i], CLAIM_NAME) == 0)
            continue;
        layout_backup_object(id, names.names[i], paths[n], sizeof(paths[n]));
        list[n] = paths[n];
        n++;
    }
    /* the claim last, so a run that dies here leaves an id nobody else takes */
    ok = ok && storage_remove_many(repo, list, n, err) && storage_remove(repo, claim, err) &&
         storage_remove(repo, dir, err);
    free(paths);
    free(list);
    backup_id_names_free(&names);
    if (!ok)
        backup_id_leftovers(repo, id, err);
    return ok;
}

void backup_id_sweep_stale(storage *repo)
{
    pgd_error err = {0};

    if (!storage_remove_stale_temp(repo, BACKUPS_DIR, BACKUP_ID_STALE_S, &err))
        log_warn("could not remove temporary objects left by killed backups: %s", err.msg);
}
