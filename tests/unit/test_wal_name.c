/*
 * test_wal_name.c - covers src/pg/wal_name.c: WAL file names and segment
 * numbers for every segment size PostgreSQL allows (1 MiB to 1 GiB, powers
 * of two), as PostgreSQL's XLogFileName and XLogFromFileName compute them,
 * and which names are WAL files at all.
 */
#include "helpers.h"

#include "pg/wal_name.h"

#define MIB (UINT64_C(1) << 20)

/* The name of segno, and the name parsed back to it. */
static void expect_name(uint32_t tli, uint64_t segno, uint64_t seg_size, const char *want)
{
    char name[WAL_FILE_NAME_LEN + 1];
    uint32_t got_tli = 0;
    uint64_t got_segno = 0;

    assert_true(wal_name_from_segno(tli, segno, seg_size, name));
    assert_string_equal(name, want);
    assert_true(wal_name_parse(name, seg_size, &got_tli, &got_segno));
    assert_int_equal(got_tli, tli);
    assert_true(got_segno == segno);
    /* the segment's first and last byte are in it; its end is the last byte's */
    wal_name_of_lsn(tli, segno * seg_size, seg_size, false, name);
    assert_string_equal(name, want);
    wal_name_of_lsn(tli, segno * seg_size + seg_size - 1, seg_size, false, name);
    assert_string_equal(name, want);
    if (segno * seg_size + seg_size != 0) { /* the last segment ends at 2^64, no LSN */
        wal_name_of_lsn(tli, segno * seg_size + seg_size, seg_size, true, name);
        assert_string_equal(name, want);
    }
}

static void test_wal_names_for_every_segment_size(void **state)
{
    (void)state;
    for (uint64_t size = MIB; size <= 1024 * MIB; size *= 2) {
        uint64_t per_log = wal_name_segs_per_log(size);
        uint64_t last = (UINT64_C(1) << 32) * per_log - 1;
        char want[WAL_FILE_NAME_LEN + 1], name[WAL_FILE_NAME_LEN + 1];

        assert_true(wal_name_seg_size_valid(size));
        assert_true(per_log == (UINT64_C(1) << 32) / size);
        /* the first segment */
        expect_name(1, 0, size, "000000010000000000000000");
        /* the last segment of the first log, and the next one: the log number steps */
        snprintf(want, sizeof(want), "0000000100000000%08X", (unsigned)(per_log - 1));
        expect_name(1, per_log - 1, size, want);
        expect_name(1, per_log, size, "000000010000000100000000");
        /* the last segment there is (LSN FFFFFFFF/FFFFFFFF), on the last timeline */
        snprintf(want, sizeof(want), "FFFFFFFFFFFFFFFF%08X", (unsigned)(per_log - 1));
        expect_name(UINT32_MAX, last, size, want);
        wal_name_of_lsn(UINT32_MAX, UINT64_MAX, size, false, name);
        assert_string_equal(name, want);
        /* and none after it */
        assert_false(wal_name_from_segno(1, last + 1, size, name));
        /* a last part past the segments of a log is no segment of this size */
        if (size > MIB) {
            uint32_t tli;
            uint64_t segno;
            snprintf(want, sizeof(want), "0000000100000000%08X", (unsigned)per_log);
            assert_false(wal_name_parse(want, size, &tli, &segno));
        }
    }
}

/* The segment sizes of initdb --wal-segsize 16 and 64 with LSNs PostgreSQL reports. */
static void test_wal_name_of_an_lsn(void **state)
{
    char name[WAL_FILE_NAME_LEN + 1];

    (void)state;
    wal_name_of_lsn(1, 0x2000028, 16 * MIB, false, name);
    assert_string_equal(name, "000000010000000000000002");
    wal_name_of_lsn(1, 0x2000028, 64 * MIB, false, name);
    assert_string_equal(name, "000000010000000000000000");
    wal_name_of_lsn(2, (UINT64_C(1) << 32) + 0x8000000, 64 * MIB, false, name);
    assert_string_equal(name, "000000020000000100000002");
    /* the segment that ends at a boundary is the one before it */
    wal_name_of_lsn(1, 0x4000000, 64 * MIB, true, name);
    assert_string_equal(name, "000000010000000000000000");
    wal_name_of_lsn(1, 0x4000000, 64 * MIB, false, name);
    assert_string_equal(name, "000000010000000000000001");
    /* nothing ends before LSN 0 */
    wal_name_of_lsn(1, 0, 16 * MIB, true, name);
    assert_string_equal(name, "000000010000000000000000");
    assert_true(wal_name_segno(0x2000028, 16 * MIB, false) == 2);
    assert_true(wal_name_segno(0x2000000, 16 * MIB, true) == 1);
}

