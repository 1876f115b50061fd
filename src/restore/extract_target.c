/*
 * extract_target.c - where a restored entry lands and how: every path
 * checked before use, tablespace paths sent to their destinations, modes
 * bounded, directories created parents first, and pg_control written under
 * a temporary name and published last (extract.h says why).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "repo/layout.h"
#include "restore/durable.h"
#include "restore/extract_internal.h"
#include "util/text.h"

#define TABLESPACE_DIR "pg_tblspc/"

/*
 * The most a restored file or directory may allow: what PostgreSQL itself
 * creates with group access (initdb -g), never set-id or sticky bits. The
 * owner always keeps read and write (and search on directories).
 */
#define EXTRACT_DIR_MODE_MAX  0750
#define EXTRACT_DIR_MODE_MIN  0700
#define EXTRACT_FILE_MODE_MAX 0640
#define EXTRACT_FILE_MODE_MIN 0600

uint32_t extract_mode(uint32_t mode, bool is_dir)
{
    return is_dir ? (mode & EXTRACT_DIR_MODE_MAX) | EXTRACT_DIR_MODE_MIN
                  : (mode & EXTRACT_FILE_MODE_MAX) | EXTRACT_FILE_MODE_MIN;
}

bool extract_dest_path(const extract_plan *p, const char *path, char *out, size_t outlen,
                       pgd_error *err)
{
    const char *base = p->target, *rest = path;

    if (!manifest_path_is_safe(path))
        return err_set(err,
                       "refusing path \"%s\" in backup \"%s\": it would land outside the "
                       "target directory",
                       path, p->backup_id);
    if (strncmp(path, TABLESPACE_DIR, strlen(TABLESPACE_DIR)) == 0) {
        const char *oid_s = path + strlen(TABLESPACE_DIR);
        char *end;
        unsigned long oid = strtoul(oid_s, &end, 10);
        for (size_t i = 0; end != oid_s && i < p->m->ntablespaces; i++) {
            if (p->m->tablespaces[i].oid != oid)
                continue;
            if (*end != '/')
                return err_set(err,
                               "refusing entry \"%s\" in backup \"%s\": it would replace "
                               "the tablespace link",
                               path, p->backup_id);
            base = p->spc_dest[i];
            rest = end + 1;
            break;
        }
    }
    if ((size_t)snprintf(out, outlen, "%s/%s", base, rest) >= outlen)
        return err_set(err, "path too long: \"%s/%s\"", base, rest);
    return true;
}

static bool extract_target_make_dir(const char *dest, uint32_t mode, pgd_error *err)
{
    struct stat st;

    if (mkdir(dest, 0700) != 0) {
        if (errno != EEXIST)
            return err_errno(err, errno, "could not create directory \"%s\"", dest);
        if (lstat(dest, &st) != 0 || !S_ISDIR(st.st_mode))
            return err_set(err, "\"%s\" exists and is not a directory", dest);
    }
    if (chmod(dest, extract_mode(mode, true)) != 0)
        return err_errno(err, errno, "could not set mode of directory \"%s\"", dest);
    return true;
}

bool extract_make_dirs(const extract_plan *p, pgd_error *err)
{
    /* the index is sorted by path, so a parent always comes before its children */
    for (size_t i = 0; i < p->m->nfiles; i++) {
        const manifest_file *f = &p->m->files[i];
        char dest[PATH_MAX];
        if (!f->is_dir)
            continue;
        if (!extract_dest_path(p, f->path, dest, sizeof(dest), err) ||
            !extract_target_make_dir(dest, f->mode, err))
            return false;
    }
    return true;
}

bool extract_file_dest(const extract_plan *p, const char *path, char *out, size_t outlen,
                       pgd_error *err)
{
    size_t n;

    if (!extract_dest_path(p, path, out, outlen, err))
        return false;
    if (strcmp(path, EXTRACT_PG_CONTROL) != 0)
        return true;
    n = strlen(out);
    if (!str_format(out + n, outlen - n, "%s", EXTRACT_PG_CONTROL_TMP))
        return err_set(err, "path too long: \"%s%s\"", out, EXTRACT_PG_CONTROL_TMP);
    return true;
}

bool extract_publish_control(const extract_plan *p, pgd_error *err)
{
    char tmp[PATH_MAX], dest[PATH_MAX], dir[PATH_MAX];
    char *slash;
    durable_list *l;
    bool ok;

    if (manifest_find(p->m, EXTRACT_PG_CONTROL) < 0)
        return true; /* nothing to publish; PostgreSQL will not start without it anyway */
    if (!extract_file_dest(p, EXTRACT_PG_CONTROL, tmp, sizeof(tmp), err) ||
        !extract_dest_path(p, EXTRACT_PG_CONTROL, dest, sizeof(dest), err))
        return false;
    snprintf(dir, sizeof(dir), "%s", dest);
    slash = strrchr(dir, '/');
    *slash = '\0';
    if (rename(tmp, dest) != 0)
        return err_errno(err, errno, "could not rename file \"%s\" to \"%s\"", tmp, dest);
    /* the rename is durable once the directory is; the file was fsynced already */
    l = durable_list_new();
    durable_list_add(l, dest, false);
    durable_list_add(l, dir, true);
    ok = durable_list_sync(l, 1, err);
    durable_list_free(l);
    return ok;
}

bool extract_list_durable(const extract_plan *p, durable_list *l, pgd_error *err)
{
    for (size_t i = 0; i < p->m->nfiles; i++) {
        char dest[PATH_MAX];
        if (!extract_file_dest(p, p->m->files[i].path, dest, sizeof(dest), err))
            return false;
        durable_list_add(l, dest, p->m->files[i].is_dir);
    }
    return true;
}
