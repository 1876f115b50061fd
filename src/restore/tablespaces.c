/*
 * tablespaces.c - tablespace destinations, checked, and their links (see
 * tablespaces.h).
 */
#define _GNU_SOURCE
#include "restore/tablespaces.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "restore/links.h"
#include "util/log.h"
#include "util/text.h"

#define TABLESPACES_DIR "pg_tblspc"

bool tablespaces_map(const manifest *m, char *const *map, size_t nmap, const char **dest,
                     pgd_error *err)
{
    for (size_t i = 0; i < m->ntablespaces; i++)
        dest[i] = m->tablespaces[i].location;
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

/* Destination i (0: the target directory) and j overlap: one is, or lies in, the other. */
static bool tablespaces_overlap(char (*resolved)[PATH_MAX], size_t i, size_t j)
{
    return target_dir_is_within(resolved[i], resolved[j]) ||
           target_dir_is_within(resolved[j], resolved[i]);
}

bool tablespaces_check(const char *target, const manifest *m, const char *const *dest,
                       pgd_error *err)
{
    size_t n = m->ntablespaces + 1;
    char(*resolved)[PATH_MAX] = calloc(n, PATH_MAX);
    bool ok;

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
    return durable_list_add(l, path, true, err);
}