static void test_segment_sizes_postgresql_refuses(void **state)
{
    const uint64_t bad[] = {0, 1, MIB / 2, MIB + 1, 3 * MIB, 48 * MIB, 2048 * MIB, UINT64_MAX};
    char name[WAL_FILE_NAME_LEN + 1];
    uint32_t tli;
    uint64_t segno;

    (void)state;
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        assert_false(wal_name_seg_size_valid(bad[i]));
        assert_false(wal_name_from_segno(1, 0, bad[i], name));
        assert_false(wal_name_parse("000000010000000000000000", bad[i], &tli, &segno));
    }
    assert_int_equal(WAL_SEG_SIZE_MIN, MIB);
    assert_int_equal(WAL_SEG_SIZE_MAX, 1024 * MIB);
}

static void test_names_that_are_no_segment_are_refused(void **state)
{
    const char *bad[] = {
        "",
        "00000001000000000000000",   /* 23 digits */
        "0000000100000000000000000", /* 25 */
        "00000001000000000000000a",  /* lower case: PostgreSQL writes upper */
        "00000001000000000000000G",
        "0000000100000000000000 0",
        "000000010000000000000001.partial",
        "00000001.history",
        "000000010000000000000001.00000028.backup",
        "000000010000000000000100", /* segment 0x100 of 16 MiB: a log holds 0x100 */
        "0000000100000000FFFFFFFF",
    };
    uint32_t tli = 7;
    uint64_t segno = 7;

    (void)state;
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        assert_false(wal_name_parse(bad[i], 16 * MIB, &tli, &segno));
    assert_false(wal_name_parse(NULL, 16 * MIB, &tli, &segno));
    assert_int_equal(tli, 7);
    assert_true(segno == 7);
    /* 0xFF is the last segment of a 16 MiB log */
    assert_true(wal_name_parse("0000000100000002000000FF", 16 * MIB, &tli, &segno));
    assert_true(segno == 2 * 256 + 255);
}

static void test_wal_file_kinds(void **state)
{
    uint32_t tli = 0;

    (void)state;
    assert_true(wal_name_is_wal_file("000000010000000000000002"));
    assert_true(wal_name_is_wal_file("000000020000000A000000FF.partial"));
    assert_true(wal_name_is_wal_file("00000002.history"));
    assert_true(wal_name_is_wal_file("000000010000000000000002.00000028.backup"));
    assert_false(wal_name_is_wal_file("00000001000000000000000"));
    assert_false(wal_name_is_wal_file("00000001000000000000000g"));
    assert_false(wal_name_is_wal_file("00000001000000000000000a")); /* PostgreSQL uses upper case */
    assert_false(wal_name_is_wal_file("../../../../etc/passwd"));
    assert_false(wal_name_is_wal_file("RECOVERYHISTORY"));
    assert_int_equal(wal_name_kind("000000010000000000000001"), WAL_FILE_SEGMENT);
    assert_int_equal(wal_name_kind("000000010000000000000001.partial"), WAL_FILE_PARTIAL);
    assert_int_equal(wal_name_kind("00000002.history"), WAL_FILE_HISTORY);
    assert_int_equal(wal_name_kind("000000010000000000000001.00000028.backup"), WAL_FILE_BACKUP);
    assert_int_equal(wal_name_kind("000000010000000000000001.partial.x"), WAL_FILE_UNKNOWN);
    assert_int_equal(wal_name_kind("000000010000000000000001.Partial"), WAL_FILE_UNKNOWN);
    assert_int_equal(wal_name_kind("0000000a.history"), WAL_FILE_UNKNOWN);
    assert_int_equal(wal_name_kind("0000002.history"), WAL_FILE_UNKNOWN);
    assert_int_equal(wal_name_kind("000000010000000000000001.0000028.backup"), WAL_FILE_UNKNOWN);
    assert_int_equal(wal_name_kind("000000010000000000000001.0000002g.backup"), WAL_FILE_UNKNOWN);
    assert_int_equal(wal_name_kind("000000010000000000000001-00000028.backup"), WAL_FILE_UNKNOWN);
    assert_int_equal(wal_name_kind("00000001000000000000000g.partial"), WAL_FILE_UNKNOWN);
    assert_int_equal(wal_name_kind("archive_status"), WAL_FILE_UNKNOWN);
    assert_int_equal(wal_name_kind(""), WAL_FILE_UNKNOWN);
    assert_int_equal(wal_name_kind(NULL), WAL_FILE_UNKNOWN);
    assert_true(wal_name_is_wal_file("00000002.history"));
    assert_false(wal_name_is_wal_file("00000002.history.tmp"));
    assert_true(wal_name_timeline("0000002A.history", &tli));
    assert_int_equal(tli, 0x2A);
    assert_true(wal_name_timeline("000000FF0000000000000001.partial", &tli));
    assert_int_equal(tli, 0xFF);
    assert_false(wal_name_timeline("0000002a.history", &tli));
    assert_int_equal(tli, 0xFF);
}

