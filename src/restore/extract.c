/*
 * extract.c - parallel, verified extraction of backup partitions: each
 * partition read by a worker through repo/partition_read.h, which checks
 * its entries against the manifest; a full backup's files written as they
 * come (with restore --delta, compared first: extract_io.c); a delta's
 * increments and its older backups are handed to assemble.c. Where entries
 * land is extract_target.c's.
 */
#define _GNU_SOURCE
#include "restore/extract_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "repo/partition_read.h"
#include "restore/durable.h"
#include "util/progress.h"
#include "util/work_pool.h"
#include "util/xmalloc.h"

/* a large file's writeback starts every this many bytes, not only at its end */
#define EXTRACT_WRITEBACK_EVERY (2 * 1024 * 1024)

/* Where a full file's bytes go: written through, or (restore --delta) compared first. */
typedef struct extract_file_sink {
    extract_worker *w;
    int fd;
    const char *dest;
    bool *changed;
    uint64_t flushed;
} extract_file_sink;

static bool extract_file_chunk(void *arg, const char *buf, size_t n, uint64_t off, pgd_error *err)
{
    extract_file_sink *k = arg;
    const extract_plan *p = k->w->sh->p;
    uint64_t written = off + n;

    if (p->delta ? !extract_delta_write(p, k->w->cmp, k->fd, k->dest, buf, n, off, k->changed, err)
                 : !extract_write_all(k->fd, buf, n, k->dest, err))
        return false;
    if (written - k->flushed >= EXTRACT_WRITEBACK_EVERY) {
        durable_write_behind(k->fd, (off_t)k->flushed, (off_t)written);
        k->flushed = written;
    }
    return true;
}

/*
 * The data of a file's tar entry into the file, checked against the
 * manifest's CRC-32C (repo/partition_read.h): a new file written through,
 * or (restore --delta) an existing one compared first; *changed when
 * anything was written.
 */
static bool extract_file_data(extract_worker *w, partition_read *pr, int fd, const char *dest,
                              bool *changed, pgd_error *err)
{
    extract_file_sink k = {.w = w, .fd = fd, .dest = dest, .changed = changed};
    partition_read_sink sink = {.data = extract_file_chunk, .arg = &k};

    if (!partition_read_file_data(pr, &sink, err))
        return false;
    /* the final fsync pass (restore/durable.h) finds it written already, and not cached */
    durable_drop_written(fd);
    return true;
}

