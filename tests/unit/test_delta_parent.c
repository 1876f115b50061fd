/*
 * test_delta_parent.c - covers the timeline rule of src/backup/delta_parent.c:
 * a parent on the current timeline serves; one on an ancestor serves only
 * if it started before that timeline's switch point; a later or unrelated
 * timeline, or no history, does not.
 */
#include "helpers.h"

#include "backup/delta_parent.h"

static const char *HISTORY_3 = "1\t0/3000000\tno recovery target specified\n"
                               "2\t0/5000000\tat restore point \"x\"\n";

static void test_timeline_rule(void **state)
{
    (void)state;
    assert_true(delta_parent_timeline_ok(3, 0x9000000, 3, NULL));
    assert_true(delta_parent_timeline_ok(1, 0x2000000, 3, HISTORY_3));
    assert_false(
        delta_parent_timeline_ok(1, 0x3000000, 3, HISTORY_3)); /* at the switch: after it */
    assert_true(delta_parent_timeline_ok(2, 0x4FFFFFF, 3, HISTORY_3));
    assert_false(delta_parent_timeline_ok(2, 0x5000028, 3, HISTORY_3));
    assert_false(delta_parent_timeline_ok(4, 0x1000000, 3, HISTORY_3)); /* a later timeline */
    assert_false(delta_parent_timeline_ok(1, 0x1000000, 3, NULL));      /* no history file */
    assert_false(delta_parent_timeline_ok(2, 0x1000000, 3, "1\t0/3000000\tx\n")); /* not listed */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_timeline_rule),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
