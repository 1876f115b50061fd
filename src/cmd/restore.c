/*
 * restore.c - `pgdirect restore ID|LATEST --target-dir DIR`: unpack a
 * backup (verified), then set up recovery: backup_label, backup_manifest,
 * recovery.signal, restore_command and the recovery target.
 *
 * Everything that can be checked is checked before anything is written:
 * options and recovery targets, the manifest (paths, partition names), and
 * where each tablespace goes. "Complete" is printed only once every file
 * and directory written is on disk (restore/durable.h).
 *
 * No tablespace_map is written: restore makes the pg_tblspc links itself
 * (pointing at --tablespace-map destinations), and without the file the
 * server keeps those links as they are.
 *
 * A restore that fails removes what it wrote (restore/target_dir.h): a
 * half-restored directory without backup_label would otherwise start as if
 * it had crashed, from a checkpoint that does not match its files.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cmd/cmd.h"
#include "cmd/common.h"
#include "repo/backup_info.h"
#include "repo/layout.h"
#include "repo/manifest.h"
#include "restore/durable.h"
#include "restore/extract.h"
#include "restore/links.h"
#include "restore/recovery_conf.h"
#include "restore/recovery_target.h"
#include "restore/target_dir.h"
#include "util/log.h"
#include "util/progress.h"
#include "util/text.h"

#define PG_VERSION_AUTO_CONF 120000 /* recovery settings in postgresql.conf from PG 12 */
#define AUTO_CONF_NAME       "postgresql.auto.conf"
#define AUTO_CONF_MAX        (16 * 1024 * 1024) /* ALTER SYSTEM writes a few lines */
#define FETCH_ARGS_MAX       24
#define S3_REGION_DEFAULT    "us-east-1" /* as the S3 back end */
/* fsync waits on the disk, not the CPU: more in flight than extraction threads */
#define FSYNC_THREADS_MIN 8

static const command_help restore_help = {
    CMD_RESTORE, "usage: pgdirect restore ID|LATEST --target-dir DIR [OPTIONS]",
    "Restore a backup into an empty directory and configure recovery from the WAL archive,\n"
    "optionally to a target (--target-time, --target-lsn, --target-name, --target-xid).\n"
    "\n"
    "--target-time takes an ISO 8601 date and time WITH a zone (\"2026-11-29 21:00:00+00\",\n"
    "\"2026-11-29T22:00:00 Europe/Berlin\"): without one the server would read it in its own\n"
    "TimeZone setting, which need not be yours. --target-lsn is X/X in hex, --target-xid a\n"
    "transaction id (xid8 too), --target-name a restore point name; --target-action needs one.\n"
    "\n"
    "restore_command carries every repository option this restore used, resolved to flags,\n"
    "but never S3 credentials: the restored server needs AWS_ACCESS_KEY_ID and\n"
    "AWS_SECRET_ACCESS_KEY (and AWS_SESSION_TOKEN) in its own environment."};

typedef struct restore_settings {
    const char *id;
    const char *target;
    const char *target_key, *target_value; /* recovery_target_* */
    const char *target_action;
    int concurrency;
    bool progress;
    bool allow_external_links;
} restore_settings;

/* Arguments of wal-fetch in restore_command (malloc'd). */
typedef struct fetch_args {
    char *v[FETCH_ARGS_MAX];
    size_t n;
} fetch_args;

static bool restore_check_target(opt_id opt, const char *value, pgd_error *err)
{
    char why[256];
    bool ok;

    switch (opt) {
    case OPT_TARGET_TIME:
        ok = recovery_target_check_time(value, why, sizeof(why));
        break;
    case OPT_TARGET_LSN:
        ok = recovery_target_check_lsn(value, why, sizeof(why));
        break;
    case OPT_TARGET_XID:
        ok = recovery_target_check_xid(value, why, sizeof(why));
        break;
    default:
        ok = recovery_target_check_name(value, why, sizeof(why));
        break;
    }
    return ok ||
           err_set(err, "invalid value \"%s\" for option \"--%s\": %s", value, opt_name(opt), why);
}

