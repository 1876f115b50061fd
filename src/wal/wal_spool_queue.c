/*
 * wal_spool_queue.c - the queue of one repository in the spool (queue/ in
 * wal_spool.h): with several repositories, wal-push --archive-async
 * acknowledges a WAL file once one repository holds it and a copy of it
 * waits here for each of the others; that repository's pusher stores the
 * copy when it can, oldest first, and removes it.
 *
 * A copy here is, once acknowledged, the only copy that repository will
 * ever get (PostgreSQL recycles the file): it is written to a temporary
 * name, fsynced, renamed and its directory fsynced before the command
 * acknowledges anything, and it keeps the file's modification time, so
 * that the age of the oldest entry is the age of the WAL it holds.
 */
#define _GNU_SOURCE
#include "wal/wal_spool.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "pg/wal_name.h"
#include "util/sync_dir.h"
#include "util/xmalloc.h"
#include "wal/wal_spool_internal.h"

#define WAL_SPOOL_QUEUE_CHUNK (1024 * 1024)

void wal_spool_queue_path(const char *dir, const char *name, char *out, size_t outlen)
{
    snprintf(out, outlen, "%s/" WAL_SPOOL_QUEUE "/%s", dir, name);
}

/* Every entry of the queue directory, temporaries too; a missing directory is an empty queue. */
static bool wal_spool_queue_walk(const char *dir,
                                 bool (*fn)(void *arg, const char *entry, pgd_error *err),
                                 void *arg, pgd_error *err)
{
    char path[WAL_SPOOL_PATH_MAX + 16];
    struct dirent *de;
    DIR *d;
    bool ok = true;

    snprintf(path, sizeof(path), "%s/" WAL_SPOOL_QUEUE, dir);
    d = opendir(path);
    if (d == NULL) {
        if (errno == ENOENT) /* a spool of before queues, or of a fetcher: empty */
            return true;
        return err_errno(err, errno, "could not open spool directory \"%s\"", path);
    }
    while (ok && (errno = 0, de = readdir(d)) != NULL)
        ok = fn(arg, de->d_name, err);
    if (ok && errno != 0)
        ok = err_errno(err, errno, "could not read spool directory \"%s\"", path);
    closedir(d);
    return ok;
}

typedef struct wal_spool_queue_lister {
    wal_spool_record_cb cb;
    void *arg;
} wal_spool_queue_lister;

static bool wal_spool_queue_list_one(void *arg, const char *entry, pgd_error *err)
{
    wal_spool_queue_lister *l = arg;

    if (entry[0] == '.')
        return true;
    return l->cb(l->arg, entry,
                 wal_name_kind(entry) == WAL_FILE_UNKNOWN ? WAL_RECORD_NONE : WAL_RECORD_OK, err);
}

bool wal_spool_queue_list(const char *dir, wal_spool_record_cb cb, void *arg, pgd_error *err)
{
    wal_spool_queue_lister l = {cb, arg};

    return wal_spool_queue_walk(dir, wal_spool_queue_list_one, &l, err);
}

typedef struct wal_spool_queue_scan {
    const char *dir;
    wal_queue_stat *st;
} wal_spool_queue_scan;

static bool wal_spool_queue_stat_one(void *arg, const char *name, wal_record_kind kind,
                                     pgd_error *err)
{
    wal_spool_queue_scan *s = arg;
    char path[WAL_SPOOL_PATH_MAX + WAL_NAME_MAX + 16];
    struct stat st;

    (void)err;
    if (kind == WAL_RECORD_NONE)
        return true;
    wal_spool_queue_path(s->dir, name, path, sizeof(path));
    if (stat(path, &st) != 0)
        return true; /* taken by the pusher meanwhile */
    s->st->files++;
    s->st->bytes += (uint64_t)st.st_size;
    if (s->st->oldest[0] == '\0' || strcmp(name, s->st->oldest) < 0) {
        snprintf(s->st->oldest, sizeof(s->st->oldest), "%s", name);
        s->st->oldest_mtime = st.st_mtime;
    }
    return true;
}

bool wal_spool_queue_stat(const char *dir, wal_queue_stat *st, pgd_error *err)
{
    wal_spool_queue_scan s = {dir, st};

    memset(st, 0, sizeof(*st));
    return wal_spool_queue_list(dir, wal_spool_queue_stat_one, &s, err);
}

/* Copy `src` into the open `fd` (named `tmp`, for messages). */
static bool wal_spool_queue_copy(const char *src, int fd, const char *tmp, struct stat *st,
                                 pgd_error *err)
{
    unsigned char *buf = xmalloc(WAL_SPOOL_QUEUE_CHUNK);
    int in = open(src, O_RDONLY | O_CLOEXEC);
    bool ok = true;

    if (in < 0 || fstat(in, st) != 0) {
        ok = err_errno(err, errno, "could not open WAL file \"%s\"", src);
        goto out;
    }
    for (;;) {
        ssize_t n = read(in, buf, WAL_SPOOL_QUEUE_CHUNK), off = 0;
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            ok = err_errno(err, errno, "could not read WAL file \"%s\"", src);
            break;
        }
        if (n == 0)
            break;
        while (off < n) {
            ssize_t w = write(fd, buf + off, (size_t)(n - off));
            if (w < 0 && errno == EINTR)
                continue;
            if (w < 0) {
                ok = err_errno(err, errno, "could not write spool file \"%s\"", tmp);
                goto out;
            }
            off += w;
        }
    }