static void test_timelines(void **state)
{
    char name[WAL_HISTORY_NAME_LEN + 1];
    uint32_t tli = 7, log = 7, seg = 7;

    (void)state;
    /* decimal, as PostgreSQL prints a TimeLineID */
    assert_true(wal_name_timeline_parse("1", &tli));
    assert_int_equal(tli, 1);
    assert_true(wal_name_timeline_parse("4294967295", &tli));
    assert_true(tli == UINT32_MAX);
    tli = 7;
    assert_false(wal_name_timeline_parse("0", &tli));
    assert_false(wal_name_timeline_parse("4294967296", &tli));
    assert_false(wal_name_timeline_parse("01", &tli));
    assert_false(wal_name_timeline_parse("+1", &tli));
    assert_false(wal_name_timeline_parse("-1", &tli));
    assert_false(wal_name_timeline_parse(" 1", &tli));
    assert_false(wal_name_timeline_parse("1 ", &tli));
    assert_false(wal_name_timeline_parse("1a", &tli));
    assert_false(wal_name_timeline_parse("", &tli));
    assert_false(wal_name_timeline_parse(NULL, &tli));
    assert_int_equal(tli, 7);
    /* hex, as a WAL file name and the repository's wal/<timeline>/ write it */
    assert_true(wal_name_timeline_hex("0000002A", &tli));
    assert_int_equal(tli, 0x2A);
    assert_true(wal_name_timeline_hex("FFFFFFFF", NULL));
    assert_false(wal_name_timeline_hex("0000002a", &tli));
    assert_false(wal_name_timeline_hex("0000002", &tli));
    assert_false(wal_name_timeline_hex("0000002A0", &tli));
    assert_false(wal_name_timeline_hex(NULL, &tli));
    assert_int_equal(tli, 0x2A);
    wal_name_timeline_text(0x2A, name);
    assert_string_equal(name, "0000002A");
    wal_name_history(0x2A, name);
    assert_string_equal(name, "0000002A.history");
    assert_int_equal(wal_name_kind(name), WAL_FILE_HISTORY);
    wal_name_history(UINT32_MAX, name);
    assert_string_equal(name, "FFFFFFFF.history");
    /* the parts of a name, whatever the segment size */
    assert_true(wal_name_parts("0000000300000004000000FF.00000028.backup", &tli, &log, &seg));
    assert_true(tli == 3 && log == 4 && seg == 0xFF);
    assert_true(wal_name_parts("0000000500000000000FFFFF.partial", &tli, &log, &seg));
    assert_true(tli == 5 && log == 0 && seg == 0xFFFFF);
    assert_true(wal_name_parts("00000006.history", &tli, &log, &seg));
    assert_true(tli == 6 && log == 0 && seg == 0);
    assert_false(wal_name_parts("00000006.history.tmp", &tli, &log, &seg));
    /* a stored object: a segment's name, then a suffix that is the caller's */
    assert_true(wal_name_starts_with_segment("000000010000000000000001"));
    assert_true(wal_name_starts_with_segment("000000010000000000000001.lz4"));
    assert_false(wal_name_starts_with_segment("00000001000000000000000"));
    assert_false(wal_name_starts_with_segment("00000001000000000000000a.lz4"));
    assert_false(wal_name_starts_with_segment(NULL));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_wal_names_for_every_segment_size),
        cmocka_unit_test(test_wal_name_of_an_lsn),
        cmocka_unit_test(test_segment_sizes_postgresql_refuses),
        cmocka_unit_test(test_names_that_are_no_segment_are_refused),
        cmocka_unit_test(test_wal_file_kinds),
        cmocka_unit_test(test_timelines),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
