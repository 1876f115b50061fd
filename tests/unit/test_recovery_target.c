/* test_recovery_target.c - covers src/restore/recovery_target.c: which targets a restore accepts.
 */
#include "helpers.h"

#include "restore/recovery_target.h"

static bool time_ok(const char *v)
{
    char why[256];
    return recovery_target_check_time(v, why, sizeof(why));
}

static void test_time_with_a_zone_is_accepted(void **state)
{
    (void)state;
    assert_true(time_ok("2026-11-29 21:00:00+00"));
    assert_true(time_ok("2026-11-29 21:00:00.123456+00"));
    assert_true(time_ok("2026-11-29T21:00:00Z"));
    assert_true(time_ok("2026-11-29 21:00+01:00"));
    assert_true(time_ok("2026-11-29 21:00:00 -0530"));
    assert_true(time_ok("2026-11-29 21:00:00 UTC"));
    assert_true(time_ok("2024-02-29 00:00:00+00")); /* leap day */
    if (access("/usr/share/zoneinfo/Europe/Berlin", F_OK) == 0)
        assert_true(time_ok("2026-11-29 22:00:00 Europe/Berlin"));
}

static void test_time_without_a_zone_or_malformed_is_refused(void **state)
{
    char why[256];

    (void)state;
    assert_false(recovery_target_check_time("2026-11-29 21:00:00", why, sizeof(why)));
    assert_non_null(strstr(why, "no time zone"));
    assert_false(time_ok("not-a-time"));
    assert_false(time_ok(""));
    assert_false(time_ok("2026-11-29"));
    assert_false(time_ok("2026-13-01 00:00:00+00"));
    assert_false(time_ok("2025-02-29 00:00:00+00"));
    assert_false(time_ok("2026-11-29 25:00:00+00"));
    assert_false(time_ok("2026-11-29 21:00:00+16"));
    assert_false(time_ok("2026-11-29 21:00:00+00 trailing"));
    assert_false(time_ok("2026-11-29 21:00:00' ; x"));
    assert_false(
        recovery_target_check_time("2026-11-29 21:00:00 Nowhere/Atlantis", why, sizeof(why)));
    assert_non_null(strstr(why, "unknown time zone"));
    assert_false(time_ok("2026-11-29 21:00:00 ../../etc/passwd"));
}

static void test_lsn_xid_and_name(void **state)
{
    char why[256];
    char longname[80];

    (void)state;
    assert_true(recovery_target_check_lsn("0/3000060", why, sizeof(why)));
    assert_true(recovery_target_check_lsn("FFFFFFFF/ffffffff", why, sizeof(why)));
    assert_false(recovery_target_check_lsn("3000060", why, sizeof(why)));
    assert_false(recovery_target_check_lsn("0/", why, sizeof(why)));
    assert_false(recovery_target_check_lsn("1FFFFFFFF/0", why, sizeof(why)));
    assert_false(recovery_target_check_lsn("0/3000060 ", why, sizeof(why)));

    assert_true(recovery_target_check_xid("1234", why, sizeof(why)));
    assert_true(recovery_target_check_xid("4294968530", why, sizeof(why))); /* xid8, epoch 1 */
    assert_false(recovery_target_check_xid("2", why, sizeof(why)));
    assert_false(recovery_target_check_xid("-5", why, sizeof(why)));
    assert_false(recovery_target_check_xid("12a", why, sizeof(why)));
    assert_false(recovery_target_check_xid("99999999999999999999999", why, sizeof(why)));
    assert_false(recovery_target_check_xid("", why, sizeof(why)));

    assert_true(recovery_target_check_name("it's a \\ name", why, sizeof(why)));
    assert_false(recovery_target_check_name("", why, sizeof(why)));
    memset(longname, 'x', 64);
    longname[64] = '\0';
    assert_false(recovery_target_check_name(longname, why, sizeof(why)));
    longname[63] = '\0';
    assert_true(recovery_target_check_name(longname, why, sizeof(why)));
}

