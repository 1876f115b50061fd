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

static bool layout_all_hex(const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (!isxdigit((unsigned char)s[i]) || islower((unsigned char)s[i]))
            return false;
    return true;
}

bool layout_is_wal_name(const char *name)
{
    size_t len = strlen(name);

    if (len == 24)
        return layout_all_hex(name, 24);
    if (len == 32 && strcmp(name + 24, ".partial") == 0)
        return layout_all_hex(name, 24);
    if (len == 16 && strcmp(name + 8, ".history") == 0)
        return layout_all_hex(name, 8);
    if (len == 40 && name[24] == '.' && strcmp(name + 33, ".backup") == 0)
        return layout_all_hex(name, 24) && layout_all_hex(name + 25, 8);
    return false;
}

void layout_wal_dir(const char *wal_name, char *out, size_t outlen)
{
    snprintf(out, outlen, WAL_DIR "/%.8s", wal_name);
}

void layout_wal_path(const char *wal_name, compress_kind kind, char *out, size_t outlen)
{
    snprintf(out, outlen, WAL_DIR "/%.8s/%s%s", wal_name, wal_name, compress_suffix(kind));
}
