/*
 * links.c - a backup's symbolic links: resolved against the manifest
 * before anything is written, created last (see links.h).
 */
#define _GNU_SOURCE
#include "restore/links.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "util/log.h"
#include "util/xmalloc.h"

#define LINKS_TABLESPACE_DIR "pg_tblspc/"

/* Is path[0..len) "pg_tblspc/<oid>" for a tablespace of the backup (a link restore makes)? */
static bool links_is_tablespace_link(const manifest *m, const char *path, size_t len)
{
    size_t dir = strlen(LINKS_TABLESPACE_DIR);
    char oid[16];

    if (len <= dir || len - dir >= sizeof(oid) || strncmp(path, LINKS_TABLESPACE_DIR, dir) != 0)
        return false;
    memcpy(oid, path + dir, len - dir);
    oid[len - dir] = '\0';
    for (size_t i = 0; i < m->ntablespaces; i++) {
        char name[16];
        snprintf(name, sizeof(name), "%u", m->tablespaces[i].oid);
        if (strcmp(name, oid) == 0)
            return true;
    }
    return false;
}

/*
 * Length of the part of `path` that names the directory it is restored
 * into: "pg_tblspc/<oid>/" under a tablespace of the backup, else 0 (the
 * target directory).
 */
static size_t links_root_len(const manifest *m, const char *path)
{
    const char *slash;

    if (strncmp(path, LINKS_TABLESPACE_DIR, strlen(LINKS_TABLESPACE_DIR)) != 0)
        return 0;
    slash = strchr(path + strlen(LINKS_TABLESPACE_DIR), '/');
    if (slash == NULL || !links_is_tablespace_link(m, path, (size_t)(slash - path)))
        return 0;
    return (size_t)(slash - path) + 1;
}

/* A path being resolved: the backup path so far, never shorter than its root. */
typedef struct links_cursor {
    char path[PATH_MAX];
    size_t len, root;
} links_cursor;

/* "..": false when it would climb out of the root. */
static bool links_cursor_up(links_cursor *c)
{
    if (c->len == c->root)
        return false;
    while (c->len > c->root && c->path[c->len - 1] != '/')
        c->len--;
    if (c->len > c->root)
        c->len--; /* the separator */
    c->path[c->len] = '\0';
    return true;
}

static bool links_cursor_down(links_cursor *c, const char *name, size_t n)
{
    size_t sep = c->len > c->root ? 1 : 0;

    if (c->len + sep + n >= sizeof(c->path))
        return false;
    if (sep)
        c->path[c->len++] = '/';
    memcpy(c->path + c->len, name, n);
    c->len += n;
    c->path[c->len] = '\0';
    return true;
}

/*
 * Walk `target` from the link's directory as the kernel would, with the
 * backup's own links substituted where the path meets them. Only the
 * manifest is consulted: the restored tree holds nothing else.
 */
links_where links_resolve(const manifest *m, size_t i)
{
    const manifest_link *l = &m->links[i];
    links_cursor c = {.root = links_root_len(m, l->path)};
    char *pending, *next;
    size_t pos = 0;
    unsigned followed = 0;
    links_where where = LINKS_INSIDE;

    if (l->target[0] == '/')
        return LINKS_OUTSIDE;
    if (strlen(l->path) >= sizeof(c.path))
        return LINKS_UNRESOLVABLE;
    pending = xstrdup(l->target);
    c.len = strlen(l->path);
    memcpy(c.path, l->path, c.len + 1);
    links_cursor_up(&c); /* the directory holding the link */
    while (pending[pos] != '\0') {
        size_t n = strcspn(pending + pos, "/");
        const char *name = pending + pos;
        long k;

        pos += n + (pending[pos + n] == '/');
        if (n == 0 || (n == 1 && name[0] == '.'))
            continue;
        if (n == 2 && name[0] == '.' && name[1] == '.') {
            if (!links_cursor_up(&c)) {
                where = LINKS_OUTSIDE;
                break;
            }
            continue;
        }
        if (!links_cursor_down(&c, name, n)) {
            where = LINKS_UNRESOLVABLE;
            break;
        }
        if (c.root == 0 && links_is_tablespace_link(m, c.path, c.len)) {
            where = LINKS_OUTSIDE;
            break;
        }
        k = manifest_find_link(m, c.path);
        if (k < 0)
            continue;
        /* a link of the backup: go on from its directory with its target */
        if (++followed > LINKS_FOLLOW_MAX) {
            where = LINKS_UNRESOLVABLE;
            break;
        }
        if (m->links[k].target[0] == '/') {
            where = LINKS_OUTSIDE;
            break;
        }
        links_cursor_up(&c);
        next = xasprintf("%s/%s", m->links[k].target, pending + pos);
        free(pending);
        pending = next;
        pos = 0;
    }
    free(pending);
    return where;
}

