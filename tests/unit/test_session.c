/*
 * test_session.c - covers the server-independent parts of
 * src/pg/session.c: which server versions are supported (14 to 18, refused
 * with a message naming them otherwise). LSN text and WAL file names are
 * pg/lsn.c's and pg/wal_name.c's (test_lsn.c, test_wal_name.c).
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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_supported_versions_are_accepted),
        cmocka_unit_test(test_older_and_newer_versions_are_refused_naming_the_supported_ones),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
