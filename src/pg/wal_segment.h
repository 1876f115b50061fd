/*
 * wal_segment.h - what the files PostgreSQL archives are, checked before
 * wal-push stores one and before wal-fetch hands one back to a recovering
 * server.
 *
 * A segment is fetched by name, and PostgreSQL trusts the name: a truncated,
 * corrupt or misplaced file makes recovery stop at a "bad record" and treat
 * it as the end of WAL, so the server promotes without the transactions
 * after it. The check therefore covers what a compression frame checksum
 * does not (uncompressed objects, a file pushed under the wrong name):
 *
 *   segment   size = xlp_seg_size of its first page (a power of two from
 *             1 MiB to 1 GiB); every page header (magic of a PostgreSQL
 *             version we know, flags, page address and timeline matching
 *             the name); every record that starts and ends in the segment
 *             (length, CRC-32C, link to the previous record), up to an
 *             XLOG_SWITCH record, after which the segment is padding.
 *   .partial  the last, unfinished segment of a timeline: its first page
 *             header and size; the records stop somewhere unknown.
 *   .history  timeline history: lines "<parent tli> <LSN> <reason>" with
 *             increasing timelines below the file's own, newline-ended.
 *   .backup   backup history: "START WAL LOCATION: <LSN> (file <segment>)"
 *             naming the segment in its file name, newline-ended.
 *
 * The layout is PostgreSQL's (src/include/access/xlog_internal.h and
 * xlogrecord.h), in the byte order of the machine, as PostgreSQL writes it.
 */
#ifndef PGD_WAL_SEGMENT_H
#define PGD_WAL_SEGMENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "io/stream.h"
#include "pg/wal_name.h"
#include "util/error.h"

/* The long header of a segment's first page (xlog_internal.h): xlp_sysid, xlp_seg_size. */
#define WAL_PAGE_SYSID_OFF    24
#define WAL_PAGE_SEG_SIZE_OFF 32
#define WAL_PAGE_LONG_HEADER  40

/* The checker of one file, fed its content in pieces of any size. */
typedef struct wal_segment_check wal_segment_check;

/* NULL (with err set) when `name` is not a WAL file name. */
wal_segment_check *wal_segment_check_new(const char *name, pgd_error *err);
bool wal_segment_check_update(wal_segment_check *c, const void *data, size_t len, pgd_error *err);
/* After the last piece: is the whole file what its name says? */
bool wal_segment_check_finish(wal_segment_check *c, pgd_error *err);
void wal_segment_check_free(wal_segment_check *c);

/* The same check on a whole file in memory. */
bool wal_segment_check_buffer(const char *name, const void *data, size_t len, pgd_error *err);

/*
 * A filter that passes `src` through unchanged and fails (at the latest
 * when the stream ends) if the content is not the file `name`. Takes
 * ownership of src.
 */
in_stream *wal_segment_check_in_new(in_stream *src, const char *name, pgd_error *err);

#endif
