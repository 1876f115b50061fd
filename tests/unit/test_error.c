/* test_error.c - covers src/util/error.c: the first error wins, with its kind; a later mark sets
 * the kind. */
#include "helpers.h"

#include "util/error.h"

static void test_the_first_error_wins_and_a_later_mark_sets_its_kind(void **state)
{
    pgd_error err = {0};

    (void)state;
    err_mark(&err, PGD_ERR_DAMAGED); /* nothing to mark yet */
    assert_false(err.set);
    assert_false(err_is(&err, PGD_ERR_FAILED));
    err_set(&err, "first");
    assert_true(err_is(&err, PGD_ERR_FAILED));
    err_mark(&err, PGD_ERR_TRANSIENT);
    err_set(&err, "second"); /* keeps the first cause, and its kind */
    assert_string_equal(err.msg, "first");
    assert_true(err_is(&err, PGD_ERR_TRANSIENT));
    err_prefix(&err, "context");
    assert_true(err_is(&err, PGD_ERR_TRANSIENT));
    err_mark(&err, PGD_ERR_DAMAGED); /* a caller that learns more: the last mark wins */
    assert_true(err_is(&err, PGD_ERR_DAMAGED));
    assert_false(err_is(NULL, PGD_ERR_FAILED));
    err_clear(&err);
    assert_false(err.set);
    err_errno(&err, 2, "third");
    assert_true(err_is(&err, PGD_ERR_FAILED));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_the_first_error_wins_and_a_later_mark_sets_its_kind),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
