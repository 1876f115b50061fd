/*
 * extract.c - parallel, verified extraction of backup partitions: each
 * partition read by a worker, its entries checked against the manifest, a
 * full backup's files written as they come (with restore --delta, compared
 * first: extract_io.c); a delta's increments and its older backups are
 * handed to assemble.c. Where entries land is extract_target.c's.
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

#include "compress/compress.h"
#include "repo/increment.h"
#include "repo/layout.h"
#include "repo/tar.h"
#include "restore/durable.h"
#include "util/crc32c.h"
#include "util/progress.h"
#include "util/work_pool.h"
#include "util/xmalloc.h"

/* a large file's writeback starts every this many bytes, not only at its end */
#define EXTRACT_WRITEBACK_EVERY (32 * 1024 * 1024)

/*
 * The data of a file's tar entry into the file, checked against the
 * manifest's CRC-32C: a new file written through, or (restore --delta) an
 * existing one compared first; *changed when anything was written.
 */
static bool extract_file_data(extract_worker *w, work_pool *pool, tar_reader *tr, int fd,
                              const char *dest, const tar_entry *e, const manifest_file *f,
                              const char *part_name, bool *changed, pgd_error *err)
{
    const extract_plan *p = w->sh->p;
    uint32_t crc = CRC32C_INIT;
    uint64_t left = f->size, written = 0, flushed = 0;

    while (left > 0) {
        size_t n;
        if (work_pool_stopping(pool))
            return false;
        if (!tar_reader_data(tr, w->buf, left < EXTRACT_CHUNK ? (size_t)left : EXTRACT_CHUNK, &n,
                             err))
            return false;
        if (n == 0)
            return err_set(err, "file \"%s\" in backup \"%s\" ends early", e->path, p->backup_id);
        crc = crc32c_update(crc, w->buf, n);
        if (p->delta ? !extract_delta_write(p, w->cmp, fd, dest, w->buf, n, written, changed, err)
                     : !extract_write_all(fd, w->buf, n, dest, err))
            return false;
        left -= n;
        written += n;
        if (written - flushed >= EXTRACT_WRITEBACK_EVERY) {
            durable_start_writeback(fd, (off_t)flushed, (off_t)(written - flushed));
            flushed = written;
        }
        work_pool_advance(pool, n);
    }
    if (crc32c_final(crc) != f->crc)
        return err_set(err,
                       "checksum mismatch for file \"%s\" in backup \"%s\" (partition \"%s\"): "
                       "%08x, the manifest says %08x",
                       e->path, p->backup_id, part_name, crc32c_final(crc), f->crc);
    /* the final fsync pass (restore/durable.h) finds it written already */
    durable_start_writeback(fd, (off_t)flushed, 0);
    return true;
}

static bool extract_file(extract_worker *w, work_pool *pool, tar_reader *tr, const tar_entry *e,
                         size_t part_idx, const char *part_name, pgd_error *err)
{
    const extract_plan *p = w->sh->p;
    long idx = manifest_find(p->m, e->path);
    const manifest_file *f;
    char dest[PATH_MAX];
    struct timespec times[2];
    struct stat st;
    bool changed;
    int fd;

    /* the path first: a hostile name is refused as such, whatever the manifest says */
    if (!extract_file_dest(p, e->path, dest, sizeof(dest), err))
        return false;
    if (idx < 0 || p->m->files[idx].is_dir || p->m->files[idx].partition != part_idx + 1 ||
        p->m->files[idx].increment)
        return err_set(err,
                       "file \"%s\" in partition \"%s\" of backup \"%s\" is not in "
                       "the manifest",
                       e->path, part_name, p->backup_id);
    f = &p->m->files[idx];
    if (!extract_entry_size_matches(e, f, part_name, p->backup_id, err))
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
    if (!extract_file_data(w, pool, tr, fd, dest, e, f, part_name, &changed, err))
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
    w->sh->restored[idx] = 1;
    return true;
fail:
    close(fd);
    /* an existing file's old bytes are gone already; delta_dir.h's retired pg_control guards it */
    if (!p->delta)
        unlink(dest);
    return false;
}

/* A link's tar entry must be the manifest's; links_create makes it, after every file. */
static bool extract_link_entry(extract_worker *w, const tar_entry *e, size_t part_idx,
                               const char *part_name, pgd_error *err)
{
    const extract_plan *p = w->sh->p;
    char dest[PATH_MAX];
    long idx;

    if (!extract_dest_path(p, e->path, dest, sizeof(dest), err))
        return false;
    idx = manifest_find_link(p->m, e->path);
    if (idx < 0 || p->m->links[idx].partition != part_idx + 1 || e->linkpath == NULL ||
        strcmp(e->linkpath, p->m->links[idx].target) != 0)
        return err_set(err,
                       "refusing link \"%s\" -> \"%s\" in partition \"%s\" of backup \"%s\": "
                       "the manifest does not list it",
                       e->path, e->linkpath ? e->linkpath : "", part_name, p->backup_id);
    w->sh->links_seen[idx] = 1;
    return true;
}

