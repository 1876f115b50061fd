/*
 * wal_spool_record.c - the push records of the spool (out/ in wal_spool.h):
 * what the background pusher writes once the repository confirmed a store
 * or once it failed, and what wal-push --archive-async reads to answer
 * PostgreSQL.
 */
#include "wal/wal_spool.h"

#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "pg/wal_segment.h"
#include "wal/wal_spool_internal.h"

#define WAL_SPOOL_OK_EXT    ".ok"
#define WAL_SPOOL_ERROR_EXT ".error"

static bool wal_spool_record_path(const char *dir, const char *name, wal_record_kind kind,
                                  char *out, size_t outlen, pgd_error *err)
{
    if (wal_name_kind(name) == WAL_FILE_UNKNOWN)
        return err_set(err, "\"%s\" is not a WAL file name", name);
    snprintf(out, outlen, "%s/" WAL_SPOOL_OUT "/%s%s", dir, name,
             kind == WAL_RECORD_OK ? WAL_SPOOL_OK_EXT : WAL_SPOOL_ERROR_EXT);
    return true;
}

bool wal_spool_record_ok(const char *dir, const char *name, const wal_file_sum *sum, pgd_error *err)
{
    char path[WAL_SPOOL_PATH_MAX + WAL_NAME_MAX], text[128];

    if (!wal_spool_record_path(dir, name, WAL_RECORD_OK, path, sizeof(path), err))
        return false;
    snprintf(text, sizeof(text), "size %" PRIu64 "\ncrc32c %08" PRIx32 "\n", sum->size, sum->crc);
    return wal_spool_write_text(path, text, true, err);
}

bool wal_spool_record_error(const char *dir, const char *name, const char *msg, pgd_error *err)
{
    char path[WAL_SPOOL_PATH_MAX + WAL_NAME_MAX], text[WAL_SPOOL_TEXT_MAX];

    if (!wal_spool_record_path(dir, name, WAL_RECORD_ERROR, path, sizeof(path), err))
        return false;
    snprintf(text, sizeof(text), "%s\n", msg);
    return wal_spool_write_text(path, text, false, err);
}

bool wal_spool_record_remove(const char *dir, const char *name, wal_record_kind kind,
                             pgd_error *err)
{
    char path[WAL_SPOOL_PATH_MAX + WAL_NAME_MAX];

    if (!wal_spool_record_path(dir, name, kind, path, sizeof(path), err))
        return false;
    if (unlink(path) != 0 && errno != ENOENT)
        return err_errno(err, errno, "could not remove spool file \"%s\"", path);
    return true;
}

bool wal_spool_record_read(const char *dir, const char *name, wal_push_record *rec, pgd_error *err)
{
    char path[WAL_SPOOL_PATH_MAX + WAL_NAME_MAX], text[WAL_SPOOL_TEXT_MAX];
    bool missing;
    uint64_t size;
    uint32_t crc;
    int used = 0;

    memset(rec, 0, sizeof(*rec));
    if (!wal_spool_record_path(dir, name, WAL_RECORD_OK, path, sizeof(path), err) ||
        !wal_spool_read_text(path, text, sizeof(text), &missing, &rec->written, err))
        return false;
    if (!missing) {
        if (sscanf(text, "size %" SCNu64 "\ncrc32c %8" SCNx32 "\n%n", &size, &crc, &used) == 2 &&
            (size_t)used == strlen(text)) {
            rec->kind = WAL_RECORD_OK;
            rec->sum.size = size;
            rec->sum.crc = crc;
            return true;
        }
        /* torn by a crash of the file system, or not ours: push again */
        if (!wal_spool_record_remove(dir, name, WAL_RECORD_OK, err))
            return false;
    }
    if (!wal_spool_record_path(dir, name, WAL_RECORD_ERROR, path, sizeof(path), err) ||
        !wal_spool_read_text(path, text, sizeof(text), &missing, &rec->written, err))
        return false;
    if (missing)
        return true;
    text[strcspn(text, "\n")] = '\0';
    rec->kind = WAL_RECORD_ERROR;
    snprintf(rec->msg, sizeof(rec->msg), "%.*s", (int)sizeof(rec->msg) - 1,
             text[0] != '\0' ? text : "the background pusher failed without saying why");
    return true;
}

static bool wal_spool_record_ends_with(const char *s, const char *suffix, size_t *stem)
{
    size_t ls = strlen(s), lx = strlen(suffix);

    if (ls < lx || strcmp(s + ls - lx, suffix) != 0)
        return false;
    *stem = ls - lx;
    return true;
}

bool wal_spool_record_list(const char *dir, wal_spool_record_cb cb, void *arg, pgd_error *err)
{
    char path[WAL_SPOOL_PATH_MAX + 16];
    struct dirent *de;
    DIR *d;
    bool ok = true;

    snprintf(path, sizeof(path), "%s/" WAL_SPOOL_OUT, dir);
    d = opendir(path);
    if (d == NULL)
        return err_errno(err, errno, "could not open spool directory \"%s\"", path);
    while (ok && (errno = 0, de = readdir(d)) != NULL) {
        char name[WAL_NAME_MAX];
        wal_record_kind kind = WAL_RECORD_NONE;
        size_t stem;

        if (de->d_name[0] == '.')
            continue;
        if (wal_spool_record_ends_with(de->d_name, WAL_SPOOL_OK_EXT, &stem))
            kind = WAL_RECORD_OK;
        else if (wal_spool_record_ends_with(de->d_name, WAL_SPOOL_ERROR_EXT, &stem))
            kind = WAL_RECORD_ERROR;
        else
            stem = strlen(de->d_name);
        if (stem >= sizeof(name))
            continue;
        memcpy(name, de->d_name, stem);
        name[stem] = '\0';
        if (kind != WAL_RECORD_NONE && wal_name_kind(name) == WAL_FILE_UNKNOWN)
            kind = WAL_RECORD_NONE;
        if (kind == WAL_RECORD_NONE)
            snprintf(name, sizeof(name), "%.*s", (int)(sizeof(name) - 1), de->d_name);
        ok = cb(arg, name, kind, err);
    }
    if (ok && errno != 0)
        ok = err_errno(err, errno, "could not read spool directory \"%s\"", path);
    closedir(d);
    return ok;
}

static bool wal_spool_record_sweep_one(void *arg, const char *name, wal_record_kind kind,
                                       pgd_error *err)
{
    char path[WAL_SPOOL_PATH_MAX + WAL_NAME_MAX + 16];

    if (kind != WAL_RECORD_NONE || strstr(name, WAL_SPOOL_TMP_EXT ".") == NULL)
        return true;
    snprintf(path, sizeof(path), "%s/" WAL_SPOOL_OUT "/%s", (const char *)arg, name);
    if (unlink(path) != 0 && errno != ENOENT)
        return err_errno(err, errno, "could not remove spool file \"%s\"", path);
    return true;
}

bool wal_spool_record_sweep(const char *dir, pgd_error *err)
{
    return wal_spool_record_list(dir, wal_spool_record_sweep_one, (void *)dir, err);
}
