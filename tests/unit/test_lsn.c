/*
 * test_lsn.c - covers src/pg/lsn.c: LSN text is read as strictly as
 * PostgreSQL's pg_lsn input reads it, and written as PostgreSQL prints it.
 */
#include "helpers.h"

#include "pg/lsn.h"

#define LSN_UNTOUCHED UINT64_C(0x5A5A5A5A5A5A5A5A)

static void expect_lsn(const char *text, pg_lsn want)
{
    pg_lsn got = LSN_UNTOUCHED;

    assert_true(lsn_parse(text, &got));
    assert_true(got == want);
}

static void expect_refused(const char *text)
{
    pg_lsn got = LSN_UNTOUCHED;

    assert_false(lsn_parse(text, &got));
    assert_true(got == LSN_UNTOUCHED);
}

static void test_lsn_parse_reads_both_halves(void **state)
{
    (void)state;
    expect_lsn("0/0", 0);
    expect_lsn("0/2000028", 0x2000028);
    expect_lsn("1A/FF000000", (pg_lsn)0x1A << 32 | 0xFF000000);
    expect_lsn("FFFFFFFF/FFFFFFFF", UINT64_MAX);
    expect_lsn("00000000/00000001", 1);
}

static void test_lsn_parse_takes_either_case(void **state)
{
    (void)state;
    expect_lsn("abcdef01/23456789", UINT64_C(0xABCDEF0123456789));
    expect_lsn("ABCDEF01/23456789", UINT64_C(0xABCDEF0123456789));
    expect_lsn("aBcD/eF", UINT64_C(0xABCD000000EF));
}

static void test_lsn_parse_refuses_anything_else(void **state)
{
    const char *bad[] = {
        "",           "0",     "/",           "1/",          "/1",
        "G/0",        "0/G",   "123456789/0", "0/123456789", " 0/0",
        "0/0 ",       "+1/0",  "-1/0",        "0/+1",        "0/-1",
        "0x1/0",      "0/0x1", "0//0",        "0/0/0",       "2000028",
        "0/2000028x", "0\t/0", "0/ 0",        "0 /0",        "1/2\n",
    };

    (void)state;
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        expect_refused(bad[i]);
    expect_refused(NULL);
}

static void test_lsn_parse_prefix_stops_after_the_lsn(void **state)
{
    const char *line = "1A/FF000000\tno recovery target specified", *s = line;
    const char *bad = "1A/ rest", *b = bad;
    pg_lsn lsn = 0;

    (void)state;
    assert_true(lsn_parse_prefix(&s, &lsn));
    assert_true(lsn == ((pg_lsn)0x1A << 32 | 0xFF000000));
    assert_ptr_equal(s, line + strlen("1A/FF000000"));
    assert_false(lsn_parse_prefix(&b, &lsn));
    assert_ptr_equal(b, bad);
    b = NULL;
    assert_false(lsn_parse_prefix(&b, &lsn));
    assert_false(lsn_parse_prefix(NULL, &lsn));
}

static void test_lsn_format_prints_as_postgresql_does(void **state)
{
    char text[LSN_TEXT_MAX];

    (void)state;
    assert_string_equal(lsn_format(0, text), "0/0");
    assert_string_equal(text, "0/0");
    assert_string_equal(lsn_format(0x2000028, text), "0/2000028");
    assert_string_equal(lsn_format((pg_lsn)0x1A << 32 | 0xFF000000, text), "1A/FF000000");
    assert_string_equal(lsn_format(UINT64_MAX, text), "FFFFFFFF/FFFFFFFF");
    assert_int_equal(strlen(text) + 1, LSN_TEXT_MAX);
}

static void test_lsn_round_trips(void **state)
{
    const pg_lsn values[] = {0,
                             1,
                             0x2000028,
                             UINT64_C(0xFFFFFFFF),
                             UINT64_C(0x100000000),
                             UINT64_C(0x123456789ABCDEF0),
                             UINT64_MAX};
    const char *texts[] = {"0/0", "1A/FF000000", "FFFFFFFF/FFFFFFFF", "DEAD/BEEF"};
    char text[LSN_TEXT_MAX];

    (void)state;
    for (size_t i = 0; i < sizeof(values) / sizeof(values[0]); i++) {
        pg_lsn back = 0;
        assert_true(lsn_parse(lsn_format(values[i], text), &back));
        assert_true(back == values[i]);
    }
    for (size_t i = 0; i < sizeof(texts) / sizeof(texts[0]); i++) {
        pg_lsn v = 0;
        assert_true(lsn_parse(texts[i], &v));
        assert_string_equal(lsn_format(v, text), texts[i]);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_lsn_parse_reads_both_halves),
        cmocka_unit_test(test_lsn_parse_takes_either_case),
        cmocka_unit_test(test_lsn_parse_refuses_anything_else),
        cmocka_unit_test(test_lsn_parse_prefix_stops_after_the_lsn),
        cmocka_unit_test(test_lsn_format_prints_as_postgresql_does),
        cmocka_unit_test(test_lsn_round_trips),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
