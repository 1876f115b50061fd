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

#include "repo/increment.h"
#include "repo/layout.h"
#include "repo/manifest.h"
#include "repo/partition_read.h"
#include "repo/backup_read.h"
#include "restore/links.h"
#include "restore/chain.h"
#include "verify/verify_wal.h"
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

/* An increment's bytes, as the partition reader hands them, to its reader (repo/increment.h). */
static bool verify_increment_data(void *arg, const char *buf, size_t n, uint64_t off,
                                  pgd_error *err)
{
    (void)off;
    return increment_reader_feed(arg, buf, n, verify_increment_page, NULL, err);
}

static bool verify_increment_check(void *arg, pgd_error *err)
{
    return increment_reader_finish(arg, err);
}

/* A whole file's bytes: the partition reader checks their size and CRC-32C, nothing else to do. */
static bool verify_whole_data(void *arg, const char *buf, size_t n, uint64_t off, pgd_error *err)
{
    (void)arg;
    (void)buf;
    (void)n;
    (void)off;
    (void)err;
    return true;
}

/*
 * A file entry of the manifest (repo/partition_read.h checked that): met
 * once, its data read to its size and CRC-32C, an increment's own
 * structure and CRCs too.
 */
static bool verify_entry_file(void *arg, partition_read *pr, const partition_read_file *pf,
                              pgd_error *err)
{
    verify_worker *w = arg;
    const manifest_file *f = pf->f;
    increment_reader ir;
    partition_read_sink sink = {.data = verify_whole_data};
    bool ok;

    if (w->sh->seen[pf->idx])
        return err_set(err, "file \"%s\" appears twice in partition \"%s\" of backup \"%s\"",
                       pf->e->path, pr->part_name, pr->backup_id);
    w->sh->seen[pf->idx] = 1;
    if (!f->increment)
        return partition_read_file_data(pr, &sink, err);
    increment_reader_init(&ir, pf->e->path, true, f->size, f->file_size, f->inc_blocks);
    sink = (partition_read_sink){
        .data = verify_increment_data, .check = verify_increment_check, .arg = &ir};
    ok = partition_read_file_data(pr, &sink, err);
    increment_reader_free(&ir);
    return ok;
}

static void verify_link_seen(void *arg, size_t idx)
{
    verify_worker *w = arg;

    w->sh->links_seen[idx] = 1;
}

static const partition_read_ops verify_read_ops = {
    .strict_dirs = true,
    .file = verify_entry_file,
    .link_seen = verify_link_seen,
};

/*
 * Read one partition to its end through the CRC and decompression streams a
 * restore uses (repo/partition_read.h), so its stored size and CRC-32C are
 * checked too. A damaged partition is recorded, not returned: the other
 * partitions are still read. Only an error that says nothing about the data
 * (a partition there that could not be opened, PGD_ERR_TRANSIENT, a signal)
 * fails the task.
 */
static bool verify_partition(work_pool *pool, void *worker, size_t part_idx, pgd_error *err)
{
    verify_worker *w = worker;
    const verify_request *req = w->sh->req;
    pgd_error *perr = &w->sh->part_err[part_idx];
    partition_read pr = {.repo = req->repo,
                         .backup_id = req->bi->id,
                         .m = w->sh->m,
                         .part_idx = part_idx,
                         .pool = pool,
                         .buf = w->buf,
                         .buflen = VERIFY_CHUNK,
                         .ops = &verify_read_ops,
                         .arg = w};

    if (!partition_read_run(&pr, perr) && pr.open_failed) {
        *err = *perr;
        return false;
    }
    if (err_is(perr, PGD_ERR_TRANSIENT)) {
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
        if (err_is(&e, PGD_ERR_TRANSIENT)) {
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
        if (err_is(&e, PGD_ERR_TRANSIENT)) {
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
    if (!backup_read_manifest(req->repo, bi->id, &m, &e) || !links_check(&m, bi->id, true, &e)) {
        manifest_free(&m);
        if (err_is(&e, PGD_ERR_TRANSIENT)) {
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
