/*
 * filter_delta.c - a delta backup's choice of pages, and the increment
 * that carries them (see filter_delta.h for which files and pages, and
 * why).
 */
#define _GNU_SOURCE
#include "backup/filter_delta.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backup/block_plan.h"
#include "pg/page_checksum.h"
#include "pg/relfile.h"
#include "repo/increment.h"
#include "util/crc32c.h"
#include "util/log.h"
#include "util/xmalloc.h"

/* PageHeaderData (storage/bufpage.h): where the fields PageIsVerified checks live */
#define FILTER_DELTA_VALID_FLAGS  0x0007 /* PD_VALID_FLAG_BITS */
#define FILTER_DELTA_MAXALIGN     8
#define FILTER_DELTA_REREAD_CHUNK (1024 * 1024)
#define FILTER_DELTA_GROW_PAGES   64 /* the page buffer's first size */

typedef struct filter_delta {
    file_filter base;
    filter_delta_config cfg;
    bool collecting; /* a candidate whose pages are being chosen */
    bool sparse;     /* read by a WAL summary plan: every page handed is a changed one */
    file_filter_file file;
    uint64_t parent_pages; /* pages the parent had: from here on the file grew */
    uint64_t received;     /* bytes of the file seen */
    uint32_t *block;
    unsigned char *pages;
    size_t npages, cap_pages;
    char inc_path[PATH_MAX];
    unsigned char *reread_buf;
} filter_delta;

static uint16_t filter_delta_get16(const unsigned char *p)
{
    uint16_t v;

    memcpy(&v, p, sizeof(v)); /* native order: the page was written by this machine's kind */
    return v;
}

bool filter_delta_header_valid(const unsigned char *page)
{
    uint16_t flags = filter_delta_get16(page + PG_PAGE_FLAGS_OFF),
             lower = filter_delta_get16(page + PG_PAGE_LOWER_OFF),
             upper = filter_delta_get16(page + PG_PAGE_UPPER_OFF),
             special = filter_delta_get16(page + PG_PAGE_SPECIAL_OFF);

    return (flags & ~FILTER_DELTA_VALID_FLAGS) == 0 && lower >= PG_PAGE_HEADER_SIZE &&
           lower <= upper && upper <= special && special <= PG_PAGE_SIZE &&
           special % FILTER_DELTA_MAXALIGN == 0;
}

/* Whether the parent's manifest lets this file be an increment; *pages: what the parent had. */
static bool filter_delta_candidate(const filter_delta *d, const file_filter_file *file,
                                   uint64_t *pages)
{
    relfile rel;
    long at;

    if (!file->is_relation || file->size == 0 || !relfile_parse(file->path, &rel) ||
        rel.fork != RELFILE_MAIN)
        return false;
    at = manifest_find(d->cfg.parent, file->path);
    if (at < 0 || d->cfg.parent->files[at].is_dir)
        return false;
    *pages = d->cfg.parent->files[at].file_size / PG_PAGE_SIZE;
    return true;
}

static bool filter_delta_begin(file_filter *f, const file_filter_file *file, pgd_error *err)
{
    filter_delta *d = (filter_delta *)f;
    const char *slash;

    d->file = *file;
    d->received = 0;
    d->npages = 0;
    d->sparse = file->plan != NULL && file->plan->kind == BLOCK_PLAN_SPARSE;
    /* a plan was made for a candidate only (backup/delta_summary.h); WHOLE means whole */
    d->collecting =
        file->plan != NULL ? d->sparse : filter_delta_candidate(d, file, &d->parent_pages);
    if (!d->collecting)
        return file_filter_begin(f->next, file, err);
    slash = strrchr(file->path, '/');
    if (slash == NULL ||
        (size_t)snprintf(d->inc_path, sizeof(d->inc_path), "%.*s/" INCREMENT_TAR_PREFIX "%s",
                         (int)(slash - file->path), file->path, slash + 1) >= sizeof(d->inc_path)) {
        d->collecting = false;
        return file_filter_begin(f->next, file, err);
    }
    return true; /* the tar entry is begun at the end, when its size is known */
}

