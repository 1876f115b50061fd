/*
 * datadir.c - walk a data directory and its tablespaces, applying the
 * pg_basebackup exclusions.
 */
#define _GNU_SOURCE
#include "pg/datadir.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "pg/pg_version.h"
#include "util/log.h"
#include "util/xmalloc.h"

#define TABLESPACE_DIR "pg_tblspc"
#define INIT_FORK      "_init"
/* a link recorded as a directory whose target is not one: pg_basebackup's mode for it */
#define DATADIR_LINKED_DIR_MODE 0700

static const char *const excluded_top_files[] = {
    "postmaster.pid",  "postmaster.opts",          "backup_label",         "backup_label.old",
    "tablespace_map",  "tablespace_map.old",       "backup_manifest",      "standby.signal",
    "recovery.signal", "postgresql.auto.conf.tmp", "current_logfiles.tmp", NULL};

static const char *const content_excluded_dirs[] = {"pg_wal",       "pg_stat_tmp", "pg_replslot",
                                                    "pg_dynshmem",  "pg_notify",   "pg_serial",
                                                    "pg_snapshots", "pg_subtrans", NULL};

static bool datadir_in_list(const char *const *list, const char *name)
{
    for (; *list != NULL; list++)
        if (strcmp(*list, name) == 0)
            return true;
    return false;
}

bool datadir_is_temp_relation(const char *name)
{
    const char *p = name;

    if (*p++ != 't' || !isdigit((unsigned char)*p))
        return false;
    while (isdigit((unsigned char)*p))
        p++;
    if (*p++ != '_' || !isdigit((unsigned char)*p))
        return false;
    while (isdigit((unsigned char)*p))
        p++;
    return *p == '\0' || *p == '_' || *p == '.';
}

bool datadir_excluded(const char *parent, const char *name, bool is_dir, bool *keep_dir_only)
{
    bool top = parent[0] == '\0';

    *keep_dir_only = false;
    if (strncmp(name, "pgsql_tmp", 9) == 0 || strncmp(name, "pg_internal.init", 16) == 0)
        return true;
    if (top && !is_dir && datadir_in_list(excluded_top_files, name))
        return true;
    if (top && is_dir && datadir_in_list(content_excluded_dirs, name)) {
        *keep_dir_only = true;
        return false;
    }
    if (!is_dir && datadir_is_temp_relation(name))
        return true;
    return false;
}

typedef struct walk_ctx {
    datadir *dd;
    char version_prefix[16]; /* "PG_15_" */
    pgd_error *err;
} walk_ctx;

static void datadir_add_entry(walk_ctx *c, const char *rel, const char *abs, const struct stat *st)
{
    datadir *dd = c->dd;
    datadir_entry *e;

    if (dd->n == dd->cap) {
        size_t cap = dd->cap ? dd->cap * 2 : 1024;
        dd->entries = xrealloc(dd->entries, cap * sizeof(*dd->entries));
        dd->cap = cap;
    }
    e = &dd->entries[dd->n];
    memset(e, 0, sizeof(*e));
    e->path = xstrdup(rel);
    e->source = xstrdup(abs);
    e->is_dir = S_ISDIR(st->st_mode);
    e->size = e->is_dir ? 0 : (uint64_t)st->st_size;
    e->mode = st->st_mode & 07777;
    e->mtime = st->st_mtime;
    dd->n++;
}

/* Leading decimal relfilenode of a relation file name, or 0. */
static unsigned long datadir_relfilenode_of(const char *name)
{
    if (!isdigit((unsigned char)name[0]))
        return 0;
    return strtoul(name, NULL, 10);
}

typedef struct name_list {
    char **names;
    size_t n, cap;
} name_list;

static void datadir_name_list_free(name_list *l)
{
    for (size_t i = 0; i < l->n; i++)
        free(l->names[i]);
    free(l->names);
}