static bool restore_read_settings(const pgd_options *opts, restore_settings *s, pgd_error *err)
{
    static const struct {
        opt_id opt;
        const char *key;
    } targets[] = {{OPT_TARGET_TIME, "recovery_target_time"},
                   {OPT_TARGET_LSN, "recovery_target_lsn"},
                   {OPT_TARGET_NAME, "recovery_target_name"},
                   {OPT_TARGET_XID, "recovery_target_xid"}};
    long concurrency;
    int action;

    memset(s, 0, sizeof(*s));
    if (opts->nargs != 1)
        return err_set(err, opts->nargs == 0 ? "restore needs a backup id or LATEST (see --help)"
                                             : "restore takes one backup id (see --help)");
    s->id = opts->args[0];
    s->target = opt_str(opts, OPT_TARGET_DIR);
    if (s->target == NULL || s->target[0] == '\0')
        return err_set(err, "option \"--target-dir\" is required");
    for (size_t i = 0; i < sizeof(targets) / sizeof(targets[0]); i++) {
        if (opt_str(opts, targets[i].opt) == NULL)
            continue;
        if (s->target_key != NULL)
            return err_set(err, "give at most one of --target-time, --target-lsn, --target-name, "
                                "--target-xid");
        if (!restore_check_target(targets[i].opt, opt_str(opts, targets[i].opt), err))
            return false;
        s->target_key = targets[i].key;
        s->target_value = opt_str(opts, targets[i].opt);
    }
    if (opt_str(opts, OPT_TARGET_ACTION) != NULL) {
        if (!opt_enum(opts, OPT_TARGET_ACTION, "promote|pause|shutdown", &action, err))
            return false;
        if (s->target_key == NULL)
            return err_set(err, "option \"--target-action\" needs a recovery target "
                                "(--target-time, --target-lsn, --target-name or --target-xid)");
        s->target_action = opt_str(opts, OPT_TARGET_ACTION);
    }
    if (strcmp(opt_str(opts, OPT_CONCURRENCY), "auto") == 0) {
        /* partitions are decompressed in parallel: one per vCPU, at least 2 */
        concurrency = sysconf(_SC_NPROCESSORS_ONLN);
        if (concurrency < 2)
            concurrency = 2;
    } else if (!opt_int(opts, OPT_CONCURRENCY, 1, 256, &concurrency, err)) {
        return false;
    }
    if (!command_progress(opts, &s->progress, err) ||
        !opt_bool(opts, OPT_ALLOW_EXTERNAL_LINKS, &s->allow_external_links, err))
        return false;
    s->concurrency = (int)concurrency;
    return true;
}

static bool restore_repo_is_s3(const storage *repo)
{
    return strncmp(repo->uri, "s3://", strlen("s3://")) == 0;
}

static void restore_fetch_args_free(fetch_args *a)
{
    for (size_t i = 0; i < a->n; i++)
        free(a->v[i]);
    a->n = 0;
}

static bool restore_fetch_arg(fetch_args *a, const char *flag, const char *value, pgd_error *err)
{
    if (a->n + 2 > FETCH_ARGS_MAX)
        return err_set(err, "too many restore_command arguments");
    a->v[a->n] = strdup(flag);
    if (a->v[a->n] == NULL)
        return err_set(err, "out of memory");
    a->n++;
    a->v[a->n] = strdup(value);
    if (a->v[a->n] == NULL)
        return err_set(err, "out of memory");
    a->n++;
    return true;
}

static const char *restore_env(const char *name)
{
    const char *v = getenv(name);

    return v != NULL && v[0] != '\0' ? v : NULL;
}

/*
 * The repository options wal-fetch needs to read what this restore read,
 * resolved to values wherever they came from (flag, PGDIRECT_*, AWS_*, the
 * config file), so the server's environment does not decide where WAL
 * comes from. Upload-only options (storage class, part size...) do not
 * matter to a read; secrets are never written.
 */
