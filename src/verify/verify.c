/*
 * verify.c - a stored backup re-read and checked, nothing written (see
 * verify.h): its partitions in parallel, every entry against the manifest,
 * a delta's chain; the WAL part is verify_wal.c's.
 */
#define _GNU_SOURCE
#include "verify/verify.h"

#include <limits.h>

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compress/compress.h"
#include "repo/increment.h"
#include "repo/layout.h"
#include "repo/manifest.h"
#include "repo/tar.h"
#include "repo/backup_read.h"
#include "restore/links.h"
#include "restore/chain.h"
#include "restore/extract.h"
#include "verify/verify_wal.h"
#include "util/crc32c.h"
#include "util/work_pool.h"
#include "util/xmalloc.h"

#define VERIFY_CHUNK (1024 * 1024)
/* ---- partitions ---- */

typedef struct verify_shared {
    const verify_request *req;
    const manifest *m;
    unsigned char *seen;       /* per manifest file or directory */
    unsigned char *links_seen; /* per manifest link */
    pgd_error *part_err;       /* per partition: why it is damaged (set) */
} verify_shared;

typedef struct verify_worker {
    verify_shared *sh;
    char *buf;
} verify_worker;

static bool verify_file_stream(verify_worker *w, work_pool *pool, tar_reader *tr,
                               const tar_entry *e, const manifest_file *f, const char *part_name,
                               increment_reader *ir, uint32_t *crcp, pgd_error *err);

/* Pages of an increment are only checked (header, order, CRCs), never kept. */
static bool verify_increment_page(void *arg, uint32_t block, const unsigned char *page,
                                  pgd_error *err)
{
    (void)arg;
    (void)block;
    (void)page;
    (void)err;
    return true;
}

/* A file's data in the partition: its size and CRC-32C against the manifest. */
static bool verify_file_data(verify_worker *w, work_pool *pool, tar_reader *tr, const tar_entry *e,
                             const manifest_file *f, const char *part_name, pgd_error *err)
{
    uint32_t crc = CRC32C_INIT;
    increment_reader ir;
    bool ok;

    /* an increment's own structure and CRCs too (repo/increment.h) */
    if (f->increment &&
        !increment_reader_init(&ir, e->path, true, f->size, f->file_size, f->inc_blocks, err))
        return false;
    ok = verify_file_stream(w, pool, tr, e, f, part_name, f->increment ? &ir : NULL, &crc, err);
    if (f->increment) {
        ok = ok && increment_reader_finish(&ir, err);
        increment_reader_free(&ir);
    }
    if (!ok)
        return false;
    if (crc32c_final(crc) != f->crc)
        return err_set(err,
                       "checksum mismatch for file \"%s\" in partition \"%s\": %08x, the "
                       "manifest says %08x",
                       e->path, part_name, crc32c_final(crc), f->crc);
    return true;
}

/* Read a file's data to its manifest size: its CRC-32C into *crcp, an increment fed to ir. */
static bool verify_file_stream(verify_worker *w, work_pool *pool, tar_reader *tr,
                               const tar_entry *e, const manifest_file *f, const char *part_name,
                               increment_reader *ir, uint32_t *crcp, pgd_error *err)
{
    uint32_t crc = CRC32C_INIT;
    uint64_t left = f->size;

    while (left > 0) {
        size_t n;
        if (work_pool_stopping(pool))
            return err_set(err, "interrupted");
        if (!tar_reader_data(tr, w->buf, left < VERIFY_CHUNK ? (size_t)left : VERIFY_CHUNK, &n,
                             err))
            return false;
        if (n == 0)
            return err_set(err, "file \"%s\" ends early in partition \"%s\"", e->path, part_name);
        crc = crc32c_update(crc, w->buf, n);
        if (ir != NULL && !increment_reader_feed(ir, w->buf, n, verify_increment_page, NULL, err))
            return false;
        left -= n;
        work_pool_advance(pool, n);
    }
    *crcp = crc;
    return true;
}