static bool datadir_read_names(const char *abs, name_list *l, pgd_error *err)
{
    DIR *d = opendir(abs);
    struct dirent *de;

    memset(l, 0, sizeof(*l));
    if (d == NULL)
        return err_errno(err, errno, "could not open directory \"%s\"", abs);
    while ((errno = 0, de = readdir(d)) != NULL) {
        if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
            continue;
        if (l->n == l->cap) {
            size_t cap = l->cap ? l->cap * 2 : 64;
            l->names = xrealloc(l->names, cap * sizeof(char *));
            l->cap = cap;
        }
        l->names[l->n++] = xstrdup(de->d_name);
    }
    if (errno != 0) {
        int e = errno;
        closedir(d);
        return err_errno(err, e, "could not read directory \"%s\"", abs);
    }
    closedir(d);
    return true;
}

/*
 * The relfilenodes of a database directory that have an init fork ("<digits>_init"): the
 * unlogged relations, sorted, so that each file's check is a binary search. Built in one pass
 * over the names: a rescan of the directory for every file made the walk quadratic (6.7 s for
 * 40,000 files in one database).
 */
typedef struct init_forks {
    unsigned long *nodes;
    size_t n;
} init_forks;

static int datadir_node_cmp(const void *a, const void *b)
{
    unsigned long x = *(const unsigned long *)a, y = *(const unsigned long *)b;

    return x < y ? -1 : x > y;
}

/* Is `name` an init fork: its relfilenode's digits followed directly by "_init"? */
static bool datadir_is_init_fork(const char *name)
{
    size_t digits = strspn(name, "0123456789");

    return digits > 0 && strncmp(name + digits, INIT_FORK, strlen(INIT_FORK)) == 0;
}

static void datadir_init_forks_collect(const name_list *names, init_forks *out)
{
    size_t n = 0;

    memset(out, 0, sizeof(*out));
    for (size_t i = 0; i < names->n; i++)
        n += datadir_is_init_fork(names->names[i]);
    if (n == 0)
        return;
    out->nodes = xmalloc(n * sizeof(*out->nodes));
    for (size_t i = 0; i < names->n; i++)
        if (datadir_is_init_fork(names->names[i]))
            out->nodes[out->n++] = datadir_relfilenode_of(names->names[i]);
    qsort(out->nodes, out->n, sizeof(*out->nodes), datadir_node_cmp);
}

/* Is `name` a non-init fork of a relation that has an init fork in this directory? */
static bool datadir_is_unlogged_fork(const init_forks *inits, const char *name)
{
    unsigned long node = datadir_relfilenode_of(name);

    if (node == 0 || inits->n == 0 || strstr(name, INIT_FORK) != NULL)
        return false;
    return bsearch(&node, inits->nodes, inits->n, sizeof(*inits->nodes), datadir_node_cmp) != NULL;
}

static bool datadir_walk_dir(walk_ctx *c, const char *abs, const char *rel, bool is_db_parent,
                             bool is_db_dir);

static bool datadir_join(char *out, size_t outlen, const char *a, const char *b, pgd_error *err)
{
    if ((size_t)snprintf(out, outlen, "%s%s%s", a, a[0] ? "/" : "", b) >= outlen)
        return err_set(err, "path too long: \"%s/%s\"", a, b);
    return true;
}

/*
 * Record the tablespace whose pg_tblspc entry is `name` (link_abs its
 * path) in dd; *target gets where the link points. *skipped, and no
 * error, for a name that is not an oid. The one reading of a tablespace
 * link: the walk and datadir_tablespaces both come here.
 */
static bool datadir_tablespace_add(datadir *dd, const char *link_abs, const char *name,
                                   char *target, size_t targetlen, bool *skipped, pgd_error *err)
{
    ssize_t len = readlink(link_abs, target, targetlen - 1);
    datadir_tablespace *grown;
    char *end;
    unsigned long oid = strtoul(name, &end, 10);

    *skipped = false;
    if (len < 0)
        return err_errno(err, errno, "could not read tablespace link \"%s\"", link_abs);
    target[len] = '\0';
    if (*end != '\0' || oid == 0 || oid > UINT32_MAX) {
        log_warn("skipping \"%s\": not a tablespace link", link_abs);
        *skipped = true;
        return true;
    }
    grown = xrealloc(dd->tablespaces, (dd->ntablespaces + 1) * sizeof(*grown));
    dd->tablespaces = grown;
    grown[dd->ntablespaces].oid = (uint32_t)oid;
    grown[dd->ntablespaces].location = xstrdup(target);
    dd->ntablespaces++;
    return true;
}