static void test_time_to_seconds(void **state)
{
    char why[256];
    int64_t t;

    (void)state;
    assert_true(recovery_target_time_seconds("2026-11-29 21:00:00+00", &t, why, sizeof(why)));
    assert_int_equal(t, 1795986000);
    assert_true(recovery_target_time_seconds("2026-11-29T21:00:00.9Z", &t, why, sizeof(why)));
    assert_int_equal(t, 1795986000); /* the fraction dropped */
    assert_true(recovery_target_time_seconds("2026-11-29 23:30:00+02:30", &t, why, sizeof(why)));
    assert_int_equal(t, 1795986000);
    assert_true(recovery_target_time_seconds("2026-11-29 16:00:00-05", &t, why, sizeof(why)));
    assert_int_equal(t, 1795986000);
    /* a zone name: Berlin is an hour ahead of UTC in November, two in July */
    assert_true(
        recovery_target_time_seconds("2026-11-29 22:00:00 Europe/Berlin", &t, why, sizeof(why)));
    assert_int_equal(t, 1795986000);
    assert_true(
        recovery_target_time_seconds("2026-07-01 14:00:00 Europe/Berlin", &t, why, sizeof(why)));
    assert_int_equal(t, 1782907200);
    assert_false(recovery_target_time_seconds("2026-11-29 21:00:00", &t, why, sizeof(why)));
}

static void test_target_against_a_backups_end(void **state)
{
    backup_info bi;
    char end[64];

    (void)state;
    memset(&bi, 0, sizeof(bi));
    bi.stop_time = 1795986000; /* 2026-11-29 21:00:00 UTC */
    bi.stop_lsn = 0x8000100;
    /* a time: later than the second the backup ended in */
    assert_int_equal(recovery_target_versus_backup(&bi, "recovery_target_time",
                                                   "2026-11-29 21:00:01+00", end, sizeof(end)),
                     RECOVERY_TARGET_AFTER_END);
    assert_int_equal(recovery_target_versus_backup(&bi, "recovery_target_time",
                                                   "2026-11-29 21:00:00.999+00", end, sizeof(end)),
                     RECOVERY_TARGET_BEFORE_END);
    assert_string_equal(end, "2026-11-29 21:00:00+00");
    /* an LSN: at or after the stop LSN */
    assert_int_equal(
        recovery_target_versus_backup(&bi, "recovery_target_lsn", "0/8000100", end, sizeof(end)),
        RECOVERY_TARGET_AFTER_END);
    assert_int_equal(
        recovery_target_versus_backup(&bi, "recovery_target_lsn", "0/80000FF", end, sizeof(end)),
        RECOVERY_TARGET_BEFORE_END);
    assert_string_equal(end, "0/8000100");
    /* an xid: not recorded, then recorded (epoch 1, xid 1000) */
    assert_int_equal(
        recovery_target_versus_backup(&bi, "recovery_target_xid", "5000", end, sizeof(end)),
        RECOVERY_TARGET_UNKNOWN);
    bi.stop_next_xid = (1ULL << 32) | 1000;
    assert_int_equal(
        recovery_target_versus_backup(&bi, "recovery_target_xid", "1000", end, sizeof(end)),
        RECOVERY_TARGET_AFTER_END);
    assert_int_equal(
        recovery_target_versus_backup(&bi, "recovery_target_xid", "999", end, sizeof(end)),
        RECOVERY_TARGET_BEFORE_END);
    assert_int_equal(recovery_target_versus_backup(&bi, "recovery_target_xid", "4294968295", end,
                                                   sizeof(end)), /* xid8: epoch 1, xid 999 */
                     RECOVERY_TARGET_BEFORE_END);
    assert_string_equal(end, "next transaction id 4294968296");
    /* a restore point: only replay finds it */
    assert_int_equal(
        recovery_target_versus_backup(&bi, "recovery_target_name", "rp", end, sizeof(end)),
        RECOVERY_TARGET_UNKNOWN);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_time_with_a_zone_is_accepted),
        cmocka_unit_test(test_time_without_a_zone_or_malformed_is_refused),
        cmocka_unit_test(test_lsn_xid_and_name),
        cmocka_unit_test(test_time_to_seconds),
        cmocka_unit_test(test_target_against_a_backups_end),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
