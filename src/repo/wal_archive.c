/*
 * wal_archive.c - push, fetch and wait for WAL files in the repository.
 */
#define _GNU_SOURCE
#include "repo/wal_archive.h"

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "repo/layout.h"

#define WAL_IO_CHUNK (1024 * 1024)

static const compress_kind search_order[] = {COMPRESS_LZ4, COMPRESS_ZSTD, COMPRESS_NONE};

bool wal_archive_find(storage *repo, const char *name, bool *found, compress_kind *kind,
                      pgd_error *err)
{
    *found = false;
    for (size_t i = 0; i < sizeof(search_order) / sizeof(search_order[0]); i++) {
        char path[LAYOUT_PATH_MAX];
        layout_wal_path(name, search_order[i], path, sizeof(path));
        if (!storage_exists(repo, path, found, err))
            return false;
        if (*found) {
            *kind = search_order[i];
            return true;
        }
    }
    return true;
}

static bool read_local(const char *path, char **data, size_t *len, pgd_error *err)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    struct stat st;
    size_t done = 0;

    if (fd < 0)
        return err_errno(err, errno, "could not open WAL file \"%s\"", path);
    if (fstat(fd, &st) != 0) {
        close(fd);
        return err_errno(err, errno, "could not stat WAL file \"%s\"", path);
    }
    *data = malloc((size_t)st.st_size + 1);
    if (*data == NULL) {
        close(fd);
        return err_set(err, "out of memory");
    }
    while (done < (size_t)st.st_size) {
        ssize_t n = read(fd, *data + done, (size_t)st.st_size - done);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            int e = n < 0 ? errno : EIO;
            free(*data);
            close(fd);
            return err_errno(err, e, "could not read WAL file \"%s\"", path);
        }
        done += (size_t)n;
    }
    close(fd);
    *len = done;
    return true;
}

/* Does the archived object hold exactly `data`? */
static bool archived_equals(storage *repo, const char *name, compress_kind kind, const char *data,
                            size_t len, bool *equal, pgd_error *err)
{
    char path[LAYOUT_PATH_MAX];
    char *buf = malloc(WAL_IO_CHUNK);
    in_stream *in;
    size_t pos = 0;
    bool missing, ok = true;

    *equal = false;
    if (buf == NULL)
        return err_set(err, "out of memory");
    layout_wal_path(name, kind, path, sizeof(path));
    in = storage_read_open(repo, path, &missing, err);
    if (in != NULL)
        in = decompress_in_new(kind, in, path, err);
    if (in == NULL) {
        free(buf);
        return missing ? err_set(err, "\"%s\" vanished from repository \"%s\"", path, repo->uri)
                       : false;
    }
    *equal = true;
    for (;;) {
        size_t n;
        if (!in_read(in, buf, WAL_IO_CHUNK, &n, err)) {
            ok = false;
            break;
        }
        if (n == 0)
            break;
        if (pos + n > len || memcmp(buf, data + pos, n) != 0) {
            *equal = false;
            break;
        }
        pos += n;
    }
    if (ok && *equal && pos != len)
        *equal = false;
    in_close(in);
    free(buf);
    return ok;
}

