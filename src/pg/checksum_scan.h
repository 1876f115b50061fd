/*
 * checksum_scan.h - the data checksum of every page of a stopped cluster's relation files, as
 * pg_checksums --check does, but with pgdirect's own page checksum (page_checksum.h), so that
 * it runs whatever client tools are installed. A restore drill runs it after the scratch server
 * stopped: pages PostgreSQL never read since the restore (most of a cluster) are checked too.
 *
 * Files are read with O_DIRECT where the file system allows it (else read and then dropped from
 * the page cache), so the pass does not fill the page cache with a whole cluster.
 */
#ifndef PGD_CHECKSUM_SCAN_H
#define PGD_CHECKSUM_SCAN_H

#include <stdbool.h>
#include <stdint.h>

#include "pg/cluster_check.h"
#include "util/error.h"

typedef struct checksum_scan_result {
    uint64_t files, pages; /* pages checked (new, all-zero pages are not) */
    uint64_t bad;
} checksum_scan_result;

/* Check every relation file under `datadir` (global, base, pg_tblspc); each bad page a problem. */
bool checksum_scan_run(const char *datadir, checksum_scan_result *res, cluster_problems *p,
                       pgd_error *err);

#endif
