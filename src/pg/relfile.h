/*
 * relfile.h - which backup paths are relation data files, and which part
 * of their relation they hold.
 *
 * A relation is stored in segments of PG_SEGMENT_PAGES pages of
 * PG_PAGE_SIZE bytes (PostgreSQL's defaults, BLCKSZ and RELSEG_SIZE):
 * <relfilenode>[_<fork>][.<segment>] under global/, base/<db>/ or
 * pg_tblspc/<spc>/<version dir>/<db>/. Filters that look at pages (page
 * checksums, delta backups) need each page's absolute block number:
 * segment x PG_SEGMENT_PAGES + offset in the file / PG_PAGE_SIZE.
 */
#ifndef PGD_RELFILE_H
#define PGD_RELFILE_H

#include <stdbool.h>
#include <stdint.h>

#define PG_PAGE_SIZE     8192
#define PG_SEGMENT_PAGES 131072 /* 1 GiB segments */

typedef enum { RELFILE_MAIN, RELFILE_FSM, RELFILE_VM, RELFILE_INIT } relfile_fork;

typedef struct relfile {
    uint32_t spc_oid; /* 0: the data directory (base/ or global/) */
    uint32_t db_oid;  /* 0: a shared catalog (global/) */
    uint32_t relfilenode;
    relfile_fork fork;
    uint32_t segment;
} relfile;

/* True when `path` (relative to PGDATA) names a relation data file; *out says which. */
bool relfile_parse(const char *path, relfile *out);

#endif
