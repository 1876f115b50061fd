/*
 * durable.c - writeback started early, then one parallel fsync pass over
 * everything a restore wrote (see durable.h).
 */
#define _GNU_SOURCE
#include "restore/durable.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define DURABLE_GROW 1024

typedef struct durable_entry {
    char *path;
    bool is_dir;
} durable_entry;

struct durable_list {
    durable_entry *entries;
    size_t n, cap;
};

typedef struct durable_pass {
    const durable_list *l;
    atomic_size_t next;
    atomic_bool failed;
    pthread_mutex_t lock;
    pgd_error err; /* first failure, under lock */
} durable_pass;

durable_list *durable_list_new(void)
{
    return calloc(1, sizeof(durable_list));
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

bool durable_list_add(durable_list *l, const char *path, bool is_dir, pgd_error *err)
{
    if (l->n == l->cap) {
        size_t cap = l->cap + DURABLE_GROW;
        durable_entry *grown = realloc(l->entries, cap * sizeof(*grown));
        if (grown == NULL)
            return err_set(err, "out of memory");
        l->entries = grown;
        l->cap = cap;
    }
    l->entries[l->n].path = strdup(path);
    if (l->entries[l->n].path == NULL)
        return err_set(err, "out of memory");
    l->entries[l->n++].is_dir = is_dir;
    return true;
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
    if (close(fd) != 0)
        return err_errno(err, errno, "could not close %s \"%s\"", what, e->path);
    return true;
}

static void *durable_worker(void *arg)
{
    durable_pass *pass = arg;
    pgd_error err = {0};

    while (!atomic_load(&pass->failed)) {
        size_t i = atomic_fetch_add(&pass->next, 1);
        if (i >= pass->l->n)
            break;
        if (!durable_fsync(&pass->l->entries[i], &err)) {
            pthread_mutex_lock(&pass->lock);
            if (!pass->err.set)
                pass->err = err;
            pthread_mutex_unlock(&pass->lock);
            atomic_store(&pass->failed, true);
        }
    }
    return NULL;
}

bool durable_list_sync(durable_list *l, int threads, pgd_error *err)
{
    durable_pass pass = {.l = l};
    pthread_t *tids;
    int started = 0;

    if (l->n == 0)
        return true;
    if ((size_t)threads > l->n)
        threads = (int)l->n;
    if (threads < 1)
        threads = 1;
    tids = calloc((size_t)threads, sizeof(*tids));
    if (tids == NULL)
        return err_set(err, "out of memory");
    pthread_mutex_init(&pass.lock, NULL);
    for (int i = 0; i < threads; i++) {
        int rc = pthread_create(&tids[i], NULL, durable_worker, &pass);
        if (rc != 0) {
            pthread_mutex_lock(&pass.lock);
            err_errno(&pass.err, rc, "could not start fsync thread %d", i);
            pthread_mutex_unlock(&pass.lock);
            atomic_store(&pass.failed, true);
            break;
        }
        started++;
    }
    for (int i = 0; i < started; i++)
        pthread_join(tids[i], NULL);
    free(tids);
    pthread_mutex_destroy(&pass.lock);
    if (pass.err.set) {
        *err = pass.err;
        return false;
    }
    return true;
}

void durable_start_writeback(int fd, off_t offset, off_t len)
{
    /*
     * Only a hint: it fails on file systems without it (ENOSYS, EINVAL), and
     * a write error it would report is reported again by the final fsync,
     * which is the check that counts.
     */
    (void)sync_file_range(fd, offset, len, SYNC_FILE_RANGE_WRITE);
}
