/*
 * wal_test_segment.h - WAL segments that pass pg/wal_segment.h's checks,
 * for the unit tests of the spool, the pusher and the prefetcher: one
 * record runs through the whole segment (page headers, then its bytes).
 * The system identifier tells two files of one name apart.
 */
#ifndef PGD_WAL_TEST_SEGMENT_H
#define PGD_WAL_TEST_SEGMENT_H

#include "helpers.h"

#define TEST_SEG_SIZE  (1u << 20) /* the smallest initdb allows: tests stay fast */
#define TEST_PAGE_SIZE 8192u

static inline void test_segment_name(uint32_t tli, uint64_t segno, char out[25])
{
    uint64_t per_log = (UINT64_C(1) << 32) / TEST_SEG_SIZE;

    snprintf(out, 25, "%08X%08X%08X", tli, (uint32_t)(segno / per_log),
             (uint32_t)(segno % per_log));
}

static inline unsigned char *test_segment(uint32_t tli, uint64_t segno, uint64_t sysid)
{
    unsigned char *seg = malloc(TEST_SEG_SIZE);
    uint16_t magic = 0xD110, info;
    uint32_t rem = 2 * TEST_SEG_SIZE, seg_size = TEST_SEG_SIZE, page = TEST_PAGE_SIZE;
    uint64_t start = segno * TEST_SEG_SIZE;

    assert_non_null(seg);
    fill_pattern(seg, TEST_SEG_SIZE, (uint32_t)(segno * 31 + sysid));
    for (uint32_t off = 0; off < TEST_SEG_SIZE; off += TEST_PAGE_SIZE) {
        uint64_t addr = start + off;
        unsigned char *p = seg + off;
        info = off == 0 ? 0x0003 : 0x0001;
        memcpy(p, &magic, 2);
        memcpy(p + 2, &info, 2);
        memcpy(p + 4, &tli, 4);
        memcpy(p + 8, &addr, 8);
        memcpy(p + 16, &rem, 4);
        memset(p + 20, 0, 4);
        if (off == 0) {
            memcpy(p + 24, &sysid, 8);
            memcpy(p + 32, &seg_size, 4);
            memcpy(p + 36, &page, 4);
        }
        rem -= TEST_PAGE_SIZE - (off == 0 ? 40 : 24);
    }
    return seg;
}

/* Write segment (tli, segno) of system `sysid` as dir/<its name>; name gets the name. */
static inline void test_segment_file(const char *dir, uint32_t tli, uint64_t segno, uint64_t sysid,
                                     char name[25])
{
    char path[8300];
    unsigned char *seg = test_segment(tli, segno, sysid);

    test_segment_name(tli, segno, name);
    snprintf(path, sizeof(path), "%s/%s", dir, name);
    write_test_file(path, seg, TEST_SEG_SIZE);
    free(seg);
}

#endif
