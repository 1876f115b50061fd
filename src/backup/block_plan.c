/*
 * block_plan.c - a relation file's sparse read plan from the WAL summaries
 * (see block_plan.h for the rules and why).
 */
#include "backup/block_plan.h"

#include <stdlib.h>
#include <string.h>

#include "util/xmalloc.h"

/* More than this share of a file's pages (in tenths) and it is read whole, by the page scan */
#define BLOCK_PLAN_SCAN_TENTHS 9
#define BLOCK_PLAN_TENTHS      10
#define BLOCK_PLAN_NO_LIMIT    UINT64_MAX

uint32_t block_plan_spc_oid(const relfile *rel)
{
    if (rel->spc_oid != 0)
        return rel->spc_oid;
    return rel->db_oid == 0 ? WAL_SUMMARY_SPC_GLOBAL : WAL_SUMMARY_SPC_DEFAULT;
}

static int block_plan_run_cmp(const void *a, const void *b)
{
    const block_run *x = a, *y = b;

    return (x->start > y->start) - (x->start < y->start);
}

/* Add [from, to) (pages of the segment file), when not empty. */
static void block_plan_add(block_plan *p, size_t *cap, uint64_t from, uint64_t to)
{
    if (from >= to)
        return;
    if (p->nruns == *cap) {
        size_t grown = *cap ? *cap * 2 : 8;
        p->runs = xrealloc(p->runs, grown * sizeof(*p->runs));
        *cap = grown;
    }
    p->runs[p->nruns++] = (block_run){(uint32_t)from, (uint32_t)(to - from)};
}

/* Sort and merge overlapping or adjacent runs, so that each becomes one read. */
static void block_plan_coalesce(block_plan *p)
{
    size_t out = 0;

    if (p->nruns > 1)
        qsort(p->runs, p->nruns, sizeof(*p->runs), block_plan_run_cmp);
    p->pages = 0;
    for (size_t i = 0; i < p->nruns; i++) {
        block_run *last = out > 0 ? &p->runs[out - 1] : NULL;
        uint64_t end = (uint64_t)p->runs[i].start + p->runs[i].count;

        if (last != NULL && p->runs[i].start <= (uint64_t)last->start + last->count) {
            if (end > (uint64_t)last->start + last->count)
                last->count = (uint32_t)(end - last->start);
            continue;
        }
        p->runs[out++] = p->runs[i];
    }
    p->nruns = out;
    for (size_t i = 0; i < out; i++)
        p->pages += p->runs[i].count;
}

/* The limit block of the fork's runs (the lowest), or BLOCK_PLAN_NO_LIMIT. */
static uint64_t block_plan_limit(const wal_summary_run *r, size_t n)
{
    uint64_t limit = BLOCK_PLAN_NO_LIMIT;

    for (size_t i = 0; i < n; i++)
        if (r[i].limit && r[i].start < limit)
            limit = r[i].start;
    return limit;
}

static void block_plan_set_scan(block_plan *out)
{
    block_plan_free(out);
    out->kind = BLOCK_PLAN_SCAN;
}

void block_plan_for_file(const wal_summary *ws, const block_plan_file *f,
                         const block_plan_limits *lim, block_plan *out)
{
    uint32_t spc = block_plan_spc_oid(&f->rel);
    uint64_t pages = f->size / PG_PAGE_SIZE, parent_pages = f->parent_size / PG_PAGE_SIZE;
    uint64_t seg_start = (uint64_t)f->rel.segment * lim->segment_pages, limit;
    size_t first, n, cap = 0;

    memset(out, 0, sizeof(*out));
    out->kind = BLOCK_PLAN_SCAN;
    if (f->size % PG_PAGE_SIZE != 0 || pages > lim->segment_pages || lim->segment_pages == 0)
        return;
    wal_summary_find(ws, spc, f->rel.db_oid, 0, 0, &n);
    if (n > 0) {
        out->kind = BLOCK_PLAN_WHOLE;
        return;
    }
    first = wal_summary_find(ws, spc, f->rel.db_oid, f->rel.relfilenode, (uint32_t)f->rel.fork, &n);
    limit = block_plan_limit(ws->runs + first, n);
    if (limit <= seg_start) {
        out->kind = BLOCK_PLAN_WHOLE;
        return;
    }
    out->kind = BLOCK_PLAN_SPARSE;
    for (size_t i = first; i < first + n; i++) {
        const wal_summary_run *r = &ws->runs[i];
        uint64_t from = r->start, to = (uint64_t)r->start + r->count;

        if (r->limit)
            continue;
        from = from > seg_start ? from - seg_start : 0;
        to = to > seg_start ? to - seg_start : 0;
        block_plan_add(out, &cap, from, to < pages ? to : pages);
    }
    if (limit != BLOCK_PLAN_NO_LIMIT)
        block_plan_add(out, &cap, limit - seg_start, pages);
    block_plan_add(out, &cap, parent_pages, pages);
    block_plan_coalesce(out);
    if (out->pages * BLOCK_PLAN_TENTHS > pages * BLOCK_PLAN_SCAN_TENTHS ||
        out->pages > lim->max_pages)
        block_plan_set_scan(out);
}

void block_plan_free(block_plan *p)
{
    free(p->runs);
    p->runs = NULL;
    p->nruns = 0;
    p->pages = 0;
}

uint64_t block_plan_bytes_within(const block_plan *p, uint64_t limit)
{
    uint64_t bytes = 0;

    for (size_t i = 0; i < p->nruns; i++) {
        uint64_t from = (uint64_t)p->runs[i].start * PG_PAGE_SIZE,
                 to = ((uint64_t)p->runs[i].start + p->runs[i].count) * PG_PAGE_SIZE;

        if (from >= limit)
            break;
        bytes += (to < limit ? to : limit) - from;
    }
    return bytes;
}
