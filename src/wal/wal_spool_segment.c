/*
 * wal_spool_segment.c - what the prefetch needs of segments: the name of
 * the segment n after one (pg/wal_name.h does the arithmetic), and the
 * system identifier and segment size in a segment's first page.
 */
#include "wal/wal_spool.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "pg/wal_segment.h"
#include "wal/wal_spool_internal.h"

bool wal_spool_segment_after(const char *name, uint32_t seg_size, unsigned n,
                             char out[WAL_FILE_NAME_LEN + 1])
{
    uint32_t tli;
    uint64_t segno;

    return wal_name_parse(name, seg_size, &tli, &segno) &&
           wal_name_from_segno(tli, segno + n, seg_size, out);
}

bool wal_spool_segment_identity(const char *path, uint64_t *sysid, uint32_t *seg_size,
                                pgd_error *err)
{
    unsigned char page[WAL_PAGE_LONG_HEADER];
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    ssize_t n;

    if (fd < 0)
        return err_errno(err, errno, "could not open WAL file \"%s\"", path);
    n = pread(fd, page, sizeof(page), 0);
    close(fd);
    if (n != (ssize_t)sizeof(page))
        return err_set(err, "could not read the first page header of WAL file \"%s\"", path);
    memcpy(sysid, page + WAL_PAGE_SYSID_OFF, sizeof(*sysid));
    memcpy(seg_size, page + WAL_PAGE_SEG_SIZE_OFF, sizeof(*seg_size));
    if (!wal_name_seg_size_valid(*seg_size))
        return err_set(err, "WAL file \"%s\" has no valid segment size in its first page header",
                       path);
    return true;
}
