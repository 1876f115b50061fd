/*
 * tablespaces.c - tablespace destinations, checked, and their links (see
 * tablespaces.h).
 */
#define _GNU_SOURCE
#include "restore/tablespaces.h"

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "restore/links.h"
#include "util/log.h"
#include "util/text.h"
#include "util/xmalloc.h"

#define TABLESPACES_DIR "pg_tblspc"

bool tablespaces_map(const manifest *m, char *const *map, size_t nmap, const char **dest,
                     tablespaces_from *from, pgd_error *err)
{
    for (size_t i = 0; i < m->ntablespaces; i++) {
        dest[i] = m->tablespaces[i].location;
        from[i] = TABLESPACES_RECORDED;
    }
    for (size_t k = 0; k < nmap; k++) {
        const char *eq = strchr(map[k], '=');
        size_t old_len = eq != NULL ? (size_t)(eq - map[k]) : 0;
        bool matched = false;
        if (eq == NULL || old_len == 0 || eq[1] != '/')
            return err_set(err,
                           "invalid value \"%s\" for option \"--tablespace-map\": expected "
                           "OLD=NEW with an absolute NEW",
                           map[k]);
        for (size_t i = 0; i < m->ntablespaces; i++) {
            const char *location = m->tablespaces[i].location;
            if (strlen(location) == old_len && strncmp(location, map[k], old_len) == 0) {
                dest[i] = eq + 1;
                from[i] = TABLESPACES_MAPPED;
                matched = true;
            }
        }
        if (!matched)
            return err_set(err,
                           "--tablespace-map \"%s\": no tablespace of the backup is at "
                           "\"%.*s\"",
                           map[k], (int)old_len, map[k]);
    }
    for (size_t i = 0; i < m->ntablespaces; i++)
        if (dest[i][0] != '/')
            return err_set(err, "tablespace %u of the backup has a relative location \"%s\"",
                           m->tablespaces[i].oid, dest[i]);
    return true;
}

bool tablespaces_reuse(tablespaces_from from)
{
    return from == TABLESPACES_OWN_LINK || from == TABLESPACES_MAPPED_OWN;
}

/*
 * The existing link `link` (pg_tblspc/<oid> of `target`) points at `own`:
 * refuse what restore --delta must not write into, or through.
 */
static bool tablespaces_own_usable(const char *target, const manifest_tablespace *t,
                                   const char *link, const char *own, pgd_error *err)
{
    char resolved_target[PATH_MAX], resolved_own[PATH_MAX];
    const char *why = NULL;
    struct stat st;

    if (own[0] != '/') {
        why = "a relative path";
    } else if (stat(own, &st) != 0) {
        if (errno != ENOENT && errno != ENOTDIR)
            return err_errno(err, errno, "could not stat \"%s\" (the target of link \"%s\")", own,
                             link);
        why = "nothing (a dangling link)";
    } else if (!S_ISDIR(st.st_mode)) {
        why = "something that is not a directory";
    } else {
        if (!target_dir_resolve(target, resolved_target, sizeof(resolved_target), err) ||
            !target_dir_resolve(own, resolved_own, sizeof(resolved_own), err))
            return false;
        if (target_dir_is_within(resolved_own, resolved_target) ||
            target_dir_is_within(resolved_target, resolved_own))
            why = "a directory that overlaps the data directory itself";
    }
    if (why == NULL)
        return true;
    return err_set(err,
                   "refusing to restore tablespace %u \"%s\": the data directory's link \"%s\" "
                   "points at \"%s\", %s; give --tablespace-map %s=DIR to say where it goes",
                   t->oid, t->name, link, own, why, t->location);
}

/*
 * The destination of a tablespace the directory has no link for: absent
 * or empty, as for a plain restore.
 */
static bool tablespaces_is_free(const char *target, const manifest_tablespace *t, const char *dest,
                                pgd_error *err)
{
    struct stat st;
    const char *why = NULL;
    DIR *d;
    struct dirent *de;

    if (stat(dest, &st) != 0) {
        if (errno != ENOENT)
            return err_errno(err, errno, "could not stat tablespace directory \"%s\"", dest);
        if (lstat(dest, &st) != 0)
            return true; /* absent: created, as by a plain restore */
        why = "is a symbolic link to nothing";
    } else if (!S_ISDIR(st.st_mode)) {
        why = "exists and is not a directory";
    } else if ((d = opendir(dest)) == NULL) {
        return err_errno(err, errno, "could not open tablespace directory \"%s\"", dest);
    } else {
        errno = 0;
        while (why == NULL && (de = readdir(d)) != NULL)
            if (strcmp(de->d_name, ".") != 0 && strcmp(de->d_name, "..") != 0)
                why = "is not empty";
        if (why == NULL && errno != 0) {
            int e = errno;
            closedir(d);
            return err_errno(err, e, "could not read tablespace directory \"%s\"", dest);
        }
        closedir(d);
    }
    if (why == NULL)
        return true;
    return err_set(
        err,
        "refusing to restore tablespace %u \"%s\": the data directory \"%s\" has no "
        "link " TABLESPACES_DIR "/%u, and the tablespace directory \"%s\" %s (it may "
        "be another cluster's); give --tablespace-map %s=DIR with an absent or empty DIR",
        t->oid, t->name, target, t->oid, dest, why, t->location);
}

