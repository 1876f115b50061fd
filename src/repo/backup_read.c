/*
 * backup_read.c - a backup's manifest, checked as untrusted input (see
 * backup_read.h).
 */
#include "repo/backup_read.h"

#include <string.h>

#include "compress/compress.h"

/* Every path inside the target, every partition name one the backup writes. */
static bool backup_read_check(const manifest *m, const char *id, pgd_error *err)
{
    for (size_t i = 0; i < m->nfiles; i++)
        if (!manifest_path_is_safe(m->files[i].path))
            return err_set(err,
                           "refusing path \"%s\" in the manifest of backup \"%s\": it would "
                           "land outside the target directory",
                           m->files[i].path, id);
    for (size_t i = 0; i < m->npartitions; i++)
        if (!manifest_partition_name_is_valid(m->partitions[i].name, m->compression))
            return err_set(err,
                           "refusing partition \"%s\" in the manifest of backup \"%s\": "
                           "expected a name like \"part_0001.tar%s\"",
                           m->partitions[i].name, id, compress_suffix(m->compression));
    return true;
}

bool backup_read_manifest(storage *repo, const char *id, manifest *m, pgd_error *err)
{
    if (!manifest_load(repo, id, m, err) || !backup_read_check(m, id, err))
        return false;
    manifest_build_index(m);
    /*
     * one entry a path: a second would never be found by its path, and what it says of the file
     * (its size, CRC, partition) would not be what the reader checks (found by fuzz_manifest)
     */
    for (size_t i = 1; i < m->nfiles; i++)
        if (strcmp(m->files[i - 1].path, m->files[i].path) == 0)
            return err_set(err,
                           "refusing path \"%s\" in the manifest of backup \"%s\": the manifest "
                           "lists it twice",
                           m->files[i].path, id);
    return true;
}