static bool extract_file(extract_worker *w, partition_read *pr, const partition_read_file *pf,
                         pgd_error *err)
{
    const extract_plan *p = w->sh->p;
    const manifest_file *f = pf->f;
    char dest[PATH_MAX];
    struct timespec times[2];
    struct stat st;
    bool changed;
    int fd;

    if (!extract_file_dest(p, pf->path, dest, sizeof(dest), err))
        return false;
    /* read and write with --delta: every page is compared first */
    fd = open(dest, (p->delta ? O_RDWR : O_WRONLY) | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
              0600);
    changed = fd >= 0;
    if (fd < 0 && errno == EEXIST && p->delta)
        fd = open(dest, O_RDWR | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
        return err_errno(err, errno, "could not create file \"%s\"", dest);
    if (fstat(fd, &st) != 0) {
        err_errno(err, errno, "could not stat file \"%s\"", dest);
        goto fail;
    }
    if (!S_ISREG(st.st_mode)) {
        err_set(err, "could not write file \"%s\": it is not a regular file", dest);
        goto fail;
    }
    if (!extract_file_data(w, pr, fd, dest, &changed, err))
        goto fail;
    if ((uint64_t)st.st_size > f->size) {
        if (ftruncate(fd, (off_t)f->size) != 0) {
            err_errno(err, errno, "could not truncate file \"%s\"", dest);
            goto fail;
        }
        changed = true;
    }
    times[0].tv_sec = times[1].tv_sec = (time_t)f->mtime;
    times[0].tv_nsec = times[1].tv_nsec = 0;
    /* a file that already matched is left as it is, its mtime too */
    if (((st.st_mode & 07777) != extract_mode(f->mode, false) &&
         fchmod(fd, extract_mode(f->mode, false)) != 0) ||
        (changed && futimens(fd, times) != 0)) {
        err_errno(err, errno, "could not set mode or time of \"%s\"", dest);
        goto fail;
    }
    if (close(fd) != 0) {
        err_errno(err, errno, "could not close file \"%s\"", dest);
        if (!p->delta)
            unlink(dest);
        return false;
    }
    w->sh->restored[pf->idx] = 1;
    return true;
fail:
    close(fd);
    /* an existing file's old bytes are gone already; delta_dir.h's retired pg_control guards it */
    if (!p->delta)
        unlink(dest);
    return false;
}

/*
 * A file entry the partition reader checked against the manifest: a full
 * file written, an increment or an older backup's file handed to
 * assemble.c.
 */
static bool extract_entry_file(void *arg, partition_read *pr, const partition_read_file *pf,
                               pgd_error *err)
{
    extract_worker *w = arg;

    /* a file of a database left out: created empty already (extract_sparse_files), data skipped */
    if (w->sh->layer == 0 && w->sh->p->sparse != NULL && w->sh->p->sparse[pf->idx])
        return true;
    /* an older backup of a chain: only its files' data matters, the newest decides the rest */
    if (w->sh->layer > 0)
        return assemble_older_file(w, pr, pf, err);
    if (pf->f->increment)
        return assemble_increment(w, pr, pf, err);
    return extract_file(w, pr, pf, err);
}

/* The path first: a hostile name is refused as such, whatever the manifest says. */
static bool extract_entry_path(void *arg, const char *path, pgd_error *err)
{
    extract_worker *w = arg;
    char dest[PATH_MAX];

    return extract_dest_path(w->sh->p, path, dest, sizeof(dest), err);
}

/* A link's tar entry is the manifest's; links_create makes it, after every file. */
static void extract_link_seen(void *arg, size_t idx)
{
    extract_worker *w = arg;

    w->sh->links_seen[idx] = 1;
}

static const partition_read_ops extract_read_ops = {
    .check_path = extract_entry_path,
    .file = extract_entry_file,
    .link_seen = extract_link_seen,
};

static const partition_read_ops extract_read_older_ops = {
    .files_only = true,
    .check_path = extract_entry_path,
    .file = extract_entry_file,
};

/* A task of the work pool: partition number `part_idx`, every entry, then its size and CRC. */
static bool extract_partition(work_pool *pool, void *worker, size_t part_idx, pgd_error *err)
{
    extract_worker *w = worker;
    partition_read pr = {.repo = w->sh->p->repo,
                         .backup_id = w->sh->lid,
                         .m = w->sh->lm,
                         .part_idx = part_idx,
                         .pool = pool,
                         .buf = w->buf,
                         .buflen = EXTRACT_CHUNK,
                         .ops = w->sh->layer > 0 ? &extract_read_older_ops : &extract_read_ops,
                         .arg = w};

    /* an older backup's partition with nothing a newer one still needs is not read at all */
    if (w->sh->layer > 0 && !w->sh->part_needed[part_idx])
        return true;
    /* nor one that holds only files of databases left out (extract_plan.sparse) */
    if (w->sh->layer == 0 && w->sh->part_skip != NULL && w->sh->part_skip[part_idx])
        return true;
    __atomic_fetch_add(&w->sh->repo_bytes, w->sh->lm->partitions[part_idx].size, __ATOMIC_RELAXED);
    return partition_read_run(&pr, err);
}

static uint64_t extract_manifest_bytes(const extract_plan *p)
{
    uint64_t total = 0;

    for (size_t i = 0; i < p->m->nfiles; i++)
        if (p->sparse == NULL || !p->sparse[i])
            total += p->m->files[i].size;
    return total;
}

/*
 * A file of a database left out (extract_plan.sparse), created empty at its
 * final size: a sparse file, nothing written. With restore --delta an
 * existing file is emptied first, so no page of the old one survives.
 */
static bool extract_sparse_file(const extract_plan *p, const manifest_file *f, pgd_error *err)
{
    char dest[PATH_MAX];
    struct timespec times[2] = {{.tv_sec = (time_t)f->mtime}, {.tv_sec = (time_t)f->mtime}};
    uint64_t size = f->increment ? f->file_size : f->size;
    struct stat st;
    int fd;

    if (!extract_file_dest(p, f->path, dest, sizeof(dest), err))
        return false;
    fd = open(dest, O_WRONLY | O_CREAT | (p->delta ? 0 : O_EXCL) | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0)
        return err_errno(err, errno, "could not create file \"%s\"", dest);
    if (fstat(fd, &st) != 0) {
        int e = errno;
        close(fd);
        return err_errno(err, e, "could not stat file \"%s\"", dest);
    }
    if (!S_ISREG(st.st_mode)) {
        close(fd);
        return err_set(err, "could not write file \"%s\": it is not a regular file", dest);
    }
    if (ftruncate(fd, 0) != 0 || ftruncate(fd, (off_t)size) != 0 ||
        fchmod(fd, extract_mode(f->mode, false)) != 0 || futimens(fd, times) != 0) {
        int e = errno;
        close(fd);
        return err_errno(err, e, "could not create empty file \"%s\" of %llu bytes", dest,
                         (unsigned long long)size);
    }
    if (close(fd) != 0)
        return err_errno(err, errno, "could not close file \"%s\"", dest);
    return true;
}

/* Every file marked sparse created; the partitions that hold nothing else marked to skip. */
static bool extract_sparse_files(const extract_plan *p, extract_shared *sh, pgd_error *err)
{
    const manifest *m = p->m;

    if (p->sparse == NULL)
        return true;
    sh->part_skip = xmalloc(m->npartitions ? m->npartitions : 1);
    memset(sh->part_skip, 1, m->npartitions ? m->npartitions : 1);
    for (size_t i = 0; i < m->nfiles; i++) {
        if (m->files[i].is_dir)
            continue;
        if (!p->sparse[i]) {
            sh->part_skip[m->files[i].partition - 1] = 0;
            continue;
        }
        if (p->cancel != NULL && *p->cancel)
            return err_set(err, "interrupted by signal %d", (int)*p->cancel);
        if (!extract_sparse_file(p, &m->files[i], err))
            return false;
        sh->restored[i] = 1;
    }
    for (size_t i = 0; i < m->nlinks; i++)
        sh->part_skip[m->links[i].partition - 1] = 0;
    return true;
}

/* Every file and link of the manifest was found in its partition. */
static bool extract_check_complete(const extract_plan *p, const extract_shared *sh, pgd_error *err)
{
    for (size_t i = 0; i < p->m->nfiles; i++)
        if (!p->m->files[i].is_dir && !sh->restored[i])
            return err_set(err, "file \"%s\" of backup \"%s\" was not found in partition \"%s\"",
                           p->m->files[i].path, p->backup_id,
                           p->m->partitions[p->m->files[i].partition - 1].name);
    for (size_t i = 0; i < p->m->nlinks; i++)
        if (!sh->links_seen[i])
            return err_set(err, "link \"%s\" of backup \"%s\" was not found in partition \"%s\"",
                           p->m->links[i].path, p->backup_id,
                           p->m->partitions[p->m->links[i].partition - 1].name);
    return true;
}

bool extract_partitions(const extract_plan *p, uint64_t *bytes, pgd_error *err)
{
    extract_shared sh = {.p = p, .lm = p->m, .lid = p->backup_id};
    extract_worker *workers = xcalloc((size_t)p->concurrency, sizeof(*workers));
    progress_meter meter;
    work_pool_job job = {.threads = (unsigned)p->concurrency,
                         .ntasks = p->m->npartitions,
                         .workers = workers,
                         .worker_size = sizeof(*workers),
                         .run = extract_partition,
                         .thread_name = "restore thread",
                         .cancel = p->cancel,
                         .progress = &meter};
    bool ok;

    *bytes = 0;
    sh.restored = xcalloc(p->m->nfiles ? p->m->nfiles : 1, 1);
    sh.links_seen = xcalloc(p->m->nlinks ? p->m->nlinks : 1, 1);
    if (p->m->delta)
        sh.asm_ = xcalloc(p->m->nfiles ? p->m->nfiles : 1, sizeof(*sh.asm_));
    for (int i = 0; i < p->concurrency; i++)
        workers[i] = (extract_worker){.sh = &sh,
                                      .buf = xmalloc(EXTRACT_CHUNK),
                                      .cmp = p->delta ? xmalloc(EXTRACT_CHUNK) : NULL};
    progress_start(&meter, p->progress, extract_manifest_bytes(p));
    ok = extract_sparse_files(p, &sh, err) && work_pool_run(&job, bytes, err) &&
         extract_check_complete(p, &sh, err);
    if (ok && sh.asm_ != NULL)
        ok = assemble_older_layers(p, &sh, &job, bytes, err) &&
             assemble_finish(p, &sh, workers[0].buf, err);
    progress_finish(&meter);
    if (p->repo_bytes != NULL)
        *p->repo_bytes += sh.repo_bytes;
    for (int i = 0; workers != NULL && i < p->concurrency; i++) {
        free(workers[i].buf);
        free(workers[i].cmp);
    }
    free(workers);
    free(sh.restored);
    free(sh.links_seen);
    free(sh.part_needed);
    free(sh.part_skip);
    for (size_t i = 0; sh.asm_ != NULL && i < p->m->nfiles; i++)
        free(sh.asm_[i].done);
    free(sh.asm_);
    return ok;
}
