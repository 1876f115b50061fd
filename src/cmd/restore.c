/*
 * restore.c - `pgdirect restore ID|LATEST --target-dir DIR`: unpack a
 * backup (verified), then set up recovery: backup_label, backup_manifest,
 * recovery.signal, restore_command and the recovery target.
 *
 * No tablespace_map is written: restore makes the pg_tblspc links itself
 * (pointing at --tablespace-map destinations), and without the file the
 * server keeps those links as they are.
 *
 * A restore that fails removes what it wrote: a half-restored directory
 * without backup_label would otherwise start as if it had crashed, from a
 * checkpoint that does not match its files.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
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
#include "restore/extract.h"
#include "util/log.h"
#include "util/progress.h"

#define PG_VERSION_AUTO_CONF 120000 /* recovery settings in postgresql.conf from PG 12 */
#define NFTW_FDS             32

static const command_help restore_help = {
    CMD_RESTORE, "usage: pgdirect restore ID|LATEST --target-dir DIR [OPTIONS]",
    "Restore a backup into an empty directory and configure recovery from the WAL archive,\n"
    "optionally to a target (--target-time, --target-lsn, --target-name, --target-xid)."};

typedef struct created_dir {
    char path[PATH_MAX];
    bool created; /* we made it (else it existed, empty) */
} created_dir;

typedef struct restore_settings {
    const char *id;
    const char *target;
    const char *target_key, *target_value; /* recovery_target_* */
    const char *target_action;
    int concurrency;
    bool progress;
} restore_settings;

static bool read_settings(const pgd_options *opts, restore_settings *s, pgd_error *err)
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
        s->target_key = targets[i].key;
        s->target_value = opt_str(opts, targets[i].opt);
    }
    if (opt_str(opts, OPT_TARGET_ACTION) != NULL) {
        if (!opt_enum(opts, OPT_TARGET_ACTION, "promote|pause|shutdown", &action, err))
            return false;
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
    if (!command_progress(opts, &s->progress, err))
        return false;
    s->concurrency = (int)concurrency;
    return true;
}

/* Create `path` (mode 0700) or accept it when it is an empty directory. */
static bool prepare_empty_dir(const char *path, const char *what, created_dir *out, pgd_error *err)
{
    struct stat st;
    DIR *d;
    struct dirent *de;

    out->path[0] = '\0'; /* set only once the directory is ours to clean up */
    out->created = false;
    if (mkdir(path, 0700) == 0) {
        out->created = true;
        snprintf(out->path, sizeof(out->path), "%s", path);
        return true;
    }
    if (errno == ENOENT) {
        /* parents first, as mkdir -p */
        char parent[PATH_MAX];
        char *slash;
        snprintf(parent, sizeof(parent), "%s", path);
        slash = strrchr(parent, '/');
        if (slash != NULL && slash != parent) {
            created_dir ignore;
            *slash = '\0';
            if (mkdir(parent, 0700) != 0 && errno != EEXIST &&
                !prepare_empty_dir(parent, what, &ignore, err))
                return false;
            if (mkdir(path, 0700) == 0) {
                out->created = true;
                snprintf(out->path, sizeof(out->path), "%s", path);
                return true;
            }
        }
        return err_errno(err, errno, "could not create %s \"%s\"", what, path);
    }
    if (errno != EEXIST)
        return err_errno(err, errno, "could not create %s \"%s\"", what, path);
    if (stat(path, &st) != 0 || !S_ISDIR(st.st_mode))
        return err_set(err, "%s \"%s\" exists and is not a directory", what, path);
    d = opendir(path);
    if (d == NULL)
        return err_errno(err, errno, "could not open %s \"%s\"", what, path);
    while ((de = readdir(d)) != NULL) {
        if (strcmp(de->d_name, ".") != 0 && strcmp(de->d_name, "..") != 0) {
            closedir(d);
            return err_set(err, "%s \"%s\" is not empty", what, path);
        }
    }
    closedir(d);
    if (chmod(path, 0700) != 0)
        return err_errno(err, errno, "could not set mode of %s \"%s\"", what, path);
    snprintf(out->path, sizeof(out->path), "%s", path);
    return true;
}

static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st;
    (void)flag;
    (void)ftw;
    remove(path);
    return 0;
}

/* Undo a failed restore: remove what we wrote, keep directories that existed before. */
static void cleanup_dir(const created_dir *d)
{
    if (d->path[0] == '\0')
        return;
    nftw(d->path, remove_entry, NFTW_FDS, FTW_DEPTH | FTW_PHYS);
    if (!d->created)
        mkdir(d->path, 0700);
}

