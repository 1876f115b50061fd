/*
 * assemble.c - a delta backup's files assembled from its chain, in one
 * pass per backup, newest first (the rules are extract_plan.older's, in
 * extract.h): a bitmap per file says which pages a newer backup wrote
 * already; an older backup fills only the others, and its partitions are
 * read only while some file still needs data.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "repo/increment.h"
#include "restore/durable.h"
#include "restore/extract_internal.h"
#include "util/crc32c.h"
#include "util/log.h"
#include "util/xmalloc.h"

static void assemble_bit_set(unsigned char *bits, uint64_t i)
{
    bits[i / 8] |= (unsigned char)(1u << (i % 8));
}

static bool assemble_bit_get(const unsigned char *bits, uint64_t i)
{
    return (bits[i / 8] >> (i % 8)) & 1u;
}

typedef struct assemble_page_sink {
    const extract_plan *p;
    char *cmp; /* restore --delta: compare before writing */
    int fd;
    const char *dest;
    extract_asm *a;
    uint64_t final_size;
    increment_reader *ir;
} assemble_page_sink;

/* An increment's page: written where no newer backup wrote one, and below the final size. */
static bool assemble_increment_page(void *arg, uint32_t block, const unsigned char *page,
                                    pgd_error *err)
{
    assemble_page_sink *k = arg;
    uint64_t off = (uint64_t)block * INCREMENT_PAGE_SIZE;
    size_t len;

    if (block >= k->a->pages || assemble_bit_get(k->a->done, block))
        return true;
    len = k->final_size - off < INCREMENT_PAGE_SIZE ? (size_t)(k->final_size - off)
                                                    : INCREMENT_PAGE_SIZE;
    if (!extract_put(k->p, k->cmp, k->fd, k->dest, (const char *)page, len, off, err))
        return false;
    assemble_bit_set(k->a->done, block);
    return true;
}

/* An increment's bytes, as the partition reader hands them: its pages go to the file. */
static bool assemble_increment_data(void *arg, const char *buf, size_t n, uint64_t off,
                                    pgd_error *err)
{
    assemble_page_sink *k = arg;

    (void)off;
    return increment_reader_feed(k->ir, buf, n, assemble_increment_page, k, err);
}

/* After an increment's last byte: its own structure (repo/increment.h). */
static bool assemble_increment_check(void *arg, pgd_error *err)
{
    assemble_page_sink *k = arg;

    return increment_reader_finish(k->ir, err);
}

/*
 * An increment entry: of the backup restored (the file is created at its
 * final size) or of an older one (only while the file still needs pages).
 */
bool assemble_increment(extract_worker *w, partition_read *pr, const partition_read_file *pf,
                        pgd_error *err)
{
    extract_shared *sh = w->sh;
    const extract_plan *p = sh->p;
    const manifest_file *lf = pf->f;
    long nidx;
    char dest[PATH_MAX];
    increment_reader ir;
    assemble_page_sink sink = {.p = p, .cmp = w->cmp, .fd = -1, .dest = dest, .ir = &ir};
    partition_read_sink data = {
        .data = assemble_increment_data, .check = assemble_increment_check, .arg = &sink};
    bool ok;

    if (!extract_file_dest(p, pf->path, dest, sizeof(dest), err))
        return false;
    nidx = manifest_find(p->m, pf->path);
    if (sh->layer > 0 && (nidx < 0 || p->m->files[nidx].is_dir || !sh->asm_[nidx].need))
        return true; /* no newer backup needs it: its data is skipped */
    sink.a = &sh->asm_[nidx];
    sink.final_size = p->m->files[nidx].file_size;
    if (sh->layer == 0) {
        sink.a->pages = increment_file_pages(sink.final_size);
        sink.a->done = xcalloc(sink.a->pages / 8 + 1, 1);
        sink.a->need = true;
        /* restore --delta: an existing file (restore/delta_dir.h kept only a plain one) is reused
         */
        sink.fd = open(dest,
                       p->delta ? O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC
                                : O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
                       0600);
        if (sink.fd < 0)
            return err_errno(err, errno, "could not create file \"%s\"", dest);
        if (ftruncate(sink.fd, (off_t)sink.final_size) != 0) {
            err_errno(err, errno, "could not extend file \"%s\"", dest);
            close(sink.fd);
            return false;
        }
    } else {
        sink.fd = open(dest, (p->delta ? O_RDWR : O_WRONLY) | O_NOFOLLOW | O_CLOEXEC);
        if (sink.fd < 0)
            return err_errno(err, errno, "could not open file \"%s\"", dest);
    }
    increment_reader_init(&ir, pf->e->path, true, lf->size, lf->file_size, lf->inc_blocks);
    ok = partition_read_file_data(pr, &data, err);
    increment_reader_free(&ir);
    if (!ok && err->msg[0] != '\0' && strstr(err->msg, sh->lid) == NULL)
        err_prefix(err, "backup \"%s\" (partition \"%s\")", sh->lid, pr->part_name);
    if (close(sink.fd) != 0 && ok)
        ok = err_errno(err, errno, "could not close file \"%s\"", dest);
    if (ok && sh->layer == 0)
        sh->restored[nidx] = 1;
    return ok;
}