bool wal_archive_push(storage *repo, const char *local_path, compress_kind kind, int level,
                      wal_push_result *result, pgd_error *err)
{
    char pathcopy[PATH_MAX], name[NAME_MAX + 1], path[LAYOUT_PATH_MAX];
    compress_kind existing_kind;
    bool found, equal;
    char *data = NULL;
    size_t len = 0;
    out_stream *out;

    snprintf(pathcopy, sizeof(pathcopy), "%s", local_path);
    snprintf(name, sizeof(name), "%s", basename(pathcopy));
    if (!layout_is_wal_name(name))
        return err_set(err,
                       "\"%s\" is not a WAL file name (expected a segment, .partial, "
                       ".history or .backup file)",
                       name);
    if (!read_local(local_path, &data, &len, err))
        return false;
    if (!wal_archive_find(repo, name, &found, &existing_kind, err))
        goto fail;
    if (!found) {
        layout_wal_path(name, kind, path, sizeof(path));
        out = storage_write_open(repo, path, STORAGE_WRITE_NO_REPLACE, err);
        if (out != NULL)
            out = compress_out_new(kind, level, out, path, err);
        if (out == NULL)
            goto fail;
        if (!out_write(out, data, len, err)) {
            out_abort(out);
            goto fail;
        }
        if (out_close(out, err)) {
            free(data);
            *result = WAL_PUSH_STORED;
            return true;
        }
        /* lost a race with another pusher: compare with what won */
        err_clear(err);
        if (!wal_archive_find(repo, name, &found, &existing_kind, err))
            goto fail;
        if (!found) {
            err_set(err, "could not archive WAL file \"%s\" to repository \"%s\"", name, repo->uri);
            goto fail;
        }
    }
    if (!archived_equals(repo, name, existing_kind, data, len, &equal, err))
        goto fail;
    free(data);
    if (!equal)
        return err_set(err,
                       "WAL file \"%s\" is already archived in repository \"%s\" with "
                       "different content",
                       name, repo->uri);
    *result = WAL_PUSH_IDENTICAL;
    return true;
fail:
    free(data);
    return false;
}

bool wal_archive_fetch(storage *repo, const char *name, const char *dest, bool *found,
                       pgd_error *err)
{
    char path[LAYOUT_PATH_MAX], tmp[PATH_MAX];
    char *buf = NULL;
    compress_kind kind;
    in_stream *in;
    bool missing;
    int fd = -1;

    if (!layout_is_wal_name(name))
        return err_set(err, "\"%s\" is not a WAL file name", name);
    if (!wal_archive_find(repo, name, found, &kind, err))
        return false;
    if (!*found)
        return true;
    layout_wal_path(name, kind, path, sizeof(path));
    in = storage_read_open(repo, path, &missing, err);
    if (in == NULL) {
        *found = false;
        return missing; /* removed since we looked: treat as absent */
    }
    in = decompress_in_new(kind, in, path, err);
    if (in == NULL)
        return false;
    snprintf(tmp, sizeof(tmp), "%s.pgdirect.tmp", dest);
    buf = malloc(WAL_IO_CHUNK);
    fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (buf == NULL || fd < 0) {
        if (fd < 0)
            err_errno(err, errno, "could not create file \"%s\"", tmp);
        else
            err_set(err, "out of memory");
        goto fail;
    }
    for (;;) {
        size_t n, off = 0;
        if (!in_read(in, buf, WAL_IO_CHUNK, &n, err))
            goto fail;
        if (n == 0)
            break;
        while (off < n) {
            ssize_t w = write(fd, buf + off, n - off);
            if (w < 0 && errno == EINTR)
                continue;
            if (w < 0) {
                err_errno(err, errno, "could not write file \"%s\"", tmp);
                goto fail;
            }
            off += (size_t)w;
        }
    }
    if (fsync(fd) != 0) {
        err_errno(err, errno, "could not fsync file \"%s\"", tmp);
        goto fail;
    }
    close(fd);
    fd = -1;
    if (rename(tmp, dest) != 0) {
        err_errno(err, errno, "could not rename \"%s\" to \"%s\"", tmp, dest);
        goto fail;
    }
    in_close(in);
    free(buf);
    return true;
fail:
    if (fd >= 0)
        close(fd);
    unlink(tmp);
    in_close(in);
    free(buf);
    return false;
}

bool wal_archive_wait(storage *repo, const char *name, int timeout_s, pgd_error *err)
{
    time_t deadline = time(NULL) + timeout_s;
    compress_kind kind;
    bool found;

    for (;;) {
        if (!wal_archive_find(repo, name, &found, &kind, err))
            return false;
        if (found)
            return true;
        if (time(NULL) >= deadline)
            return err_set(err,
                           "WAL file \"%s\" needed by the backup was not archived to "
                           "repository \"%s\" within %d s (check archive_command and "
                           "pg_stat_archiver)",
                           name, repo->uri, timeout_s);
        usleep(200 * 1000);
    }
}