/* --tablespace-map OLD=NEW: the destination of each tablespace in the manifest. */
static bool map_tablespaces(const pgd_options *opts, const manifest *m, char **dest, pgd_error *err)
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

static bool write_file(const char *dir, const char *name, const char *text, int flags,
                       pgd_error *err)
{
    char path[PATH_MAX];
    size_t len = strlen(text);
    int fd;

    snprintf(path, sizeof(path), "%s/%s", dir, name);
    fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC | flags, 0600);
    if (fd < 0)
        return err_errno(err, errno, "could not create file \"%s\"", path);
    if (write(fd, text, len) != (ssize_t)len || fsync(fd) != 0) {
        int e = errno;
        close(fd);
        return err_errno(err, e, "could not write file \"%s\"", path);
    }
    close(fd);
    return true;
}

/* Quote for a shell word, then the caller quotes for postgresql.conf. */
static void shell_quote(const char *in, char *out, size_t outlen)
{
    size_t n = 0;
    bool plain = in[0] != '\0';

    for (const char *p = in; *p; p++)
        if (!strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789/._-:+=@,", *p))
            plain = false;
    if (plain) {
        snprintf(out, outlen, "%s", in);
        return;
    }
    out[n++] = '\'';
    for (const char *p = in; *p && n + 5 < outlen; p++) {
        if (*p == '\'') {
            memcpy(out + n, "'\\''", 4);
            n += 4;
        } else {
            out[n++] = *p;
        }
    }
    out[n++] = '\'';
    out[n] = '\0';
}

/* A postgresql.conf string literal: single quotes doubled. */
static void conf_append(char *buf, size_t buflen, const char *key, const char *value)
{
    size_t n = strlen(buf);

    n += (size_t)snprintf(buf + n, buflen - n, "%s = '", key);
    for (const char *p = value; *p && n + 4 < buflen; p++) {
        if (*p == '\'')
            buf[n++] = '\'';
        buf[n++] = *p;
    }
    snprintf(buf + n, buflen - n, "'\n");
}

static bool write_recovery(const restore_settings *s, const backup_info *bi, const char *repo_uri,
                           const char *target, pgd_error *err)
{
    char exe[PATH_MAX], exe_q[PATH_MAX * 2], repo_q[PATH_MAX * 2], cmd[PATH_MAX * 5];
    char conf[PATH_MAX * 8];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
    bool auto_conf = bi->pg_version_num >= PG_VERSION_AUTO_CONF;

    if (n < 0)
        return err_errno(err, errno, "could not find the pgdirect executable");
    exe[n] = '\0';
    shell_quote(exe, exe_q, sizeof(exe_q));
    shell_quote(repo_uri, repo_q, sizeof(repo_q));
    snprintf(cmd, sizeof(cmd), "%s wal-fetch --repo %s %%f %%p", exe_q, repo_q);
    snprintf(conf, sizeof(conf), "\n# added by pgdirect restore of backup %s\n", bi->id);
    conf_append(conf, sizeof(conf), "restore_command", cmd);
    if (s->target_key != NULL)
        conf_append(conf, sizeof(conf), s->target_key, s->target_value);
    if (s->target_action != NULL)
        conf_append(conf, sizeof(conf), "recovery_target_action", s->target_action);
    if (!auto_conf)
        return write_file(target, "recovery.conf", conf, O_EXCL, err);
    return write_file(target, "postgresql.auto.conf", conf, O_APPEND, err) &&
           write_file(target, "recovery.signal", "", O_EXCL, err);
}

/*
 * PostgreSQL's backup_manifest, so that `pg_verifybackup -n DIR` can check
 * the restore independently of pgdirect.
 */
static bool copy_pg_manifest(storage *repo, const char *id, const char *target, pgd_error *err)
{
    char path[LAYOUT_PATH_MAX];
    char *text;
    size_t len;
    bool missing, ok;

    layout_backup_object(id, PG_MANIFEST_NAME, path, sizeof(path));
    if (!storage_get(repo, path, &text, &len, &missing, err))
        return missing ? err_set(err, "\"%s\" is missing from repository \"%s\"", path, repo->uri)
                       : false;
    ok = write_file(target, PG_MANIFEST_NAME, text, O_EXCL, err);
    free(text);
    return ok;
}

static bool load_manifest(storage *repo, const char *id, manifest *m, pgd_error *err)
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
        if (!restore_path_is_safe(m->files[i].path))
            return err_set(err,
                           "refusing path \"%s\" in the manifest of backup \"%s\": it would "
                           "land outside the target directory",
                           m->files[i].path, id);
    manifest_build_index(m);
    return true;
}