static bool restore_fetch_args(const pgd_options *opts, const storage *repo, fetch_args *a,
                               pgd_error *err)
{
    char path[PATH_MAX], endpoint[512];
    const char *region;

    a->n = 0;
    if (!restore_repo_is_s3(repo)) {
        /* the server runs restore_command in the data directory: a relative path would move */
        if (realpath(repo->uri, path) == NULL)
            return err_errno(err, errno, "could not resolve repository \"%s\"", repo->uri);
        if (!restore_fetch_arg(a, "--repo", path, err))
            return false;
    } else {
        region = opt_str(opts, OPT_S3_REGION);
        if (region == NULL || region[0] == '\0')
            region = restore_env("AWS_REGION");
        if (region == NULL)
            region = restore_env("AWS_DEFAULT_REGION");
        if (region == NULL)
            region = S3_REGION_DEFAULT;
        if (opt_str(opts, OPT_S3_ENDPOINT) != NULL && opt_str(opts, OPT_S3_ENDPOINT)[0] != '\0')
            snprintf(endpoint, sizeof(endpoint), "%s", opt_str(opts, OPT_S3_ENDPOINT));
        else if (restore_env("AWS_ENDPOINT_URL") != NULL)
            snprintf(endpoint, sizeof(endpoint), "%s", restore_env("AWS_ENDPOINT_URL"));
        else
            snprintf(endpoint, sizeof(endpoint), "https://s3.%s.amazonaws.com", region);
        if (!restore_fetch_arg(a, "--repo", repo->uri, err) ||
            !restore_fetch_arg(a, "--s3-endpoint", endpoint, err) ||
            !restore_fetch_arg(a, "--s3-region", region, err) ||
            !restore_fetch_arg(a, "--s3-uri-style", opt_str(opts, OPT_S3_URI_STYLE), err) ||
            !restore_fetch_arg(a, "--s3-retries", opt_str(opts, OPT_S3_RETRIES), err) ||
            !restore_fetch_arg(a, "--s3-timeout", opt_str(opts, OPT_S3_TIMEOUT), err) ||
            !restore_fetch_arg(a, "--download-concurrency", opt_str(opts, OPT_DOWNLOAD_CONCURRENCY),
                               err))
            return false;
    }
    if (opt_is_set(opts, OPT_CONFIG)) {
        /* the file may hold what no flag carries; flags win over it, as here */
        if (realpath(opt_str(opts, OPT_CONFIG), path) == NULL)
            return err_errno(err, errno, "could not resolve config file \"%s\"",
                             opt_str(opts, OPT_CONFIG));
        if (!restore_fetch_arg(a, "--config", path, err))
            return false;
    }
    return true;
}

/* --tablespace-map OLD=NEW: the destination of each tablespace in the manifest. */
static bool restore_map_tablespaces(const pgd_options *opts, const manifest *m, char **dest,
                                    pgd_error *err)
{
    const opt_value *v = &opts->v[OPT_TABLESPACE_MAP];

    for (size_t i = 0; i < m->ntablespaces; i++)
        dest[i] = m->tablespaces[i].location;
    for (size_t k = 0; k < v->nvalues; k++) {
        const char *eq = strchr(v->values[k], '=');
        bool matched = false;
        if (eq == NULL || eq == v->values[k] || eq[1] != '/')
            return err_set(err,
                           "invalid value \"%s\" for option \"--tablespace-map\": expected "
                           "OLD=NEW with an absolute NEW",
                           v->values[k]);
        for (size_t i = 0; i < m->ntablespaces; i++) {
            const manifest_tablespace *t = &m->tablespaces[i];
            if (strlen(t->location) == (size_t)(eq - v->values[k]) &&
                strncmp(t->location, v->values[k], (size_t)(eq - v->values[k])) == 0) {
                dest[i] = (char *)eq + 1;
                matched = true;
            }
        }
        if (!matched)
            return err_set(err,
                           "--tablespace-map \"%s\": no tablespace of the backup is at "
                           "\"%.*s\"",
                           v->values[k], (int)(eq - v->values[k]), v->values[k]);
    }
    for (size_t i = 0; i < m->ntablespaces; i++)
        if (dest[i][0] != '/')
            return err_set(err, "tablespace %u of the backup has a relative location \"%s\"",
                           m->tablespaces[i].oid, dest[i]);
    return true;
}

/*
 * A tablespace location comes from the backup: untrusted. Each destination
 * is logged before anything is written to it, and none may lie inside the
 * target directory or another destination (or contain them): files of one
 * would land among, or replace, files of the other.
 */
