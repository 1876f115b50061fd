/*
 * annotate.c - `pgdirect annotate ID [KEY=VALUE...] [--remove KEY...]`: add, change or remove a
 * backup's annotations after the fact (repo/annotation.h). The sentinel is rewritten whole with
 * one atomic write (storage_put: a temporary file renamed over it, or one PUT), under the lease
 * delete takes (repo/repo_lock.h), so that a delete never removes a backup whose sentinel is
 * being rewritten and a rewrite never brings back a deleted one.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd/cmd.h"
#include "cmd/common.h"
#include "repo/annotation.h"
#include "repo/backup_info.h"
#include "repo/layout.h"
#include "repo/repo_contents.h"
#include "repo/repo_lock.h"
#include "repo/retention.h"
#include "util/log.h"

#define ANNOTATE_LOCK_NAME "delete" /* the lease delete takes (cmd/delete.c) */

static const command_help annotate_help = {
    CMD_ANNOTATE, "usage: pgdirect annotate ID|LATEST [KEY=VALUE...] [--remove KEY...] [OPTIONS]",
    "Add or change (KEY=VALUE) or remove (--remove KEY) annotations of backup ID: notes kept in\n"
    "its sentinel, shown by list and list --json, as backup --annotation gives them. The\n"
    "sentinel is rewritten atomically, under the repository's delete lease."};

/* The changes, checked before the repository is touched. */
static bool cmd_annotate_apply(const pgd_options *opts, char text[ANNOTATIONS_TEXT_MAX], bool warn,
                               bool *changed, pgd_error *err)
{
    const opt_value *rm = &opts->v[OPT_REMOVE];

    *changed = false;
    for (size_t i = 1; i < opts->nargs; i++) {
        char key[ANNOTATION_KEY_MAX + 1];
        const char *value;
        bool one;
        if (!annotation_parse(opts->args[i], key, &value, err) ||
            !annotation_set(text, key, value, &one, err))
            return false;
        *changed = *changed || one;
    }
    for (size_t i = 0; i < rm->nvalues; i++) {
        char kv[ANNOTATION_KEY_MAX + 2], key[ANNOTATION_KEY_MAX + 1];
        const char *value;
        pgd_error bad = {0};
        bool one;
        /* the key checked as annotation_parse checks one: "KEY=" */
        if ((size_t)snprintf(kv, sizeof(kv), "%s=", rm->values[i]) >= sizeof(kv) ||
            !annotation_parse(kv, key, &value, &bad))
            return err_set(err,
                           "invalid value \"%s\" for option \"--remove\": not an annotation "
                           "key",
                           rm->values[i]);
        if (!annotation_set(text, key, NULL, &one, err))
            return false;
        if (!one && warn)
            log_warn("backup has no annotation \"%s\" to remove", rm->values[i]);
        *changed = *changed || one;
    }
    return true;
}

/*
 * Backup `id` has no sentinel: say why, as list does. A directory without one is a run still
 * going or one that was interrupted; neither restores, so neither is annotated (the sentinel
 * is what annotate rewrites, and writing one would make an incomplete backup look complete).
 */
static bool cmd_annotate_no_sentinel(storage *repo, const char *id, pgd_error *err)
{
    repo_contents c = {0};
    pgd_error scan = {0};
    const repo_dir *d = NULL;

    if (repo_contents_scan_dirs(repo, RETENTION_GARBAGE_AGE_DEFAULT_S, &c, &scan))
        for (size_t i = 0; i < c.ndirs && d == NULL; i++)
            if (strcmp(c.dirs[i].id, id) == 0 && !c.dirs[i].sentinel)
                d = &c.dirs[i];
    if (d == NULL) {
        err_set(err, "backup %s is not in repository \"%s\" (see pgdirect list)", id, repo->uri);
        err_mark(err, PGD_ERR_NOT_FOUND);
    } else if (d->state == RETENTION_CLAIM_RUNNING) {
        err_set(err,
                "backup %s is still running (%s): it has no sentinel yet and can be annotated "
                "once it completes",
                id, d->why);
    } else {
        err_set(err,
                "backup %s is incomplete: %s (%s); it cannot be restored, so it is not annotated "
                "(pgdirect delete --garbage removes it)",
                id,
                d->state == RETENTION_CLAIM_DEAD ? "its run was interrupted"
                                                 : "it has no sentinel and no readable claim",
                d->why);
    }
    repo_contents_free(&c);
    return false;
}

static bool cmd_annotate_run(const pgd_options *opts, storage *repo, pgd_error *err)
{
    const char *id = opts->args[0];
    char path[LAYOUT_PATH_MAX], *json = NULL;
    backup_info bi;
    repo_lock *lock;
    pgd_error release = {0};
    bool missing = false, changed = false, ok;

    if ((lock = repo_lock_acquire(repo, ANNOTATE_LOCK_NAME, REPO_LOCK_LEASE_S, err)) == NULL)
        return false;
    if (strcmp(id, "LATEST") == 0)
        ok = backup_info_resolve(repo, id, &bi, err);
    else
        ok = backup_info_load(repo, id, &bi, &missing, err);
    if (!ok && missing) {
        err_clear(err);
        ok = cmd_annotate_no_sentinel(repo, id, err);
    }
    ok = ok && cmd_annotate_apply(opts, bi.annotations, true, &changed, err);
    if (ok && changed) {
        layout_sentinel_path(bi.id, path, sizeof(path));
        ok = repo_lock_keep(lock, err) && backup_info_to_json(&bi, &json, err) &&
             storage_put(repo, path, json, strlen(json), 0, err);
        free(json);
    }
    if (ok)
        log_info("backup %s: annotations %s%s", bi.id,
                 changed ? "now " : "unchanged: ", bi.annotations[0] ? bi.annotations : "{}");
    if (!repo_lock_release(lock, &release) && ok)
        ok = err_set(err, "%s", release.msg);
    return ok;
}

int cmd_annotate(int argc, char **argv)
{
    pgd_options opts;
    pgd_error err = {0};
    storage *repo = NULL;
    char probe[ANNOTATIONS_TEXT_MAX] = "";
    bool changed;
    int rc;

    if (!command_start(&opts, &annotate_help, 64, argc, argv, &rc))
        return rc;
    if (opts.nargs == 0)
        err_set(&err, "annotate needs a backup id (see --help)");
    else if (strcmp(opts.args[0], "LATEST") != 0 && !layout_is_backup_id(opts.args[0]))
        err_set(&err, "invalid backup id \"%s\": expected LATEST or an id like 20261129T215959F",
                opts.args[0]);
    else if (opts.nargs == 1 && opts.v[OPT_REMOVE].nvalues == 0)
        err_set(&err, "annotate needs KEY=VALUE or --remove KEY (see --help)");
    else /* every KEY=VALUE and --remove checked before the repository is touched */
        cmd_annotate_apply(&opts, probe, false, &changed, &err);
    if (err.set) {
        err_mark(&err, PGD_ERR_USAGE);
        rc = command_fail(CMD_ANNOTATE, &err);
    } else if ((repo = command_open_repo(&opts, &err)) == NULL) {
        rc = command_fail(CMD_ANNOTATE, &err);
    } else {
        rc = cmd_annotate_run(&opts, repo, &err) ? EXIT_OK : command_fail(CMD_ANNOTATE, &err);
    }
    storage_free(repo);
    options_free(&opts);
    return rc;
}