/* One tar entry: it must be the manifest's, in the partition the manifest says. */
static bool verify_entry(verify_worker *w, work_pool *pool, tar_reader *tr, const tar_entry *e,
                         size_t part_idx, const char *part_name, pgd_error *err)
{
    const manifest *m = w->sh->m;
    char real[PATH_MAX];
    bool increment;
    long idx;

    switch (e->type) {
    case TAR_FILE:
        /* a delta's increment is stored as dir/INCREMENTAL.name; the manifest has the real path */
        increment = m->delta && increment_file_path(e->path, real, sizeof(real));
        idx = manifest_find(m, increment ? real : e->path);
        if (idx < 0 || m->files[idx].is_dir || m->files[idx].partition != part_idx + 1 ||
            m->files[idx].increment != increment)
            return err_set(err, "file \"%s\" in partition \"%s\" is not in the manifest", e->path,
                           part_name);
        if (w->sh->seen[idx])
            return err_set(err, "file \"%s\" appears twice in partition \"%s\"", e->path,
                           part_name);
        w->sh->seen[idx] = 1;
        return extract_entry_size_matches(e, &m->files[idx], part_name, w->sh->req->bi->id, err) &&
               verify_file_data(w, pool, tr, e, &m->files[idx], part_name, err);
    case TAR_DIR:
        idx = manifest_find(m, e->path);
        if (idx < 0 || !m->files[idx].is_dir)
            return err_set(err, "directory \"%s\" in partition \"%s\" is not in the manifest",
                           e->path, part_name);
        return true;
    case TAR_SYMLINK:
        idx = manifest_find_link(m, e->path);
        if (idx < 0 || m->links[idx].partition != part_idx + 1 || e->linkpath == NULL ||
            strcmp(e->linkpath, m->links[idx].target) != 0)
            return err_set(err, "link \"%s\" in partition \"%s\" is not the manifest's", e->path,
                           part_name);
        w->sh->links_seen[idx] = 1;
        return true;
    default:
        return err_set(err,
                       "entry \"%s\" of type '%c' in partition \"%s\" is not one pgdirect "
                       "writes",
                       e->path, e->type, part_name);
    }
}

/*
 * Read one partition to its end through the CRC and decompression streams a
 * restore uses, so its stored size and CRC-32C are checked too. A damaged
 * partition is recorded, not returned: the other partitions are still
 * read. Only an error that says nothing about the data (err->transient, a
 * signal) fails the task.
 */
static bool verify_partition(work_pool *pool, void *worker, size_t part_idx, pgd_error *err)
{
    verify_worker *w = worker;
    const verify_request *req = w->sh->req;
    const manifest_partition *part = &w->sh->m->partitions[part_idx];
    pgd_error *perr = &w->sh->part_err[part_idx];
    char path[LAYOUT_PATH_MAX];
    tar_reader tr;
    in_stream *in;
    bool missing, end = false, ok = true;

    layout_backup_object(req->bi->id, part->name, path, sizeof(path));
    in = storage_read_open(req->repo, path, &missing, perr);
    if (in == NULL && !missing) {
        /* a partition that cannot be opened (permission, an unreachable store) says nothing about
         * it */
        *err = *perr;
        return false;
    }
    if (in == NULL) {
        err_set(perr, "partition \"%s\" is missing from the repository", part->name);
        goto out;
    }
    in = crc_in_new(in, path, part->size, part->crc, perr);
    if (in != NULL)
        in = decompress_in_new(compress_from_suffix(part->name), in, path, perr);
    if (in == NULL)
        goto out;
    tar_reader_init(&tr, in, path);
    while (ok && !end) {
        tar_entry e;
        if (work_pool_stopping(pool) || !tar_reader_next(&tr, &e, &end, perr)) {
            ok = false;
            break;
        }
        if (!end)
            ok = verify_entry(w, pool, &tr, &e, part_idx, part->name, perr);
        tar_entry_free(&e);
    }
    while (ok) {
        size_t n = 0;
        ok = in_read(in, w->buf, VERIFY_CHUNK, &n, perr);
        if (n == 0)
            break;
    }
    in_close(in);
out:
    if (perr->set && perr->transient) {
        *err = *perr;
        return false;
    }
    return !work_pool_stopping(pool);
}

/* Every file and link of the manifest was met in a partition that is otherwise sound. */
static void verify_complete(const verify_shared *sh, verify_result *r)
{
    const manifest *m = sh->m;

    for (size_t i = 0; i < m->nfiles; i++) {
        const manifest_file *f = &m->files[i];
        if (f->is_dir || sh->seen[i] || sh->part_err[f->partition - 1].set)
            continue;
        verify_problem(r, "file \"%s\" was not found in partition \"%s\"", f->path,
                       m->partitions[f->partition - 1].name);
    }
    for (size_t i = 0; i < m->nlinks; i++) {
        const manifest_link *l = &m->links[i];
        if (sh->links_seen[i] || sh->part_err[l->partition - 1].set)
            continue;
        verify_problem(r, "link \"%s\" was not found in partition \"%s\"", l->path,
                       m->partitions[l->partition - 1].name);
    }
}