static bool restore_check_destinations(const char *target, const manifest *m, char **dest,
                                       pgd_error *err)
{
    size_t n = m->ntablespaces + 1;
    char(*resolved)[PATH_MAX] = calloc(n, PATH_MAX);
    bool ok = true;

    if (resolved == NULL)
        return err_set(err, "out of memory");
    ok = target_dir_resolve(target, resolved[0], PATH_MAX, err);
    for (size_t i = 0; ok && i < m->ntablespaces; i++) {
        log_info("tablespace %u \"%s\" (\"%s\" in the backup) is restored to \"%s\"",
                 m->tablespaces[i].oid, m->tablespaces[i].name, m->tablespaces[i].location,
                 dest[i]);
        ok = target_dir_resolve(dest[i], resolved[i + 1], PATH_MAX, err);
    }
    for (size_t i = 1; ok && i < n; i++) {
        for (size_t j = 0; ok && j < n; j++) {
            if (i == j || !(target_dir_is_within(resolved[i], resolved[j]) ||
                            target_dir_is_within(resolved[j], resolved[i])))
                continue;
            ok = j == 0 ? err_set(err,
                                  "tablespace %u would be restored to \"%s\", which overlaps "
                                  "the target directory \"%s\"",
                                  m->tablespaces[i - 1].oid, dest[i - 1], target)
                        : err_set(err,
                                  "tablespaces %u and %u would be restored to overlapping "
                                  "directories \"%s\" and \"%s\"",
                                  m->tablespaces[j - 1].oid, m->tablespaces[i - 1].oid, dest[j - 1],
                                  dest[i - 1]);
        }
    }
    free(resolved);
    return ok;
}

static bool restore_write_file(const char *dir, const char *name, const char *text, int flags,
                               durable_list *sync, pgd_error *err)
{
    char path[PATH_MAX];
    size_t len = strlen(text);
    ssize_t n = 0;
    int fd;

    if (!str_format(path, sizeof(path), "%s/%s", dir, name))
        return err_set(err, "path too long: \"%s/%s\"", dir, name);
    fd = open(path, O_WRONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC | flags, 0600);
    if (fd < 0)
        return err_errno(err, errno, "could not create file \"%s\"", path);
    while (len > 0 && (n = write(fd, text, len)) > 0) {
        text += n;
        len -= (size_t)n;
    }
    if (len > 0) {
        int e = n < 0 ? errno : ENOSPC;
        close(fd);
        return err_errno(err, e, "could not write file \"%s\"", path);
    }
    if (close(fd) != 0)
        return err_errno(err, errno, "could not close file \"%s\"", path);
    return durable_list_add(sync, path, false, err);
}

/* The restored postgresql.auto.conf ("" when the backup has none), at most AUTO_CONF_MAX. */
static bool restore_read_auto_conf(const char *target, char **text, pgd_error *err)
{
    char path[PATH_MAX];
    FILE *f;
    size_t n;

    *text = NULL;
    if (!str_format(path, sizeof(path), "%s/%s", target, AUTO_CONF_NAME))
        return err_set(err, "path too long: \"%s/%s\"", target, AUTO_CONF_NAME);
    f = fopen(path, "re");
    if (f == NULL && errno == ENOENT)
        return (*text = strdup("")) != NULL || err_set(err, "out of memory");
    if (f == NULL)
        return err_errno(err, errno, "could not open file \"%s\"", path);
    *text = malloc(AUTO_CONF_MAX + 1);
    if (*text == NULL) {
        fclose(f);
        return err_set(err, "out of memory");
    }
    n = fread(*text, 1, AUTO_CONF_MAX + 1, f);
    if (ferror(f) || n > AUTO_CONF_MAX) {
        fclose(f);
        free(*text);
        *text = NULL;
        return err_set(err, "could not read file \"%s\": %s", path,
                       n > AUTO_CONF_MAX ? "larger than 16 MiB" : "read error");
    }
    fclose(f);
    (*text)[n] = '\0';
    return true;
}

/*
 * postgresql.auto.conf (PostgreSQL >= 12) or recovery.conf: the inherited
 * recovery settings removed (restore/recovery_conf.h), ours appended.
 */
