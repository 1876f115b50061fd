/*
 * wal_spool_segment.c - the segment arithmetic the prefetch needs: a
 * segment name's timeline and number, the name of the segment n after it,
 * and the system identifier and segment size in a segment's first page.
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

static bool wal_spool_segment_hex32(const char *s, uint32_t *out)
{
    uint32_t v = 0;

    for (int i = 0; i < 8; i++) {
        char c = s[i];
        v <<= 4;
        if (c >= '0' && c <= '9')
            v |= (uint32_t)(c - '0');
        else if (c >= 'A' && c <= 'F')
            v |= (uint32_t)(c - 'A' + 10);
        else
            return false;
    }
    *out = v;
    return true;
}

bool wal_spool_segment_size_valid(uint32_t seg_size)
{
    return seg_size >= WAL_SEG_SIZE_MIN && seg_size <= WAL_SEG_SIZE_MAX &&
           (seg_size & (seg_size - 1)) == 0;
}

bool wal_spool_segment_parse(const char *name, uint32_t seg_size, uint32_t *tli, uint64_t *segno)
{
    uint32_t log, seg;
    uint64_t per_log;

    if (wal_segment_file_kind(name) != WAL_FILE_SEGMENT ||
        !wal_spool_segment_size_valid(seg_size) || !wal_spool_segment_hex32(name, tli) ||
        !wal_spool_segment_hex32(name + 8, &log) || !wal_spool_segment_hex32(name + 16, &seg))
        return false;
    per_log = (UINT64_C(1) << 32) / seg_size;
    if (seg >= per_log)
        return false;
    *segno = (uint64_t)log * per_log + seg;
    return true;
}

bool wal_spool_segment_after(const char *name, uint32_t seg_size, unsigned n,
                             char out[WAL_SEGMENT_NAME_LEN + 1])
{
    uint32_t tli;
    uint64_t segno, per_log;

    if (!wal_spool_segment_parse(name, seg_size, &tli, &segno))
        return false;
    per_log = (UINT64_C(1) << 32) / seg_size;
    segno += n;
    if (segno / per_log > UINT32_MAX)
        return false;
    snprintf(out, WAL_SEGMENT_NAME_LEN + 1, "%08" PRIX32 "%08" PRIX32 "%08" PRIX32, tli,
             (uint32_t)(segno / per_log), (uint32_t)(segno % per_log));
    return true;
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
    if (!wal_spool_segment_size_valid(*seg_size))
        return err_set(err, "WAL file \"%s\" has no valid segment size in its first page header",
                       path);
    return true;
}