/* An older backup's whole copy of a file still being assembled: it fills what is missing. */
typedef struct assemble_whole_sink {
    const extract_plan *p;
    char *cmp;
    int fd;
    const char *dest;
    const extract_asm *a;
    uint64_t final_size;
} assemble_whole_sink;

/* Bytes at `off` of the older copy: each page no newer backup wrote, below the final size. */
static bool assemble_whole_data(void *arg, const char *buf, size_t n, uint64_t off, pgd_error *err)
{
    assemble_whole_sink *k = arg;

    for (uint64_t at = off; at < off + n && at < k->final_size;) {
        uint64_t block = at / INCREMENT_PAGE_SIZE;
        uint64_t end = (block + 1) * INCREMENT_PAGE_SIZE;
        if (end > off + n)
            end = off + n;
        if (end > k->final_size)
            end = k->final_size;
        if (!assemble_bit_get(k->a->done, block) &&
            !extract_put(k->p, k->cmp, k->fd, k->dest, buf + (at - off), (size_t)(end - at), at,
                         err))
            return false;
        at = end;
    }
    return true;
}

static bool assemble_older_whole(extract_worker *w, partition_read *pr,
                                 const partition_read_file *pf, pgd_error *err)
{
    extract_shared *sh = w->sh;
    const extract_plan *p = sh->p;
    const manifest_file *lf = pf->f;
    long nidx = manifest_find(p->m, pf->path);
    extract_asm *a;
    char dest[PATH_MAX];
    assemble_whole_sink k = {.p = p, .cmp = w->cmp, .dest = dest};
    partition_read_sink data = {.data = assemble_whole_data, .arg = &k};
    uint64_t own_pages;
    bool ok;

    if (!extract_file_dest(p, pf->path, dest, sizeof(dest), err))
        return false;
    if (nidx < 0 || p->m->files[nidx].is_dir || sh->asm_[nidx].done == NULL || !sh->asm_[nidx].need)
        return true;
    a = &sh->asm_[nidx];
    k.a = a;
    k.final_size = p->m->files[nidx].file_size;
    k.fd = open(dest, (p->delta ? O_RDWR : O_WRONLY) | O_NOFOLLOW | O_CLOEXEC);
    if (k.fd < 0)
        return err_errno(err, errno, "could not open file \"%s\"", dest);
    /* the bitmap is only updated at the end: a page may straddle two chunks */
    ok = partition_read_file_data(pr, &data, err);
    if (close(k.fd) != 0 && ok)
        ok = err_errno(err, errno, "could not close file \"%s\"", dest);
    if (!ok)
        return false;
    own_pages = increment_file_pages(lf->size);
    for (uint64_t b = 0; b < own_pages && b < a->pages; b++)
        assemble_bit_set(a->done, b);
    /* the base of the file: nothing older can add to it */
    a->need = false;
    return true;
}

/* A file entry of an older backup of the chain: used only when a file still needs it. */
bool assemble_older_file(extract_worker *w, partition_read *pr, const partition_read_file *pf,
                         pgd_error *err)
{
    if (pf->f->increment)
        return assemble_increment(w, pr, pf, err);
    return assemble_older_whole(w, pr, pf, err);
}