static bool restore_write_recovery(const restore_settings *s, const backup_info *bi,
                                   const char *restore_command, const char *target,
                                   durable_list *sync, pgd_error *err)
{
    bool auto_conf = bi->pg_version_num >= PG_VERSION_AUTO_CONF;
    char *old = NULL, *kept = NULL, *removed = NULL, *conf = NULL;
    size_t conf_len;
    FILE *out;
    bool ok;

    if (auto_conf) {
        if (!restore_read_auto_conf(target, &old, err))
            return false;
        ok = recovery_conf_strip(old, &kept, &removed, err);
        free(old);
        if (!ok)
            return false;
        if (removed[0] != '\0')
            log_info("removed recovery settings inherited from the backup's %s: %s", AUTO_CONF_NAME,
                     removed);
        free(removed);
    }
    out = open_memstream(&conf, &conf_len);
    if (out == NULL) {
        free(kept);
        return err_set(err, "out of memory");
    }
    if (kept != NULL && kept[0] != '\0')
        fprintf(out, "%s%s", kept, kept[strlen(kept) - 1] == '\n' ? "" : "\n");
    free(kept);
    fprintf(out, "# added by pgdirect restore of backup %s\n", bi->id);
    recovery_conf_append(out, "restore_command", restore_command);
    if (s->target_key != NULL)
        recovery_conf_append(out, s->target_key, s->target_value);
    if (s->target_action != NULL)
        recovery_conf_append(out, "recovery_target_action", s->target_action);
    if (fclose(out) != 0) {
        free(conf);
        return err_set(err, "out of memory");
    }
    if (!auto_conf)
        ok = restore_write_file(target, "recovery.conf", conf, O_EXCL, sync, err);
    else
        ok = restore_write_file(target, AUTO_CONF_NAME, conf, O_TRUNC, sync, err) &&
             restore_write_file(target, "recovery.signal", "", O_EXCL, sync, err);
    free(conf);
    return ok;
}

/*
 * PostgreSQL's backup_manifest, so that `pg_verifybackup -n DIR` can check
 * the restore independently of pgdirect.
 */
static bool restore_copy_pg_manifest(storage *repo, const char *id, const char *target,
                                     durable_list *sync, pgd_error *err)
{
    char path[LAYOUT_PATH_MAX];
    char *text;
    size_t len;
    bool missing, ok;

    layout_backup_object(id, PG_MANIFEST_NAME, path, sizeof(path));
    if (!storage_get(repo, path, &text, &len, &missing, err))
        return missing ? err_set(err, "\"%s\" is missing from repository \"%s\"", path, repo->uri)
                       : false;
    ok = restore_write_file(target, PG_MANIFEST_NAME, text, O_EXCL, sync, err);
    free(text);
    return ok;
}

static bool restore_load_manifest(storage *repo, const char *id, bool allow_external_links,
                                  manifest *m, pgd_error *err)
{
    char path[LAYOUT_PATH_MAX], what[LAYOUT_PATH_MAX + 64];
    char *json;
    size_t len;
    bool missing, ok;

    layout_manifest_path(id, path, sizeof(path));
    if (!storage_get(repo, path, &json, &len, &missing, err))
        return missing ? err_set(err,
                                 "manifest of backup \"%s\" is missing from repository "
                                 "\"%s\"",
                                 id, repo->uri)
                       : false;
    snprintf(what, sizeof(what), "manifest of backup \"%s\"", id);
    ok = manifest_from_json(m, json, what, err);
    free(json);
    if (!ok)
        return false;
    for (size_t i = 0; i < m->nfiles; i++)
        if (!extract_path_is_safe(m->files[i].path))
            return err_set(err,
                           "refusing path \"%s\" in the manifest of backup \"%s\": it would "
                           "land outside the target directory",
                           m->files[i].path, id);
    for (size_t i = 0; i < m->npartitions; i++)
        if (!extract_partition_name_is_valid(m->partitions[i].name, m->compression))
            return err_set(err,
                           "refusing partition \"%s\" in the manifest of backup \"%s\": "
                           "expected a name like \"part_0001.tar%s\"",
                           m->partitions[i].name, id, compress_suffix(m->compression));
    manifest_build_index(m);
    return links_check(m, id, allow_external_links, err);
}

static bool restore_link_tablespaces(const char *target, const manifest *m, const target_dir *dirs,
                                     pgd_error *err)
{
    for (size_t i = 0; i < m->ntablespaces; i++) {
        char link_path[PATH_MAX];
        if (!str_format(link_path, sizeof(link_path), "%s/pg_tblspc/%u", target,
                        m->tablespaces[i].oid))
            return err_set(err, "path too long: \"%s/pg_tblspc\"", target);
        /* the destination as given: a symlink in it stays the user's choice */
        if (symlink(dirs[i + 1].path, link_path) != 0)
            return err_errno(err, errno, "could not create tablespace link \"%s\"", link_path);
    }
    return true;
}

