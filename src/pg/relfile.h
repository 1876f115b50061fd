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

/*
 * The page header (PageHeaderData, storage/bufpage.h), in the byte order of
 * the machine: pd_lsn (two 32-bit halves, high first), pd_checksum,
 * pd_flags, pd_lower, pd_upper, pd_special (16 bits each from 8 on).
 */
#define PG_PAGE_LSN_OFF      0
#define PG_PAGE_CHECKSUM_OFF 8
#define PG_PAGE_FLAGS_OFF    10
#define PG_PAGE_LOWER_OFF    12
#define PG_PAGE_UPPER_OFF    14
#define PG_PAGE_SPECIAL_OFF  16
#define PG_PAGE_HEADER_SIZE  24 /* SizeOfPageHeaderData */

/* PostgreSQL's FirstNormalObjectId: a database of a lower oid is one initdb made */
#define PG_FIRST_NORMAL_OID 16384

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
