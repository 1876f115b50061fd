/*
 * backup_read.c - a backup's manifest and backup_manifest, as a restore
 * reads them (see backup_read.h).
 */
#include "restore/backup_read.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>

#include "repo/layout.h"
#include "restore/extract.h"
#include "restore/links.h"

/* Every path inside the target, every partition name one the backup writes. */
static bool backup_read_check(const manifest *m, const char *id, pgd_error *err)
{
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
    return true;
}

bool backup_read_manifest(storage *repo, const char *id, bool allow_external_links, manifest *m,
                          pgd_error *err)
{
    bool unread;

    if (!manifest_load(repo, id, m, &unread, err) || !backup_read_check(m, id, err))
        return false;
    manifest_build_index(m);
    return links_check(m, id, allow_external_links, err);
}

bool backup_read_pg_manifest(storage *repo, const char *id, const char *target, durable_list *l,
                             pgd_error *err)
{
    char path[LAYOUT_PATH_MAX];
    char *text;
    size_t len;
    bool missing, ok;

    layout_backup_object(id, PG_MANIFEST_NAME, path, sizeof(path));
    if (!storage_get(repo, path, &text, &len, &missing, err))
        return missing ? err_set(err, "\"%s\" is missing from repository \"%s\"", path, repo->uri)
                       : false;
    ok = durable_write_file(target, PG_MANIFEST_NAME, text, O_EXCL, l, err);
    free(text);
    return ok;
}