/* What the final fsync pass covers besides the files restore itself writes. */
static bool restore_list_durable(const extract_plan *plan, const target_dir *dirs, size_t ndirs,
                                 durable_list *sync, pgd_error *err)
{
    char path[PATH_MAX];

    for (size_t i = 0; i < ndirs; i++)
        if (!target_dir_add_durable(&dirs[i], sync, err))
            return false;
    /* the tablespace links' directory, when the manifest does not list it */
    if (plan->m->ntablespaces > 0 && manifest_find(plan->m, "pg_tblspc") < 0) {
        if (!str_format(path, sizeof(path), "%s/pg_tblspc", plan->target))
            return err_set(err, "path too long: \"%s/pg_tblspc\"", plan->target);
        if (!durable_list_add(sync, path, true, err))
            return false;
    }
    return extract_list_durable(plan, sync, err);
}

static void restore_log_complete(const restore_settings *s, const backup_info *bi, uint64_t bytes,
                                 double secs, double sync_secs)
{
    char size_s[32], time_s[32], sync_s[32];

    format_bytes(bytes, size_s, sizeof(size_s));
    format_duration(secs, time_s, sizeof(time_s));
    format_duration(sync_secs, sync_s, sizeof(sync_s));
    log_info("restore of backup %s complete: %s in %s (%.1f MB/s, %s of it waiting for the disk "
             "in the final fsync pass); start the server to recover%s%s%s",
             bi->id, size_s, time_s, secs > 0 ? (double)bytes / secs / 1e6 : 0.0, sync_s,
             s->target_key ? " to " : "", s->target_key ? s->target_key : "",
             s->target_key ? "" : " to the end of the archive");
}

/*
 * SIGINT or SIGTERM during a restore: it stops, removes what it wrote and
 * fails, like any other failure. A second signal acts as usual (kills).
 */
static volatile sig_atomic_t restore_signal;

static void restore_on_signal(int sig)
{
    restore_signal = sig;
}

static void restore_catch_signals(struct sigaction *old_int, struct sigaction *old_term)
{
    struct sigaction sa;

    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = restore_on_signal;
    sa.sa_flags = SA_RESETHAND;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, old_int);
    sigaction(SIGTERM, &sa, old_term);
}

/* One restore: what is decided before writing, then what is written. */
typedef struct restore_job {
    const restore_settings *s;
    storage *repo;
    backup_info bi;
    manifest m;
    char **dest;           /* per tablespace: where it goes (--tablespace-map applied) */
    target_dir *dirs;      /* [0] the target directory, [1 + i] tablespace i */
    durable_list *sync;    /* everything written, for the final fsync pass */
    char *restore_command; /* as PostgreSQL will run it */
    uint64_t bytes;
    double t0;
} restore_job;

/* Everything that can be decided or refused before the first write. */
static bool restore_plan(restore_job *j, const pgd_options *opts, pgd_error *err)
{
    fetch_args fetch = {.n = 0};
    char exe[PATH_MAX];
    ssize_t exe_len;
    bool ok;

    if (!backup_info_resolve(j->repo, j->s->id, &j->bi, err) ||
        !restore_load_manifest(j->repo, j->bi.id, j->s->allow_external_links, &j->m, err))
        return false;
    exe_len = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
    if (exe_len < 0)
        return err_errno(err, errno, "could not find the pgdirect executable");
    exe[exe_len] = '\0';
    ok = restore_fetch_args(opts, j->repo, &fetch, err) &&
         recovery_conf_restore_command(exe, (const char *const *)fetch.v, fetch.n,
                                       &j->restore_command, err);
    restore_fetch_args_free(&fetch);
    if (!ok)
        return false;
    j->dest = calloc(j->m.ntablespaces + 1, sizeof(*j->dest));
    j->dirs = calloc(j->m.ntablespaces + 1, sizeof(*j->dirs));
    if (j->dest == NULL || j->dirs == NULL)
        return err_set(err, "out of memory");
    return restore_map_tablespaces(opts, &j->m, j->dest, err) &&
           restore_check_destinations(j->s->target, &j->m, j->dest, err);
}