static void sync_dir_fs(const char *dir)
{
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

    if (fd >= 0) {
        syncfs(fd);
        close(fd);
    }
}

static bool run_restore(const restore_settings *s, const pgd_options *opts, storage *repo,
                        pgd_error *err)
{
    backup_info bi;
    manifest m;
    char **dest = NULL;
    created_dir *dirs = NULL;
    char target_real[PATH_MAX];
    uint64_t bytes = 0;
    double t0 = clock_seconds();
    bool ok = false;

    manifest_init(&m);
    memset(&bi, 0, sizeof(bi));
    if (!backup_info_resolve(repo, s->id, &bi, err) || !load_manifest(repo, bi.id, &m, err))
        return false;
    dest = calloc(m.ntablespaces + 1, sizeof(*dest));
    dirs = calloc(m.ntablespaces + 1, sizeof(*dirs));
    if (dest == NULL || dirs == NULL) {
        err_set(err, "out of memory");
        goto done;
    }
    if (!map_tablespaces(opts, &m, dest, err))
        goto done;
    if (!prepare_empty_dir(s->target, "target directory", &dirs[0], err))
        goto done;
    if (realpath(s->target, target_real) == NULL) {
        err_errno(err, errno, "could not resolve target directory \"%s\"", s->target);
        goto done;
    }
    for (size_t i = 0; i < m.ntablespaces; i++)
        if (!prepare_empty_dir(dest[i], "tablespace directory", &dirs[i + 1], err))
            goto done;
    log_info("restoring backup %s (%llu files, %zu partitions) to \"%s\"", bi.id,
             (unsigned long long)bi.files, m.npartitions, target_real);

    extract_plan plan = {.repo = repo,
                         .backup_id = bi.id,
                         .m = &m,
                         .target = target_real,
                         .spc_dest = (const char *const *)dest,
                         .concurrency = s->concurrency,
                         .progress = s->progress};
    if (!extract_make_dirs(&plan, err))
        goto done;
    for (size_t i = 0; i < m.ntablespaces; i++) {
        char link_path[PATH_MAX];
        if (snprintf(link_path, sizeof(link_path), "%s/pg_tblspc/%u", target_real,
                     m.tablespaces[i].oid) >= (int)sizeof(link_path)) {
            err_set(err, "path too long: \"%s/pg_tblspc\"", target_real);
            goto done;
        }
        if (symlink(dest[i], link_path) != 0) {
            err_errno(err, errno, "could not create tablespace link \"%s\"", link_path);
            goto done;
        }
    }
    if (!extract_partitions(&plan, &bytes, err) ||
        !write_file(target_real, "backup_label", m.backup_label, O_EXCL, err) ||
        !copy_pg_manifest(repo, bi.id, target_real, err) ||
        !write_recovery(s, &bi, repo->uri, target_real, err))
        goto done;
    sync_dir_fs(target_real);
    for (size_t i = 0; i < m.ntablespaces; i++)
        sync_dir_fs(dest[i]);
    {
        double secs = clock_seconds() - t0;
        char size_s[32], time_s[32];
        format_bytes(bytes, size_s, sizeof(size_s));
        format_duration(secs, time_s, sizeof(time_s));
        log_info("restore of backup %s complete: %s in %s (%.1f MB/s); start the server to "
                 "recover%s%s%s",
                 bi.id, size_s, time_s, secs > 0 ? (double)bytes / secs / 1e6 : 0.0,
                 s->target_key ? " to " : "", s->target_key ? s->target_key : "",
                 s->target_key ? "" : " to the end of the archive");
    }
    ok = true;
done:
    if (!ok) {
        for (size_t i = 0; dirs != NULL && i <= m.ntablespaces; i++)
            cleanup_dir(&dirs[i]);
        err_prefix(err, "restore of backup %s failed", bi.id[0] ? bi.id : s->id);
    }
    free(dest);
    free(dirs);
    manifest_free(&m);
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
    if (!read_settings(&opts, &s, &err) || (repo = command_open_repo(&opts, &err)) == NULL)
        rc = command_fail(&err);
    else
        rc = run_restore(&s, &opts, repo, &err) ? EXIT_OK : command_fail(&err);
    storage_free(repo);
    options_free(&opts);
    return rc;
}
