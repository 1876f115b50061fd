/*
 * test_wal_history.c - covers what src/pg/wal_history.c reads beyond the
 * checks test_wal_segment.c feeds it: the lines of a timeline history file
 * (wal_history_parse, which delta_parent.c and restore's timelines use) and
 * the START TIMELINE of a backup_label.
 */
#include "helpers.h"

#include "pg/wal_history.h"

static void parse(const char *text, wal_history_entry **h, size_t *n)
{
    wal_history_parse(text, strlen(text), h, n);
}

static void test_history_lines_in_file_order(void **state)
{
    wal_history_entry *h;
    size_t n;

    (void)state;
    parse("1\t0/3000000\tno recovery target specified\n"
          "\n"
          "# a comment\n"
          "2\t1A/FF0000A0\tafter a restore point\n"
          "  5 ffffffff/ffffffff\n",
          &h, &n);
    assert_int_equal(n, 3);
    assert_int_equal(h[0].tli, 1);
    assert_true(h[0].end == 0x3000000);
    assert_int_equal(h[1].tli, 2);
    assert_true(h[1].end == ((pg_lsn)0x1A << 32 | 0xFF0000A0));
    assert_int_equal(h[2].tli, 5);
    assert_true(h[2].end == UINT64_MAX);
    free(h);
}

static void test_history_lines_that_are_no_entry_are_passed_over(void **state)
{
    wal_history_entry *h;
    size_t n;

    (void)state;
    /* no LSN, a bad LSN, a 9-digit half, timeline 0, no timeline, over 32 bits */
    parse("1\n2\tG/0\n3\t123456789/0\n0\t0/1\n\t0/2\n4294967296\t0/3\n7\t0/7", &h, &n);
    assert_int_equal(n, 1);
    assert_int_equal(h[0].tli, 7);
    assert_true(h[0].end == 7);
    free(h);
    parse("", &h, &n);
    assert_int_equal(n, 0);
    free(h);
}

static void test_label_timeline(void **state)
{
    uint32_t tli = 0;

    (void)state;
    assert_true(wal_history_label_timeline("START WAL LOCATION: 0/2000028 (file "
                                           "000000010000000000000002)\n"
                                           "CHECKPOINT LOCATION: 0/2000060\n"
                                           "START TIMELINE: 3\n",
                                           &tli));
    assert_int_equal(tli, 3);
    assert_true(wal_history_label_timeline("START TIMELINE: 4294967295", &tli));
    assert_true(tli == UINT32_MAX);
    tli = 9;
    assert_false(wal_history_label_timeline("START WAL LOCATION: 0/2000028\n", &tli));
    assert_false(wal_history_label_timeline("START TIMELINE: 0\n", &tli));
    assert_false(wal_history_label_timeline("START TIMELINE: \n", &tli));
    assert_false(wal_history_label_timeline("START TIMELINE: x\n", &tli));
    assert_false(wal_history_label_timeline("START TIMELINE: 4294967296\n", &tli));
    assert_false(wal_history_label_timeline("START TIMELINE: 12345678901\n", &tli));
    assert_int_equal(tli, 9);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_history_lines_in_file_order),
        cmocka_unit_test(test_history_lines_that_are_no_entry_are_passed_over),
        cmocka_unit_test(test_label_timeline),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