static bool filter_delta_wanted(const filter_delta *d, const unsigned char *page, size_t len,
                                uint64_t blkno)
{
    return d->sparse || len < PG_PAGE_SIZE || blkno >= d->parent_pages ||
           page_checksum_is_zero(page) || page_checksum_lsn(page) >= d->cfg.threshold_lsn ||
           !filter_delta_header_valid(page);
}

/* Room for one more page; *over when the bound says the file goes whole. */
static void filter_delta_room(filter_delta *d, bool *over)
{
    size_t cap;

    *over = false;
    if (d->npages < d->cap_pages)
        return;
    cap = d->cap_pages ? d->cap_pages * 2 : FILTER_DELTA_GROW_PAGES;
    if (cap > d->cfg.max_buffer / PG_PAGE_SIZE)
        cap = d->cfg.max_buffer / PG_PAGE_SIZE;
    if (cap <= d->npages) {
        *over = true;
        return;
    }
    /* bounded by max_buffer, which --max-memory sized: no smaller fallback to take */
    d->pages = xrealloc(d->pages, cap * PG_PAGE_SIZE);
    d->block = xrealloc(d->block, cap * sizeof(*d->block));
    d->cap_pages = cap;
}

/*
 * Too many pages to hold: the file goes whole. Its tar entry begins now,
 * and the bytes already seen are read again from the start and passed on.
 */
static bool filter_delta_go_whole(filter_delta *d, uint64_t upto, pgd_error *err)
{
    dio_file df;
    bool missing = false;
    uint64_t done = 0;

    d->collecting = false;
    d->npages = 0;
    if (!file_filter_begin(d->base.next, &d->file, err))
        return false;
    if (upto == 0)
        return true;
    if (d->reread_buf == NULL)
        d->reread_buf = dio_buffer_alloc(FILTER_DELTA_REREAD_CHUNK);
    if (!dio_file_open(&df, d->file.source, d->cfg.reread, &missing, err)) {
        if (!missing)
            return false;
        df.fd = -1; /* removed since: zeros, WAL replay recreates or drops it */
    }
    while (done < upto) {
        size_t want = upto - done < FILTER_DELTA_REREAD_CHUNK ? (size_t)(upto - done)
                                                              : FILTER_DELTA_REREAD_CHUNK;
        size_t got = 0;
        file_chunk chunk;

        if (df.fd >= 0 && !dio_file_read(&df, d->reread_buf, want, &got, err)) {
            dio_file_close(&df);
            return false;
        }
        if (got < want) /* shrank since: as the pipeline does, zeros that WAL replay repairs */
            memset(d->reread_buf + got, 0, want - got);
        chunk = (file_chunk){.data = d->reread_buf, .len = want, .room = want, .offset = done};
        if (!file_filter_data(d->base.next, &chunk, err)) {
            if (df.fd >= 0)
                dio_file_close(&df);
            return false;
        }
        done += want;
    }
    if (df.fd >= 0)
        dio_file_close(&df);
    return true;
}

static bool filter_delta_data(file_filter *f, file_chunk *chunk, pgd_error *err)
{
    filter_delta *d = (filter_delta *)f;

    for (size_t at = 0; d->collecting && at < chunk->len; at += PG_PAGE_SIZE) {
        size_t len = chunk->len - at < PG_PAGE_SIZE ? chunk->len - at : PG_PAGE_SIZE;
        uint64_t blkno = (chunk->offset + at) / PG_PAGE_SIZE;
        bool over;

        if (!filter_delta_wanted(d, chunk->data + at, len, blkno))
            continue;
        filter_delta_room(d, &over);
        if (over && d->sparse) /* the plan was bounded by max_buffer (backup/block_plan.h) */
            return err_set(err, "\"%s\": more planned pages than the delta buffer holds",
                           d->file.path);
        if (over) {
            log_info("\"%s\": more changed pages than the delta buffer holds (%zu KiB a "
                     "thread, half of --max-memory): stored whole",
                     d->file.path, d->cfg.max_buffer >> 10);
            if (!filter_delta_go_whole(d, chunk->offset, err))
                return false;
            break;
        }
        memcpy(d->pages + d->npages * PG_PAGE_SIZE, chunk->data + at, len);
        memset(d->pages + d->npages * PG_PAGE_SIZE + len, 0, PG_PAGE_SIZE - len);
        d->block[d->npages++] = (uint32_t)blkno;
    }
    if (!d->collecting)
        return file_filter_data(f->next, chunk, err);
    d->received = chunk->offset + chunk->len;
    return true;
}