static bool datadir_walk_tablespace(walk_ctx *c, const char *link_abs, const char *rel,
                                    const char *name)
{
    char target[PATH_MAX];
    name_list names;
    bool ok = true, skipped;

    if (!datadir_tablespace_add(c->dd, link_abs, name, target, sizeof(target), &skipped, c->err))
        return false;
    if (skipped)
        return true;

    /* Only this server version's directory: others are left from before pg_upgrade. */
    if (!datadir_read_names(target, &names, c->err))
        return false;
    for (size_t i = 0; ok && i < names.n; i++) {
        char sub_abs[PATH_MAX], sub_rel[PATH_MAX];
        struct stat st;

        if (strncmp(names.names[i], c->version_prefix, strlen(c->version_prefix)) != 0)
            continue;
        ok = datadir_join(sub_abs, sizeof(sub_abs), target, names.names[i], c->err) &&
             datadir_join(sub_rel, sizeof(sub_rel), rel, names.names[i], c->err);
        if (!ok)
            break;
        if (stat(sub_abs, &st) != 0) {
            ok = err_errno(c->err, errno, "could not stat \"%s\"", sub_abs);
            break;
        }
        datadir_add_entry(c, sub_rel, sub_abs, &st);
        ok = datadir_walk_dir(c, sub_abs, sub_rel, true, false);
    }
    datadir_name_list_free(&names);
    return ok;
}

/*
 * A link where a directory whose contents are left out belongs (pg_wal,
 * pg_stat_tmp...) is recorded as that directory, as pg_basebackup does:
 * *st becomes the directory's (the target's when it is one). pg_tblspc as
 * a link is followed: the tablespace links are in it.
 */
static bool datadir_walk_link_is_dir(const char *parent, const char *name, const char *abs,
                                     struct stat *st)
{
    struct stat target;
    bool keep_dir_only;

    if (parent[0] == '\0' && strcmp(name, TABLESPACE_DIR) == 0)
        keep_dir_only = true;
    else if (datadir_excluded(parent, name, true, &keep_dir_only) || !keep_dir_only)
        return false;
    if (stat(abs, &target) == 0 && S_ISDIR(target.st_mode))
        *st = target;
    else
        st->st_mode = S_IFDIR | DATADIR_LINKED_DIR_MODE;
    return true;
}

/* A symbolic link, recorded with its target. */
static bool datadir_walk_add_link(walk_ctx *c, const char *rel, const char *abs,
                                  const struct stat *st)
{
    char target[PATH_MAX];
    ssize_t len = readlink(abs, target, sizeof(target) - 1);
    datadir_entry *e;

    if (len < 0 && errno == ENOENT) { /* removed while we walked */
        log_info("skipping \"%s\": removed during the backup", abs);
        return true;
    }
    if (len < 0)
        return err_errno(c->err, errno, "could not read symbolic link \"%s\"", abs);
    target[len] = '\0';
    datadir_add_entry(c, rel, abs, st);
    e = &c->dd->entries[c->dd->n - 1];
    e->size = 0;
    e->link = xstrdup(target);
    return true;
}