/* Which partitions of the backup now read hold a file that still needs data; false if none. */
static bool assemble_mark_needed(extract_shared *sh)
{
    const manifest *lm = sh->lm;
    bool any = false;

    memset(sh->part_needed, 0, lm->npartitions ? lm->npartitions : 1);
    for (size_t j = 0; j < lm->nfiles; j++) {
        long nidx;
        if (lm->files[j].is_dir || lm->files[j].partition == 0 ||
            lm->files[j].partition > lm->npartitions)
            continue;
        nidx = manifest_find(sh->p->m, lm->files[j].path);
        if (nidx >= 0 && sh->asm_[nidx].need) {
            sh->part_needed[lm->files[j].partition - 1] = 1;
            any = true;
        }
    }
    return any;
}

/* Read an assembled file back: its CRC-32C for the restored backup_manifest; its mode and time. */
static bool assemble_read_back(const extract_plan *p, manifest_file *f, char *buf, pgd_error *err)
{
    char dest[PATH_MAX];
    struct timespec times[2] = {{.tv_sec = (time_t)f->mtime}, {.tv_sec = (time_t)f->mtime}};
    uint32_t crc = CRC32C_INIT;
    uint64_t total = 0;
    ssize_t n;
    int fd;

    if (!extract_file_dest(p, f->path, dest, sizeof(dest), err))
        return false;
    fd = open(dest, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
        return err_errno(err, errno, "could not open file \"%s\"", dest);
    while ((n = read(fd, buf, EXTRACT_CHUNK)) > 0) {
        crc = crc32c_update(crc, buf, (size_t)n);
        total += (uint64_t)n;
    }
    if (n < 0 || fchmod(fd, extract_mode(f->mode, false)) != 0 || futimens(fd, times) != 0) {
        int e = errno;
        close(fd);
        return err_errno(err, e, "could not read or set mode or time of \"%s\"", dest);
    }
    durable_drop_written(fd);
    close(fd);
    if (total != f->file_size)
        return err_set(err, "file \"%s\" has %llu bytes after assembly, not %llu", dest,
                       (unsigned long long)total, (unsigned long long)f->file_size);
    f->size = f->file_size;
    f->crc = crc32c_final(crc);
    f->increment = false;
    f->inc_blocks = 0;
    return true;
}

/* Every page of every assembled file was supplied; then each is read back (see extract.h). */
bool assemble_finish(const extract_plan *p, const extract_shared *sh, char *buf, pgd_error *err)
{
    for (size_t i = 0; i < p->m->nfiles; i++) {
        const extract_asm *a = &sh->asm_[i];
        if (a->done == NULL)
            continue;
        for (uint64_t b = 0; b < a->pages; b++)
            if (!assemble_bit_get(a->done, b))
                return err_set(err,
                               "block %llu of file \"%s\" of backup \"%s\" is in no backup of "
                               "its chain",
                               (unsigned long long)b, p->m->files[i].path, p->backup_id);
        if (!assemble_read_back(p, &p->m->files[i], buf, err))
            return false;
    }
    return true;
}

/* The older backups of a delta's chain, newest first, while files still need data. */
bool assemble_older_layers(const extract_plan *p, extract_shared *sh, work_pool_job *job,
                           uint64_t *bytes, pgd_error *err)
{
    for (size_t k = 0; k < p->nolder; k++) {
        uint64_t layer_bytes = 0;
        sh->lm = p->older[k].m;
        sh->lid = p->older[k].backup_id;
        sh->layer = k + 1;
        free(sh->part_needed);
        sh->part_needed = xcalloc(sh->lm->npartitions ? sh->lm->npartitions : 1, 1);
        if (!assemble_mark_needed(sh))
            break;
        log_debug("reading the pages still needed from backup %s", sh->lid);
        job->ntasks = sh->lm->npartitions;
        if (!work_pool_run(job, &layer_bytes, err))
            return false;
        *bytes += layer_bytes;
    }
    return true;
}
