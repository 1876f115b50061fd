/*
 * filter_page_checksum.c - data page checksums verified as relation files
 * stream past (see filter_page_checksum.h for which pages and why).
 */
#define _GNU_SOURCE
#include "backup/filter_page_checksum.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "pg/page_checksum.h"
#include "util/xmalloc.h"

typedef struct filter_page_checksum {
    file_filter base;
    filter_page_checksum_config cfg;
    bool active; /* the file is a relation file */
    uint32_t segment;
    const char *source;
    dio_file reread;      /* opened at the first failed page of a file */
    bool reread_open;     /* reread.fd is open */
    unsigned char *page;  /* aligned buffer for one page read again */
    file_filter_result r; /* this filter's part of the result */
} filter_page_checksum;

static void filter_page_checksum_close(filter_page_checksum *c)
{
    if (c->reread_open)
        dio_file_close(&c->reread);
    c->reread_open = false;
}

/* Whether a page as read passes: new, too recent to judge, or its checksum matches. */
static bool filter_page_checksum_passes(const filter_page_checksum *c, const unsigned char *page,
                                        uint32_t blkno)
{
    return page_checksum_is_zero(page) || page_checksum_lsn(page) >= c->cfg.start_lsn ||
           page_checksum_compute(page, blkno) == page_checksum_stored(page);
}

/*
 * The page at `offset` read again, alone, from the device. True when that
 * copy passes, or no longer exists (the file vanished or shrank since: WAL
 * replay deals with both).
 */
static bool filter_page_checksum_reread(filter_page_checksum *c, uint64_t offset, uint32_t blkno)
{
    pgd_error ignore = {0};
    bool missing = false;
    ssize_t got;

    if (c->source == NULL)
        return false;
    if (!c->reread_open) {
        c->reread_open = dio_file_open(&c->reread, c->source, c->cfg.reread, &missing, &ignore);
        if (!c->reread_open)
            return missing;
    }
    do
        got = pread(c->reread.fd, c->page, PG_PAGE_SIZE, (off_t)offset);
    while (got < 0 && errno == EINTR);
    if (got < 0)
        return false;
    if (got < PG_PAGE_SIZE)
        return true; /* shrank */
    return filter_page_checksum_passes(c, c->page, blkno);
}

static void filter_page_checksum_bad(filter_page_checksum *c, uint32_t blkno)
{
    if (c->r.pages_bad < FILE_FILTER_BAD_BLOCKS_MAX)
        c->r.bad_blocks[c->r.pages_bad] = blkno;
    c->r.pages_bad++;
}

static bool filter_page_checksum_begin(file_filter *f, const file_filter_file *file, pgd_error *err)
{
    filter_page_checksum *c = (filter_page_checksum *)f;

    filter_page_checksum_close(c);
    c->active = file->is_relation;
    c->segment = file->segment;
    c->source = file->source;
    c->r = (file_filter_result){0};
    return file_filter_begin(f->next, file, err);
}

/* Chunks of relation files hold whole pages from a page boundary (file_filter.h). */
static bool filter_page_checksum_data(file_filter *f, file_chunk *chunk, pgd_error *err)
{
    filter_page_checksum *c = (filter_page_checksum *)f;

    for (size_t at = 0; c->active && at + PG_PAGE_SIZE <= chunk->len; at += PG_PAGE_SIZE) {
        const unsigned char *page = chunk->data + at;
        uint64_t offset = chunk->offset + at;
        uint32_t blkno = page_checksum_block(c->segment, offset);

        if (page_checksum_is_zero(page) || page_checksum_lsn(page) >= c->cfg.start_lsn)
            continue;
        c->r.pages_checked++;
        if (page_checksum_compute(page, blkno) == page_checksum_stored(page))
            continue;
        c->r.pages_reread++;
        if (!filter_page_checksum_reread(c, offset, blkno))
            filter_page_checksum_bad(c, blkno);
    }
    return file_filter_data(f->next, chunk, err);
}

static bool filter_page_checksum_end(file_filter *f, file_filter_result *result, pgd_error *err)
{
    filter_page_checksum *c = (filter_page_checksum *)f;

    filter_page_checksum_close(c);
    result->pages_checked = c->r.pages_checked;
    result->pages_bad = c->r.pages_bad;
    result->pages_reread = c->r.pages_reread;
    memcpy(result->bad_blocks, c->r.bad_blocks, sizeof(result->bad_blocks));
    return file_filter_end(f->next, result, err);
}

static void filter_page_checksum_free(file_filter *f)
{
    filter_page_checksum *c = (filter_page_checksum *)f;

    filter_page_checksum_close(c);
    free(c->page);
    file_filter_free(f->next);
    free(c);
}

static const file_filter_ops filter_page_checksum_ops = {
    filter_page_checksum_begin, filter_page_checksum_data, filter_page_checksum_end,
    filter_page_checksum_free};

file_filter *filter_page_checksum_new(file_filter *next, const filter_page_checksum_config *cfg)
{
    filter_page_checksum *c = xcalloc(1, sizeof(*c));

    c->page = dio_buffer_alloc(PG_PAGE_SIZE);
    c->base.ops = &filter_page_checksum_ops;
    c->base.next = next;
    c->cfg = *cfg;
    return &c->base;
}

file_filter *filter_page_checksum_make(file_filter *next, void *arg, pgd_error *err)
{
    (void)err; /* never NULL: the signature is file_filter_maker's */
    return filter_page_checksum_new(next, arg);
}
