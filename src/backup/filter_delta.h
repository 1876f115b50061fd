/*
 * filter_delta.h - the pages of a relation file that a delta backup
 * stores, as an increment (repo/increment.h), instead of the whole file.
 *
 * A file is a candidate when it is a relation file's main fork (any
 * segment, tablespaces too), is not empty, and the parent backup's
 * manifest has a file at the same path (stored whole or as an increment).
 * Everything else passes through whole: non-relation files, files new
 * since the parent, and
 *   - FSM forks: not WAL-logged, their LSNs cannot be trusted (PostgreSQL
 *     17's incremental backup sends them whole too);
 *   - VM forks: clearing a visibility map bit does not stamp the VM page
 *     with an LSN (only the heap change is logged), so an LSN rule would
 *     miss cleared bits between the parent and this backup and restore a
 *     VM that says all-visible wrongly. They are small (one page per
 *     32768 heap pages), so whole costs little;
 *   - init forks.
 * Of a candidate, page b is stored when any of:
 *   its LSN (pd_lsn) >= the threshold (the parent's start LSN);
 *   its header is not valid (PageIsVerified's checks) - never guessed away;
 *   it is all zeros (a new page);
 *   b >= the parent's file_size / PG_PAGE_SIZE (the file grew);
 *   it is short (the file's last, partial page; zero-padded in the
 *   increment, restore cuts the file to file_size).
 * A file with a read plan from WAL summaries (file->plan, see
 * backup/delta_summary.h) skips these rules: SPARSE, every page handed on
 * is stored (the plan read only changed or grown blocks) and the file's
 * size is the one at open; WHOLE, the file is stored whole.
 * The increment's size is known only at the file's end and the tar header
 * needs it first, so the chosen pages are kept in memory, at most
 * max_buffer bytes per reader thread. A file whose chosen pages would need
 * more is stored whole: the filter passes the file on from its start,
 * reading again with `reread` I/O what it had already seen.
 */
#ifndef PGD_FILTER_DELTA_H
#define PGD_FILTER_DELTA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "backup/file_filter.h"
#include "io/dio_reader.h"
#include "repo/manifest.h"

typedef struct filter_delta_config {
    uint64_t threshold_lsn;
    const manifest *parent; /* indexed (manifest_build_index); shared, read-only */
    size_t max_buffer;      /* bytes of chosen pages one thread may hold */
    read_mode reread;       /* how a file that turns whole is read again */
} filter_delta_config;

/* Whether a page's header passes PostgreSQL's PageIsVerified sanity checks. */
bool filter_delta_header_valid(const unsigned char *page);

file_filter *filter_delta_new(file_filter *next, const filter_delta_config *cfg);

/* For file_filter_maker: arg is a filter_delta_config. */
file_filter *filter_delta_make(file_filter *next, void *arg, pgd_error *err);

#endif
