/*
 * layout.c - names of backups and WAL in a repository.
 */
#include "repo/layout.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>

void layout_backup_id(time_t start, char out[BACKUP_ID_LEN + 1])
{
    struct tm tm;

    gmtime_r(&start, &tm);
    strftime(out, BACKUP_ID_LEN + 1, "%Y%m%dT%H%M%SF", &tm);
}

bool layout_is_backup_id(const char *s)
{
    if (strlen(s) != BACKUP_ID_LEN || s[8] != 'T' ||
        (s[BACKUP_ID_LEN - 1] != 'F' && s[BACKUP_ID_LEN - 1] != 'D'))
        return false;
    for (int i = 0; i < BACKUP_ID_LEN - 1; i++)
        if (i != 8 && !isdigit((unsigned char)s[i]))
            return false;
    return true;
}

void layout_sentinel_path(const char *id, char *out, size_t outlen)
{
    snprintf(out, outlen, BACKUPS_DIR "/%s" SENTINEL_SUFFIX, id);
}

void layout_backup_dir(const char *id, char *out, size_t outlen)
{
    snprintf(out, outlen, BACKUPS_DIR "/%s", id);
}

void layout_manifest_path(const char *id, char *out, size_t outlen)
{
    layout_backup_object(id, MANIFEST_NAME, out, outlen);
}

void layout_backup_object(const char *id, const char *name, char *out, size_t outlen)
{
    snprintf(out, outlen, BACKUPS_DIR "/%s/%s", id, name);
}

void layout_partition_name(unsigned number, compress_kind kind, char *out, size_t outlen)
{
    snprintf(out, outlen, "part_%04u.tar%s", number, compress_suffix(kind));
}

void layout_wal_dir(const char *wal_name, char *out, size_t outlen)
{
    snprintf(out, outlen, WAL_DIR "/%.*s", WAL_TLI_NAME_LEN, wal_name);
}

void layout_wal_path(const char *wal_name, compress_kind kind, char *out, size_t outlen)
{
    snprintf(out, outlen, WAL_DIR "/%.*s/%s%s", WAL_TLI_NAME_LEN, wal_name, wal_name,
             compress_suffix(kind));
}
