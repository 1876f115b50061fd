/*
 * report.h - where each relation's pages are: PostgreSQL's shared_buffers,
 * the OS page cache, or only on disk. The engine of `pgdirect cache`.
 *
 * Per relation fork (main, fsm, vm, init) and summed over its 1 GiB
 * segment files:
 *   size            bytes on disk
 *   shared_buffers  8 KiB buffers held by PostgreSQL (pg_buffercache)
 *   os_cache        bytes of the files in the OS page cache (mincore)
 *   disk_only       8 KiB blocks in neither
 *   evicted         OS pages evicted and not read back (cachestat, when
 *                   the kernel has it; workingset shadow entries)
 */
#ifndef PGD_CACHE_REPORT_H
#define PGD_CACHE_REPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "pg/relations.h"
#include "pg/relfile.h"
#include "util/error.h"

typedef struct cache_figures {
    uint64_t size;
    uint64_t shared_buffers; /* bytes */
    uint64_t os_cache;       /* bytes */
    uint64_t disk_only;      /* bytes */
    uint64_t evicted_pages;
} cache_figures;

/* The text of a row points into its report (relation lists, database names) or is static. */
typedef struct cache_row {
    const char *database; /* "(shared)" for a shared catalog */
    const char *name;
    const char *kind;
    const char *fork;
    cache_figures f;
} cache_row;

typedef struct cache_request {
    const char *conninfo;
    const char *pgdata;           /* NULL: the server's data_directory */
    const char *const *databases; /* NULL: every database that allows connections */
    size_t ndatabases;
    const char *like; /* relation name pattern, SQL LIKE; NULL: all */
} cache_request;

typedef struct cache_report {
    cache_row *rows;
    size_t n, cap;
    bool shared_buffers_known; /* pg_buffercache read in at least one database */
    bool os_known;             /* relation files were readable */
    char **notes;              /* what could not be read, one line each */
    size_t nnotes;
    pg_relation_list *lists; /* what the rows' names and kinds point into, one per database */
    size_t nlists;
    char **databases; /* what the rows' database names point to */
    size_t ndatabases;
} cache_report;

bool cache_collect(const cache_request *req, cache_report *out, pgd_error *err);
void cache_report_free(cache_report *r);

void cache_sort_by_size(cache_report *r);
cache_figures cache_totals(const cache_report *r);

/*
 * The residency math for one segment file of `size` bytes, added into *f:
 * os_vec has one entry per OS page (bit 0: resident), sb has one entry per
 * 8 KiB block (non-zero: in shared_buffers).
 */
void cache_add_segment(cache_figures *f, uint64_t size, const unsigned char *os_vec,
                       size_t os_page_size, const unsigned char *sb);

/*
 * Which blocks of a fork are in shared_buffers: sort the buffers once
 * (cache_sort_buffers), then cache_sb_map gives the blocks first_block ..
 * first_block + blocks - 1 of a fork (one segment file) a byte map indexed
 * from first_block (non-zero: in shared_buffers), or NULL when none of them
 * is (a failed allocation ends the process, util/xmalloc.h).
 */
void cache_sort_buffers(pg_buffer *bufs, size_t nbufs);
unsigned char *cache_sb_map(const pg_buffer *bufs, size_t nbufs, uint32_t tablespace,
                            uint32_t filenode, int fork, uint64_t first_block, uint64_t blocks);

#endif