/* One entry of a partition: a file is written, a directory or link checked against the manifest. */
static bool extract_entry(extract_worker *w, work_pool *pool, tar_reader *tr, const tar_entry *e,
                          size_t part_idx, const char *part_name, pgd_error *err)
{
    const extract_plan *p = w->sh->p;
    char dest[PATH_MAX];

    char real[PATH_MAX];

    /* an older backup of a chain: only its files' data matters, the newest decides the rest */
    if (w->sh->layer > 0)
        return e->type == TAR_FILE ? assemble_older_file(w, pool, tr, e, part_idx, part_name, err)
                                   : true;
    switch (e->type) {
    case TAR_FILE:
        if (p->m->delta && increment_file_path(e->path, real, sizeof(real)))
            return assemble_increment(w, pool, tr, e, real, part_idx, part_name, err);
        return extract_file(w, pool, tr, e, part_idx, part_name, err);
    case TAR_DIR:
        return extract_dest_path(p, e->path, dest, sizeof(dest), err) &&
               (manifest_find(p->m, e->path) >= 0 ||
                err_set(err,
                        "directory \"%s\" in partition \"%s\" of backup \"%s\" is not in the "
                        "manifest",
                        e->path, part_name, p->backup_id));
    case TAR_SYMLINK:
        return extract_link_entry(w, e, part_idx, part_name, err);
    case TAR_HARDLINK:
        return err_set(err,
                       "refusing hard link \"%s\" -> \"%s\" in partition \"%s\" of backup "
                       "\"%s\": pgdirect never writes one",
                       e->path, e->linkpath ? e->linkpath : "", part_name, p->backup_id);
    default:
        return err_set(err,
                       "refusing entry \"%s\" of type '%c' in partition \"%s\" of backup \"%s\"",
                       e->path, e->type, part_name, p->backup_id);
    }
}

/* A task of the work pool: partition number `part_idx`, every entry, then its size and CRC. */
static bool extract_partition(work_pool *pool, void *worker, size_t part_idx, pgd_error *err)
{
    extract_worker *w = worker;
    const extract_plan *p = w->sh->p;
    const manifest_partition *part = &w->sh->lm->partitions[part_idx];
    char path[LAYOUT_PATH_MAX];
    tar_reader tr;
    in_stream *in;
    bool missing, end = false, ok = true;

    /* an older backup's partition with nothing a newer one still needs is not read at all */
    if (w->sh->layer > 0 && !w->sh->part_needed[part_idx])
        return true;
    layout_backup_object(w->sh->lid, part->name, path, sizeof(path));
    in = storage_read_open(p->repo, path, &missing, err);
    if (in == NULL)
        return missing ? err_set(err,
                                 "partition \"%s\" of backup \"%s\" is missing from "
                                 "repository \"%s\"",
                                 part->name, w->sh->lid, p->repo->uri)
                       : false;
    in = crc_in_new(in, path, part->size, part->crc, err);
    if (in != NULL)
        in = decompress_in_new(compress_from_suffix(part->name), in, path, err);
    if (in == NULL)
        return false;
    tar_reader_init(&tr, in, path);
    while (ok && !end) {
        tar_entry e;
        if (work_pool_stopping(pool) || !tar_reader_next(&tr, &e, &end, err)) {
            ok = false;
            break;
        }
        if (!end)
            ok = extract_entry(w, pool, &tr, &e, part_idx, part->name, err);
        tar_entry_free(&e);
    }
    /* drain to the end so the partition's size and CRC-32C are checked */
    while (ok) {
        size_t n = 0;
        ok = in_read(in, w->buf, EXTRACT_CHUNK, &n, err);
        if (n == 0)
            break;
    }
    in_close(in);
    return ok;
}

static uint64_t extract_manifest_bytes(const manifest *m)
{
    uint64_t total = 0;

    for (size_t i = 0; i < m->nfiles; i++)
        total += m->files[i].size;
    return total;
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
    progress_start(&meter, p->progress, extract_manifest_bytes(p->m));
    ok = work_pool_run(&job, bytes, err) && extract_check_complete(p, &sh, err);
    if (ok && sh.asm_ != NULL)
        ok = assemble_older_layers(p, &sh, &job, bytes, err) &&
             assemble_finish(p, &sh, workers[0].buf, err);
    progress_finish(&meter);
    for (int i = 0; workers != NULL && i < p->concurrency; i++) {
        free(workers[i].buf);
        free(workers[i].cmp);
    }
    free(workers);
    free(sh.restored);
    free(sh.links_seen);
    free(sh.part_needed);
    for (size_t i = 0; sh.asm_ != NULL && i < p->m->nfiles; i++)
        free(sh.asm_[i].done);
    free(sh.asm_);
    return ok;
}
