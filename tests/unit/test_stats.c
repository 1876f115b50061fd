/* test_stats.c - covers src/util/stats.c: percentiles. */
#include "helpers.h"

#include <math.h>

#include "util/stats.h"

static void test_percentiles(void **state)
{
    double one[] = {42};
    double odd[] = {5, 1, 4, 2, 3};
    double hundred[100];

    (void)state;
    assert_true(stats_percentile(NULL, 0, 50) == 0);
    assert_true(stats_percentile(one, 1, 99) == 42);
    assert_true(stats_percentile(odd, 5, 50) == 3);
    assert_true(odd[0] == 1 && odd[4] == 5); /* sorted in place */
    assert_true(stats_percentile(odd, 5, 0) == 1);
    assert_true(stats_percentile(odd, 5, 100) == 5);
    assert_true(stats_percentile(odd, 5, 25) == 2);
    for (int i = 0; i < 100; i++)
        hundred[i] = 100 - i; /* 1..100, reversed */
    /* rank 0.99 * 99 = 98.01: between 99 and 100 */
    assert_true(fabs(stats_percentile(hundred, 100, 99) - 99.01) < 1e-9);
    assert_true(fabs(stats_percentile(hundred, 100, 50) - 50.5) < 1e-9);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_percentiles),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