static bool verify_partitions(const verify_request *req, const manifest *m, verify_result *r,
                              pgd_error *err)
{
    verify_shared sh = {.req = req, .m = m};
    int threads = req->concurrency < 1 ? 1 : req->concurrency;
    verify_worker *workers = xcalloc((size_t)threads, sizeof(*workers));
    work_pool_job job = {.threads = (unsigned)threads,
                         .ntasks = m->npartitions,
                         .workers = workers,
                         .worker_size = sizeof(*workers),
                         .run = verify_partition,
                         .thread_name = "verify thread",
                         .cancel = req->cancel};
    bool ok;

    sh.seen = xcalloc(m->nfiles ? m->nfiles : 1, 1);
    sh.links_seen = xcalloc(m->nlinks ? m->nlinks : 1, 1);
    sh.part_err = xcalloc(m->npartitions ? m->npartitions : 1, sizeof(*sh.part_err));
    for (int i = 0; i < threads; i++)
        workers[i] = (verify_worker){.sh = &sh, .buf = xmalloc(VERIFY_CHUNK)};
    ok = work_pool_run(&job, &r->file_bytes, err);
    if (ok) {
        for (size_t i = 0; i < m->npartitions; i++)
            if (sh.part_err[i].set)
                verify_problem(r, "%s", sh.part_err[i].msg);
        verify_complete(&sh, r);
    }
    for (int i = 0; workers != NULL && i < threads; i++)
        free(workers[i].buf);
    free(workers);
    free(sh.seen);
    free(sh.links_seen);
    free(sh.part_err);
    return ok;
}

/* ---- one backup ---- */

/* The objects a restore reads besides the partitions. */
static bool verify_objects(const verify_request *req, verify_result *r, pgd_error *err)
{
    char path[LAYOUT_PATH_MAX];
    bool exists = false;
    pgd_error e = {0};

    layout_backup_object(req->bi->id, PG_MANIFEST_NAME, path, sizeof(path));
    if (!storage_exists(req->repo, path, &exists, &e)) {
        if (e.transient) {
            *err = e;
            return false;
        }
        verify_problem(r, "%s", e.msg);
    } else if (!exists) {
        verify_problem(r, "\"%s\" is missing from the repository", path);
    }
    return true;
}

/* A delta is restorable only with its whole chain: every parent there, readable, fitting. */
static bool verify_chain(const verify_request *req, const manifest *m, verify_result *r,
                         pgd_error *err)
{
    chain c;
    pgd_error e = {0};

    if (!chain_load(req->repo, req->bi, m, true, &c, &e)) {
        if (e.transient) {
            *err = e;
            chain_free(&c);
            return false;
        }
        verify_problem(r, "%s", e.msg);
    }
    chain_free(&c);
    return true;
}

bool verify_backup(const verify_request *req, verify_result *r, pgd_error *err)
{
    const backup_info *bi = req->bi;
    manifest m;
    pgd_error e = {0};
    bool ok = true;

    memset(r, 0, sizeof(*r));
    snprintf(r->id, sizeof(r->id), "%s", bi->id);
    if (bi->damaged) {
        verify_problem(r, "%s", bi->damage);
        return true;
    }
    if (!backup_read_manifest(req->repo, bi->id, &m, &e) ||
        !links_check(&m, bi->id, true, &e)) {
        manifest_free(&m);
        if (e.transient) {
            *err = e;
            return false;
        }
        verify_problem(r, "%s", e.msg);
    } else {
        if (m.id == NULL || strcmp(m.id, bi->id) != 0)
            verify_problem(r, "the manifest is that of backup \"%s\"", m.id ? m.id : "");
        r->partitions = m.npartitions;
        for (size_t i = 0; i < m.nfiles; i++)
            if (!m.files[i].is_dir)
                r->files++;
        for (size_t i = 0; i < m.npartitions; i++)
            r->stored_bytes += m.partitions[i].size;
        ok = verify_partitions(req, &m, r, err) && verify_chain(req, &m, r, err);
        manifest_free(&m);
    }
    ok = ok && verify_objects(req, r, err) && verify_wal(req, r, err);
    if (!ok)
        verify_result_free(r); /* verify could not run: nothing of *r is reported */
    return ok;
}
