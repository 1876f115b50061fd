/*
 * test_session.c - covers the server-independent parts of
 * src/pg/session.c: which server versions are supported (14 to 18, refused
 * with a message naming them otherwise), LSN text and WAL file names.
 */
#include "helpers.h"

#include "pg/session.h"

static void test_supported_versions_are_accepted(void **state)
{
    int ok[] = {140000, 140013, 150008, 160004, 170000, 180004, 189999};

    (void)state;
    for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
        pgd_error err = {0};
        assert_true(pg_session_check_version(ok[i], "x", &err));
        assert_false(err.set);
    }
}

static void expect_refused(int version_num, const char *version, const char *named)
{
    pgd_error err = {0};
    char want[256];

    assert_false(pg_session_check_version(version_num, version, &err));
    snprintf(want, sizeof(want),
             "server version %s is not supported: pgdirect supports PostgreSQL 14 to 18", named);
    assert_string_equal(err.msg, want);
}

static void test_older_and_newer_versions_are_refused_naming_the_supported_ones(void **state)
{
    (void)state;
    expect_refused(139999, "13.16", "13.16");
    expect_refused(120000, "12.0", "12.0");
    expect_refused(90624, "9.6.24", "9.6.24");
    expect_refused(190000, "19devel", "19devel");
    expect_refused(200001, "20.1", "20.1");
    /* no server_version parameter: the number stands in */
    expect_refused(130016, NULL, "130016");
    expect_refused(0, "", "0");
}

static void test_lsn_text(void **state)
{
    uint64_t lsn = 0;

    (void)state;
    assert_true(pg_parse_lsn("0/2000028", &lsn));
    assert_true(lsn == 0x2000028);
    assert_true(pg_parse_lsn("1A/FF000000", &lsn));
    assert_true(lsn == ((uint64_t)0x1A << 32 | 0xFF000000));
    assert_false(pg_parse_lsn("0/2000028x", &lsn));
    assert_false(pg_parse_lsn("2000028", &lsn));
}

/* 64 MiB segments (initdb --wal-segsize 64): 64 segments per 4 GiB "log" number */
static void test_wal_file_names_follow_the_segment_size(void **state)
{
    char name[25];
    const uint64_t mib = 1024 * 1024;

    (void)state;
    pg_wal_file_name(1, 0x2000028, 16 * mib, false, name);
    assert_string_equal(name, "000000010000000000000002");
    pg_wal_file_name(1, 0x2000028, 64 * mib, false, name);
    assert_string_equal(name, "000000010000000000000000");
    pg_wal_file_name(2, ((uint64_t)1 << 32) + 0x8000000, 64 * mib, false, name);
    assert_string_equal(name, "000000020000000100000002");
    /* the segment that ends at a boundary is the one before it */
    pg_wal_file_name(1, 0x4000000, 64 * mib, true, name);
    assert_string_equal(name, "000000010000000000000000");
    pg_wal_file_name(1, 0x4000000, 64 * mib, false, name);
    assert_string_equal(name, "000000010000000000000001");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_supported_versions_are_accepted),
        cmocka_unit_test(test_older_and_newer_versions_are_refused_naming_the_supported_ones),
        cmocka_unit_test(test_lsn_text),
        cmocka_unit_test(test_wal_file_names_follow_the_segment_size),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