static bool datadir_walk_dir(walk_ctx *c, const char *abs, const char *rel, bool is_db_parent,
                             bool is_db_dir)
{
    name_list names;
    init_forks inits = {0};
    bool ok = true;

    if (!datadir_read_names(abs, &names, c->err))
        return false;
    if (is_db_dir)
        datadir_init_forks_collect(&names, &inits);
    for (size_t i = 0; ok && i < names.n; i++) {
        const char *name = names.names[i];
        char child_abs[PATH_MAX], child_rel[PATH_MAX];
        bool keep_dir_only;
        struct stat st;

        ok = datadir_join(child_abs, sizeof(child_abs), abs, name, c->err) &&
             datadir_join(child_rel, sizeof(child_rel), rel, name, c->err);
        if (!ok)
            break;
        if (lstat(child_abs, &st) != 0) {
            if (errno == ENOENT) { /* dropped while we walked */
                log_info("skipping \"%s\": removed during the backup", child_abs);
                continue;
            }
            ok = err_errno(c->err, errno, "could not stat \"%s\"", child_abs);
            break;
        }
        if (S_ISLNK(st.st_mode) && strcmp(rel, TABLESPACE_DIR) == 0) {
            ok = datadir_walk_tablespace(c, child_abs, child_rel, name);
            continue;
        }
        /* other links are recorded as links, or as the directory they stand for (datadir.h) */
        if (S_ISLNK(st.st_mode) && !datadir_walk_link_is_dir(rel, name, child_abs, &st)) {
            if (!datadir_excluded(rel, name, false, &keep_dir_only))
                ok = datadir_walk_add_link(c, child_rel, child_abs, &st);
            continue;
        }
        if (!S_ISDIR(st.st_mode) && !S_ISREG(st.st_mode)) {
            log_warn("skipping \"%s\": not a regular file or directory", child_abs);
            continue;
        }
        if (datadir_excluded(rel, name, S_ISDIR(st.st_mode), &keep_dir_only))
            continue;
        if (is_db_dir && S_ISREG(st.st_mode) && datadir_is_unlogged_fork(&inits, name))
            continue;
        datadir_add_entry(c, child_rel, child_abs, &st);
        if (!S_ISDIR(st.st_mode))
            continue;
        if (keep_dir_only) {
            if (strcmp(name, "pg_wal") == 0) {
                struct stat status_st = st;
                ok = datadir_join(child_rel, sizeof(child_rel), "pg_wal", "archive_status", c->err);
                if (ok)
                    datadir_add_entry(c, child_rel, child_abs, &status_st);
            }
            continue;
        }
        ok =
            datadir_walk_dir(c, child_abs, child_rel, strcmp(child_rel, "base") == 0, is_db_parent);
    }
    free(inits.nodes);
    datadir_name_list_free(&names);
    return ok && !c->err->set;
}

bool datadir_walk(datadir *dd, const char *pgdata, int pg_version_num, pgd_error *err)
{
    walk_ctx c = {.dd = dd, .err = err};

    memset(dd, 0, sizeof(*dd));
    snprintf(c.version_prefix, sizeof(c.version_prefix), "PG_%d_",
             pg_version_major(pg_version_num));
    if (!datadir_walk_dir(&c, pgdata, "", false, false)) {
        datadir_free(dd);
        return false;
    }
    return true;
}

bool datadir_tablespaces(datadir *dd, const char *pgdata, pgd_error *err)
{
    char dir[PATH_MAX], target[PATH_MAX];
    name_list names;
    bool ok = true, skipped;

    memset(dd, 0, sizeof(*dd));
    if (!datadir_join(dir, sizeof(dir), pgdata, TABLESPACE_DIR, err))
        return false;
    if (access(dir, F_OK) != 0 && errno == ENOENT)
        return true;
    if (!datadir_read_names(dir, &names, err))
        return false;
    for (size_t i = 0; ok && i < names.n; i++) {
        char link_abs[PATH_MAX];

        ok = datadir_join(link_abs, sizeof(link_abs), dir, names.names[i], err) &&
             datadir_tablespace_add(dd, link_abs, names.names[i], target, sizeof(target), &skipped,
                                    err);
    }
    datadir_name_list_free(&names);
    if (!ok)
        datadir_free(dd);
    return ok;
}

void datadir_free(datadir *dd)
{
    for (size_t i = 0; i < dd->n; i++) {
        free(dd->entries[i].path);
        free(dd->entries[i].source);
        free(dd->entries[i].link);
    }
    for (size_t i = 0; i < dd->ntablespaces; i++)
        free(dd->tablespaces[i].location);
    free(dd->entries);
    free(dd->tablespaces);
    memset(dd, 0, sizeof(*dd));
}