bool tablespaces_delta(const char *target, const manifest *m, const char **dest,
                       tablespaces_from *from, char (*own)[PATH_MAX], pgd_error *err)
{
    char links[PATH_MAX];
    struct stat st;
    bool has_links;

    if (!str_format(links, sizeof(links), "%s/" TABLESPACES_DIR, target))
        return err_set(err, "path too long: \"%s/" TABLESPACES_DIR "\"", target);
    /* a pg_tblspc that is no directory (a link, say) is not looked into: --delta replaces it */
    has_links = lstat(links, &st) == 0 && S_ISDIR(st.st_mode);
    for (size_t i = 0; i < m->ntablespaces; i++) {
        const manifest_tablespace *t = &m->tablespaces[i];
        char link[PATH_MAX];
        ssize_t n = -1;

        if (!str_format(link, sizeof(link), "%s/%u", links, t->oid))
            return err_set(err, "path too long: \"%s/%u\"", links, t->oid);
        if (has_links && lstat(link, &st) == 0 && S_ISLNK(st.st_mode)) {
            n = readlink(link, own[i], PATH_MAX - 1);
            if (n < 0)
                return err_errno(err, errno, "could not read symbolic link \"%s\"", link);
            own[i][n] = '\0';
        }
        /* a link to where the tablespace goes anyway, absent (left so by a failed --delta
           restore that created it): as if there were no link, so a second run completes */
        if (n < 0 || (strcmp(own[i], dest[i]) == 0 && stat(own[i], &st) != 0 && errno == ENOENT)) {
            if (!tablespaces_is_free(target, t, dest[i], err))
                return false;
        } else if (from[i] == TABLESPACES_MAPPED) {
            from[i] = TABLESPACES_MAPPED_OWN; /* the user's explicit choice */
        } else {
            if (!tablespaces_own_usable(target, t, link, own[i], err))
                return false;
            dest[i] = own[i];
            from[i] = TABLESPACES_OWN_LINK;
        }
    }
    return true;
}

/* Destination i (0: the target directory) and j overlap: one is, or lies in, the other. */
static bool tablespaces_overlap(char (*resolved)[PATH_MAX], size_t i, size_t j)
{
    return target_dir_is_within(resolved[i], resolved[j]) ||
           target_dir_is_within(resolved[j], resolved[i]);
}

bool tablespaces_check(const char *target, const manifest *m, const char *const *dest,
                       const tablespaces_from *from, pgd_error *err)
{
    size_t n = m->ntablespaces + 1;
    char(*resolved)[PATH_MAX] = xcalloc(n, PATH_MAX);
    bool ok;

    ok = target_dir_resolve(target, resolved[0], PATH_MAX, err);
    for (size_t i = 0; ok && i < m->ntablespaces; i++) {
        static const char *const why[] = {
            [TABLESPACES_RECORDED] = "",
            [TABLESPACES_MAPPED] = " (--tablespace-map)",
            [TABLESPACES_OWN_LINK] = " (the data directory's own link)",
            [TABLESPACES_MAPPED_OWN] = " (--tablespace-map)",
        };
        log_info("tablespace %u \"%s\" (\"%s\" in the backup) is restored to \"%s\"%s",
                 m->tablespaces[i].oid, m->tablespaces[i].name, m->tablespaces[i].location, dest[i],
                 why[from[i]]);
        ok = target_dir_resolve(dest[i], resolved[i + 1], PATH_MAX, err);
    }
    for (size_t i = 1; ok && i < n; i++) {
        for (size_t j = 0; ok && j < n; j++) {
            if (i == j || !tablespaces_overlap(resolved, i, j))
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

bool tablespaces_link(const char *target, const manifest *m, const target_dir *dirs, pgd_error *err)
{
    for (size_t i = 0; i < m->ntablespaces; i++) {
        char link_path[PATH_MAX];
        if (!str_format(link_path, sizeof(link_path), "%s/" TABLESPACES_DIR "/%u", target,
                        m->tablespaces[i].oid))
            return err_set(err, "path too long: \"%s/" TABLESPACES_DIR "\"", target);
        /* the destination as given: a symlink in it stays the user's choice */
        int e;
        if (!links_make(dirs[i + 1].path, link_path, dirs[0].reused, &e))
            return err_errno(err, e, "could not create tablespace link \"%s\"", link_path);
    }
    return true;
}

bool tablespaces_add_durable(const char *target, const manifest *m, durable_list *l, pgd_error *err)
{
    char path[PATH_MAX];

    if (m->ntablespaces == 0 || manifest_find(m, TABLESPACES_DIR) >= 0)
        return true;
    if (!str_format(path, sizeof(path), "%s/" TABLESPACES_DIR, target))
        return err_set(err, "path too long: \"%s/" TABLESPACES_DIR "\"", target);
    durable_list_add(l, path, true);
    return true;
}
