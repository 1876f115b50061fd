/*
 * filter_page_checksum.h - a file filter that verifies the data checksum
 * of every page of a relation file as it streams past, without copying it.
 *
 * Which pages are judged: every whole page of a relation file (pg/relfile.h)
 * except all-zero ones (the relation was extended, nothing written yet) and
 * those whose LSN is at or after the backup's start: PostgreSQL may be
 * writing such a page while we read it, and WAL replay from the start LSN
 * rewrites it anyway. A page that fails is read once more, alone, with
 * direct I/O, so the second look comes from the device and not from a
 * cache that may hold the same torn copy; it counts as bad only when that
 * copy fails too (and is still older than the start). The bytes stored are
 * the ones first read: the filter only looks.
 *
 * Results (file_filter_result): pages_checked, pages_bad and the first
 * FILE_FILTER_BAD_BLOCKS_MAX bad block numbers (absolute: segment x
 * PG_SEGMENT_PAGES + page in the file). A page that cannot be read again
 * counts as bad: it failed once and nothing cleared it.
 */
#ifndef PGD_FILTER_PAGE_CHECKSUM_H
#define PGD_FILTER_PAGE_CHECKSUM_H

#include "backup/file_filter.h"
#include "io/dio_reader.h"

typedef struct filter_page_checksum_config {
    uint64_t start_lsn; /* pages with this LSN or a later one are not judged */
    read_mode reread;   /* how to read a failed page again: READ_MODE_DIRECT, or _BUFFERED */
} filter_page_checksum_config;

file_filter *filter_page_checksum_new(file_filter *next, const filter_page_checksum_config *cfg);

/* file_filter_maker.make: arg is a filter_page_checksum_config that outlives the pipeline. */
file_filter *filter_page_checksum_make(file_filter *next, void *arg, pgd_error *err);

#endif