/* Unpack into the prepared directories, write the recovery setup, make it all durable. */
static bool restore_write(restore_job *j, pgd_error *err)
{
    const char **spc_dest = calloc(j->m.ntablespaces + 1, sizeof(*spc_dest));
    const char *target = j->dirs[0].real;
    int fsync_threads =
        j->s->concurrency > FSYNC_THREADS_MIN ? j->s->concurrency : FSYNC_THREADS_MIN;
    double t_sync;
    bool ok;

    if (spc_dest == NULL)
        return err_set(err, "out of memory");
    for (size_t i = 0; i < j->m.ntablespaces; i++)
        spc_dest[i] = j->dirs[i + 1].real;
    extract_plan plan = {.repo = j->repo,
                         .backup_id = j->bi.id,
                         .m = &j->m,
                         .target = target,
                         .spc_dest = spc_dest,
                         .concurrency = j->s->concurrency,
                         .progress = j->s->progress,
                         .cancel = &restore_signal};
    ok = extract_make_dirs(&plan, err) && restore_link_tablespaces(target, &j->m, j->dirs, err) &&
         extract_partitions(&plan, &j->bytes, err) && links_create(&plan, err) &&
         restore_write_file(target, "backup_label", j->m.backup_label, O_EXCL, j->sync, err) &&
         restore_copy_pg_manifest(j->repo, j->bi.id, target, j->sync, err) &&
         restore_write_recovery(j->s, &j->bi, j->restore_command, target, j->sync, err) &&
         restore_list_durable(&plan, j->dirs, j->m.ntablespaces + 1, j->sync, err);
    t_sync = clock_seconds();
    ok =
        ok && durable_list_sync(j->sync, fsync_threads, err) && extract_publish_control(&plan, err);
    if (ok)
        restore_log_complete(j->s, &j->bi, j->bytes, clock_seconds() - j->t0,
                             clock_seconds() - t_sync);
    free(spc_dest);
    return ok;
}

static bool restore_run(const restore_settings *s, const pgd_options *opts, storage *repo,
                        pgd_error *err)
{
    restore_job j = {.s = s, .repo = repo, .sync = durable_list_new(), .t0 = clock_seconds()};
    struct sigaction old_int, old_term;
    size_t ndirs;
    bool ok = j.sync != NULL || err_set(err, "out of memory"), caught;

    manifest_init(&j.m);
    ok = ok && restore_plan(&j, opts, err);
    /* from the first write on, a signal must not leave a half-written directory behind */
    caught = ok;
    if (caught)
        restore_catch_signals(&old_int, &old_term);
    ndirs = j.dirs != NULL ? j.m.ntablespaces + 1 : 0;
    /* the first writes: the directories, each destination logged before (restore_plan) */
    ok = ok && target_dir_prepare(&j.dirs[0], s->target, "target directory", err);
    for (size_t i = 1; ok && i < ndirs; i++)
        ok = target_dir_prepare(&j.dirs[i], j.dest[i - 1], "tablespace directory", err);
    if (ok) {
        log_info("restoring backup %s (%llu files, %zu partitions) to \"%s\"", j.bi.id,
                 (unsigned long long)j.bi.files, j.m.npartitions, j.dirs[0].real);
        if (restore_repo_is_s3(repo))
            log_info("restore_command carries no S3 credentials: the server needs "
                     "AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY in its own environment");
        ok = restore_write(&j, err);
    }
    if (!ok) {
        for (size_t i = 0; i < ndirs; i++)
            target_dir_cleanup(&j.dirs[i]);
        err_prefix(err, "restore of backup %s failed", j.bi.id[0] ? j.bi.id : s->id);
    }
    for (size_t i = 0; i < ndirs; i++)
        target_dir_release(&j.dirs[i]);
    if (caught) {
        sigaction(SIGINT, &old_int, NULL);
        sigaction(SIGTERM, &old_term, NULL);
    }
    free(j.restore_command);
    durable_list_free(j.sync);
    free(j.dest);
    free(j.dirs);
    manifest_free(&j.m);
    return ok;
}

int cmd_restore(int argc, char **argv)
{
    pgd_options opts;
    pgd_error err = {0};
    restore_settings s;
    storage *repo = NULL;
    int rc;

    if (!command_start(&opts, &restore_help, 1, argc, argv, &rc))
        return rc;
    if (!restore_read_settings(&opts, &s, &err)) {
        /* a usage error, like a bad option: nothing was touched */
        command_fail(&err);
        rc = EXIT_USAGE;
    } else if ((repo = command_open_repo(&opts, &err)) == NULL) {
        rc = command_fail(&err);
    } else {
        rc = restore_run(&s, &opts, repo, &err) ? EXIT_OK : command_fail(&err);
    }
    storage_free(repo);
    options_free(&opts);
    return rc;
}