out:
    if (in >= 0)
        close(in);
    free(buf);
    return ok;
}

bool wal_spool_queue_add(const char *dir, const char *name, const char *src, pgd_error *err)
{
    char path[WAL_SPOOL_PATH_MAX + WAL_NAME_MAX + 16], tmp[sizeof(path) + 32];
    struct timespec times[2];
    struct stat st;
    int fd;

    if (wal_name_kind(name) == WAL_FILE_UNKNOWN)
        return err_set(err, "\"%s\" is not a WAL file name", name);
    wal_spool_queue_path(dir, name, path, sizeof(path));
    snprintf(tmp, sizeof(tmp), "%s/" WAL_SPOOL_QUEUE "/.%s" WAL_SPOOL_TMP_EXT ".%d", dir, name,
             (int)getpid());
    fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, WAL_SPOOL_FILE_MODE);
    if (fd < 0)
        return err_errno(err, errno, "could not create spool file \"%s\"", tmp);
    if (!wal_spool_queue_copy(src, fd, tmp, &st, err))
        goto fail;
    times[0] = st.st_atim;
    times[1] = st.st_mtim;
    if (futimens(fd, times) != 0) {
        err_errno(err, errno, "could not set the times of spool file \"%s\"", tmp);
        goto fail;
    }
    return wal_spool_commit(fd, tmp, path, true, err);
fail:
    close(fd);
    unlink(tmp);
    return false;
}

bool wal_spool_queue_remove(const char *dir, const char *name, pgd_error *err)
{
    char path[WAL_SPOOL_PATH_MAX + WAL_NAME_MAX + 16];

    wal_spool_queue_path(dir, name, path, sizeof(path));
    if (unlink(path) != 0 && errno != ENOENT)
        return err_errno(err, errno, "could not remove spool file \"%s\"", path);
    return true;
}

/* A temporary of a copy that was never put in place (".NAME.tmp.PID..."). */
static bool wal_spool_queue_sweep_one(void *arg, const char *entry, pgd_error *err)
{
    if (entry[0] != '.' || strstr(entry, WAL_SPOOL_TMP_EXT ".") == NULL)
        return true;
    return wal_spool_queue_remove(arg, entry, err);
}

bool wal_spool_queue_sweep(const char *dir, pgd_error *err)
{
    return wal_spool_queue_walk(dir, wal_spool_queue_sweep_one, (void *)dir, err);
}

/* The repository a push spool serves, from its info file ("" when it has none). */
static bool wal_spool_queue_info(const char *dir, char *datadir, size_t datadirlen, char *repo,
                                 size_t repolen, pgd_error *err)
{
    char path[WAL_SPOOL_PATH_MAX + 16], text[WAL_SPOOL_TEXT_MAX];
    const char *d, *r;
    bool missing;

    datadir[0] = repo[0] = '\0';
    snprintf(path, sizeof(path), "%s/" WAL_SPOOL_INFO, dir);
    if (!wal_spool_read_text(path, text, sizeof(text), &missing, NULL, err))
        return false;
    if (missing || strncmp(text, "data directory: ", 16) != 0 ||
        (r = strstr(text, "\nrepository: ")) == NULL)
        return true;
    d = text + 16;
    snprintf(datadir, datadirlen, "%.*s", (int)(r - d), d);
    r += strlen("\nrepository: ");
    snprintf(repo, repolen, "%.*s", (int)strcspn(r, "\n"), r);
    return true;
}

bool wal_spool_queue_orphans(const char *root, const char *datadir, const char *const *repo_ids,
                             size_t nrepos, wal_spool_orphan_cb cb, void *arg, pgd_error *err)
{
    struct dirent *de;
    DIR *d = opendir(root);
    bool ok = true;

    if (d == NULL)
        return errno == ENOENT
                   ? true
                   : err_errno(err, errno, "could not open spool directory \"%s\"", root);
    while (ok && (errno = 0, de = readdir(d)) != NULL) {
        char dir[WAL_SPOOL_PATH_MAX], dd[WAL_SPOOL_PATH_MAX], repo[WAL_SPOOL_TEXT_MAX];
        wal_queue_stat st;
        bool known = false;

        if (strncmp(de->d_name, "push-", 5) != 0 ||
            (size_t)snprintf(dir, sizeof(dir), "%s/%s", root, de->d_name) >= sizeof(dir))
            continue;
        if (!wal_spool_queue_info(dir, dd, sizeof(dd), repo, sizeof(repo), err) ||
            !wal_spool_queue_stat(dir, &st, err)) {
            ok = false;
            break;
        }
        if (strcmp(dd, datadir) != 0 || st.files == 0)
            continue;
        for (size_t i = 0; i < nrepos && !known; i++)
            known = strcmp(repo_ids[i], repo) == 0;
        if (!known)
            ok = cb(arg, dir, repo, &st, err);
    }
    if (ok && errno != 0)
        ok = err_errno(err, errno, "could not read spool directory \"%s\"", root);
    closedir(d);
    return ok;
}