/* The increment, now that its size is known: tar entry, header, pages, trailer. */
static bool filter_delta_emit(filter_delta *d, pgd_error *err)
{
    uint64_t hdr_len = increment_header_size((uint32_t)d->npages);
    unsigned char *hdr = xmalloc(hdr_len), trailer[INCREMENT_CRC_SIZE];
    file_filter_file inc = d->file;
    file_chunk chunk;
    bool ok;

    inc.path = d->inc_path;
    inc.size = increment_size((uint32_t)d->npages);
    ok = increment_encode_header(hdr, d->received, d->cfg.threshold_lsn, d->block,
                                 (uint32_t)d->npages, err) &&
         file_filter_begin(d->base.next, &inc, err);
    chunk = (file_chunk){.data = hdr, .len = hdr_len, .room = hdr_len, .offset = 0};
    ok = ok && file_filter_data(d->base.next, &chunk, err);
    free(hdr);
    if (ok && d->npages > 0) {
        chunk = (file_chunk){.data = d->pages,
                             .len = d->npages * PG_PAGE_SIZE,
                             .room = d->npages * PG_PAGE_SIZE,
                             .offset = hdr_len};
        ok = file_filter_data(d->base.next, &chunk, err);
    }
    increment_encode_trailer(trailer, crc32c(d->pages, d->npages * PG_PAGE_SIZE));
    chunk = (file_chunk){.data = trailer,
                         .len = sizeof(trailer),
                         .room = sizeof(trailer),
                         .offset = inc.size - sizeof(trailer)};
    return ok && file_filter_data(d->base.next, &chunk, err);
}

static bool filter_delta_end(file_filter *f, file_filter_result *result, pgd_error *err)
{
    filter_delta *d = (filter_delta *)f;

    result->increment = d->collecting;
    result->inc_blocks = d->collecting ? (uint32_t)d->npages : 0;
    /* a sparse read ends at its last run: the file is as long as it was at open */
    result->file_size = d->sparse ? d->file.size : d->received;
    if (d->sparse)
        d->received = d->file.size;
    if (d->collecting) {
        /* the pages were chosen within the bound; a file that shrank keeps only those below */
        while (d->npages > 0 && d->block[d->npages - 1] >= increment_file_pages(d->received))
            d->npages--;
        result->inc_blocks = (uint32_t)d->npages;
        if (!filter_delta_emit(d, err))
            return false;
    }
    d->collecting = false;
    return file_filter_end(f->next, result, err);
}

static void filter_delta_free(file_filter *f)
{
    filter_delta *d = (filter_delta *)f;

    free(d->pages);
    free(d->block);
    free(d->reread_buf);
    file_filter_free(f->next);
    free(d);
}

static const file_filter_ops filter_delta_ops = {filter_delta_begin, filter_delta_data,
                                                 filter_delta_end, filter_delta_free};

file_filter *filter_delta_new(file_filter *next, const filter_delta_config *cfg)
{
    filter_delta *d = xcalloc(1, sizeof(*d));

    d->base.ops = &filter_delta_ops;
    d->base.next = next;
    d->cfg = *cfg;
    return &d->base;
}

file_filter *filter_delta_make(file_filter *next, void *arg, pgd_error *err)
{
    (void)err; /* never NULL: the signature is file_filter_maker's */
    return filter_delta_new(next, arg);
}
