/*
 * durable.c - writeback started early, then one parallel fsync pass over
 * everything a restore wrote (see durable.h).
 */
#define _GNU_SOURCE
#include "restore/durable.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "util/text.h"
#include "util/work_pool.h"
#include "util/xmalloc.h"

#define DURABLE_GROW 1024

typedef struct durable_entry {
    char *path;
    bool is_dir;
} durable_entry;

struct durable_list {
    durable_entry *entries;
    size_t n, cap;
};

durable_list *durable_list_new(void)
{
    return xcalloc(1, sizeof(durable_list));
}

void durable_list_free(durable_list *l)
{
    if (l == NULL)
        return;
    for (size_t i = 0; i < l->n; i++)
        free(l->entries[i].path);
    free(l->entries);
    free(l);
}

void durable_list_add(durable_list *l, const char *path, bool is_dir)
{
    if (l->n == l->cap) {
        size_t cap = l->cap + DURABLE_GROW;
        l->entries = xrealloc(l->entries, cap * sizeof(*l->entries));
        l->cap = cap;
    }
    l->entries[l->n].path = xstrdup(path);
    l->entries[l->n++].is_dir = is_dir;
}

size_t durable_list_count(const durable_list *l)
{
    return l->n;
}

static bool durable_fsync(const durable_entry *e, pgd_error *err)
{
    const char *what = e->is_dir ? "directory" : "file";
    int fd = open(e->path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | (e->is_dir ? O_DIRECTORY : 0));

    /*
     * As PostgreSQL's fsync_fname: a directory we may not read (a parent of
     * the target owned by someone else, mode 0711) cannot be opened to be
     * synced; nothing better can be done, so it is skipped.
     */
    if (fd < 0 && e->is_dir && errno == EACCES)
        return true;
    if (fd < 0)
        return err_errno(err, errno, "could not open %s \"%s\" to fsync it", what, e->path);
    /* and some file systems cannot fsync a directory at all */
    if (fsync(fd) != 0 && !(e->is_dir && (errno == EBADF || errno == EINVAL))) {
        int e_fsync = errno;
        close(fd);
        return err_errno(err, e_fsync, "could not fsync %s \"%s\"", what, e->path);
    }
    /* on disk now: out of the page cache (durable_drop_written) */
    if (!e->is_dir)
        (void)posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
    if (close(fd) != 0)
        return err_errno(err, errno, "could not close %s \"%s\"", what, e->path);
    return true;
}

/* A task of the work pool: entry number `i`; the threads need no state of their own. */
static bool durable_task(work_pool *pool, void *worker, size_t i, pgd_error *err)
{
    const durable_list *l = *(const durable_list **)worker;

    (void)pool;
    return durable_fsync(&l->entries[i], err);
}

bool durable_list_sync(durable_list *l, int threads, pgd_error *err)
{
    const durable_list **workers;
    work_pool_job job = {.ntasks = l->n,
                         .worker_size = sizeof(*workers),
                         .run = durable_task,
                         .thread_name = "fsync thread"};
    bool ok;

    if (l->n == 0)
        return true;
    job.threads = threads < 1 ? 1 : (size_t)threads > l->n ? (unsigned)l->n : (unsigned)threads;
    workers = xcalloc(job.threads, sizeof(*workers));
    for (unsigned i = 0; i < job.threads; i++)
        workers[i] = l;
    job.workers = workers;
    ok = work_pool_run(&job, NULL, err);
    free(workers);
    return ok;
}

bool durable_write_file(const char *dir, const char *name, const char *text, int flags,
                        durable_list *l, pgd_error *err)
{
    char path[PATH_MAX];
    size_t len = strlen(text);
    ssize_t n = 0;
    int fd;

    if (!str_format(path, sizeof(path), "%s/%s", dir, name))
        return err_set(err, "path too long: \"%s/%s\"", dir, name);
    fd = open(path, O_WRONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC | flags, 0600);
    if (fd < 0)
        return err_errno(err, errno, "could not create file \"%s\"", path);
    while (len > 0 && (n = write(fd, text, len)) > 0) {
        text += n;
        len -= (size_t)n;
    }
    if (len > 0) {
        int e = n < 0 ? errno : ENOSPC;
        close(fd);
        return err_errno(err, e, "could not write file \"%s\"", path);
    }
    if (close(fd) != 0)
        return err_errno(err, errno, "could not close file \"%s\"", path);
    durable_list_add(l, path, false);
    return true;
}

void durable_write_behind(int fd, off_t done, off_t upto)
{
    if (done > 0 && sync_file_range(fd, 0, done,
                                    SYNC_FILE_RANGE_WAIT_BEFORE | SYNC_FILE_RANGE_WRITE |
                                        SYNC_FILE_RANGE_WAIT_AFTER) == 0)
        (void)posix_fadvise(fd, 0, done, POSIX_FADV_DONTNEED);
    (void)sync_file_range(fd, done, upto > done ? upto - done : 0, SYNC_FILE_RANGE_WRITE);
}

void durable_drop_written(int fd)
{
    if (sync_file_range(fd, 0, 0,
                        SYNC_FILE_RANGE_WAIT_BEFORE | SYNC_FILE_RANGE_WRITE |
                            SYNC_FILE_RANGE_WAIT_AFTER) == 0)
        (void)posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
}