/* No ancestor of `path` may be a link: the restore would write through it. */
static bool links_check_ancestors(const manifest *m, const char *path, const char *backup_id,
                                  pgd_error *err)
{
    char prefix[PATH_MAX];

    for (const char *slash = strchr(path, '/'); slash != NULL; slash = strchr(slash + 1, '/')) {
        size_t n = (size_t)(slash - path);
        if (n >= sizeof(prefix))
            return err_set(err, "path too long: \"%s\"", path);
        memcpy(prefix, path, n);
        prefix[n] = '\0';
        if (manifest_find_link(m, prefix) >= 0)
            return err_set(err,
                           "refusing \"%s\" in backup \"%s\": it lies below the link \"%s\", "
                           "through which the restore would write",
                           path, backup_id, prefix);
    }
    return true;
}

static bool links_check_one(const manifest *m, size_t i, const char *backup_id, bool allow_external,
                            pgd_error *err)
{
    const manifest_link *l = &m->links[i];
    links_where where;

    if (!manifest_path_is_safe(l->path))
        return err_set(err,
                       "refusing path \"%s\" in the manifest of backup \"%s\": it would land "
                       "outside the target directory",
                       l->path, backup_id);
    if ((i > 0 && strcmp(m->links[i - 1].path, l->path) == 0) || manifest_find(m, l->path) >= 0)
        return err_set(err, "refusing link \"%s\" in backup \"%s\": the manifest lists it twice",
                       l->path, backup_id);
    if (links_is_tablespace_link(m, l->path, strlen(l->path)))
        return err_set(err,
                       "refusing link \"%s\" in backup \"%s\": it would replace the tablespace "
                       "link",
                       l->path, backup_id);
    if (!links_check_ancestors(m, l->path, backup_id, err))
        return false;
    where = links_resolve(m, i);
    if (where == LINKS_INSIDE)
        return true;
    if (!allow_external)
        return err_set(err,
                       "refusing link \"%s\" -> \"%s\" in backup \"%s\": it %s (restore it as "
                       "it is with --allow-external-links)",
                       l->path, l->target, backup_id,
                       where == LINKS_OUTSIDE ? "points outside the target directory"
                                              : "cannot be resolved (too many levels of links)");
    log_info("link \"%s\" -> \"%s\" %s; restored as it is (--allow-external-links)", l->path,
             l->target,
             where == LINKS_OUTSIDE ? "points outside the target directory" : "cannot be resolved");
    return true;
}

bool links_check(const manifest *m, const char *backup_id, bool allow_external, pgd_error *err)
{
    if (m->nlinks == 0)
        return true;
    for (size_t i = 0; i < m->nlinks; i++)
        if (!links_check_one(m, i, backup_id, allow_external, err))
            return false;
    for (size_t i = 0; i < m->nfiles; i++)
        if (!links_check_ancestors(m, m->files[i].path, backup_id, err))
            return false;
    return true;
}

bool links_make(const char *target, const char *path, bool reuse, int *errnum)
{
    char buf[PATH_MAX];
    ssize_t n;

    if (symlink(target, path) == 0)
        return true;
    *errnum = errno;
    if (errno != EEXIST || !reuse)
        return false;
    n = readlink(path, buf, sizeof(buf) - 1);
    if (n < 0)
        return false;
    buf[n] = '\0';
    return strcmp(buf, target) == 0;
}

bool links_create(const extract_plan *p, pgd_error *err)
{
    for (size_t i = 0; i < p->m->nlinks; i++) {
        const manifest_link *l = &p->m->links[i];
        char dest[PATH_MAX];

        if (!extract_dest_path(p, l->path, dest, sizeof(dest), err))
            return false;
        int e;
        if (!links_make(l->target, dest, p->delta, &e))
            return err_errno(err, e, "could not create symbolic link \"%s\"", dest);
    }
    return true;
}
