/*
 * test_deadline.c - covers src/io/deadline.c on a simulated clock: reading on time releases
 * nothing, reading a little behind releases reserve threads one at a time (each judged after it
 * has had time to work), reading far behind or past the target releases them all at once, and
 * reading that stays behind with everything released is late.
 */
#include "helpers.h"

#include "io/deadline.h"

#define GB 1000000000ULL

/* 10 GB to read, a 100 s deadline from 0 (the reading ends by 90 s), 2 reserve threads. */
static void start(deadline_control *c)
{
    deadline_init(c, 0, 100, 0, 10 * GB, 2);
}

static void test_the_target_keeps_time_for_the_end(void **state)
{
    deadline_control c;

    (void)state;
    start(&c);
    assert_true(c.target == 90.0); /* 10 % of the deadline */
    deadline_init(&c, 1000, 20, 1002, GB, 1);
    assert_true(c.target == 1018.0); /* 10 % */
    deadline_init(&c, 1000, 5, 1002, GB, 1);
    assert_true(c.target == 1004.0); /* at least 1 s */
    assert_true(c.start == 1002.0);
}

static void test_reading_on_time_releases_nothing(void **state)
{
    deadline_control c;

    (void)state;
    start(&c);
    /* 200 MB/s: 10 GB in 50 s, well before 90 s */
    for (double t = 0.25; t < 50; t += 0.25)
        assert_int_equal(deadline_step(&c, t, (uint64_t)(t * 200e6)), 0);
    assert_false(c.late);
}

static void test_reading_behind_releases_one_at_a_time(void **state)
{
    deadline_control c;
    double t = 0.25;
    uint64_t done = 0;

    (void)state;
    start(&c);
    /* before a rate can be judged: nothing, however slow */
    assert_int_equal(deadline_step(&c, 0.5, 1), 0);
    /* 90 MB/s: 110 s for 10 GB, behind from the first judgement, not twice the 89 s left */
    for (; t <= 1.0; t += 0.25)
        done = (uint64_t)(t * 90e6);
    assert_int_equal(deadline_step(&c, 1.0, done), 1);
    assert_true(c.releases[0].at == 1.0);
    assert_int_equal(c.releases[0].released, 1);
    /* the released thread is judged after it has worked a while: no second release at once */
    assert_int_equal(deadline_step(&c, 1.5, done + 25000000), 1);
    /* with it the reading goes at 150 MB/s: 66 s for the rest, within 85 % of the 88 s left */
    for (t = 1.25; t < 60; t += 0.25) {
        done += (uint64_t)(0.25 * 150e6);
        assert_int_equal(deadline_step(&c, t, done), 1);
    }
    assert_false(c.late);
}

static void test_reading_that_stays_behind_is_late(void **state)
{
    deadline_control c;
    uint64_t done = 0;
    unsigned n = 0;

    (void)state;
    start(&c);
    /* 80 MB/s whatever is released (124 s for the rest): one goes, then the other, then late */
    for (double t = 0.25; t < 10; t += 0.25) {
        done += (uint64_t)(0.25 * 80e6);
        n = deadline_step(&c, t, done);
    }
    assert_int_equal(n, 2);
    assert_true(c.late);
    assert_int_equal(c.nreleases, 2);
    assert_true(c.releases[1].at > c.releases[0].at + DEADLINE_SETTLE_S - 0.01);
    assert_int_equal(c.releases[1].released, 2);
}

static void test_reading_far_behind_releases_all_at_once(void **state)
{
    deadline_control c;
    uint64_t done = 0;

    (void)state;
    start(&c);
    /* 10 MB/s: 1000 s for 10 GB, more than twice the 89 s left: no time to go step by step */
    for (double t = 0.25; t < 1.0; t += 0.25) {
        done += (uint64_t)(0.25 * 10e6);
        assert_int_equal(deadline_step(&c, t, done), 0);
    }
    done += (uint64_t)(0.25 * 10e6);
    assert_int_equal(deadline_step(&c, 1.0, done), 2);
    assert_int_equal(c.nreleases, 1);
    assert_int_equal(c.releases[0].released, 2);
    assert_false(c.late);
    /* judged again only after they have worked a while */
    assert_int_equal(deadline_step(&c, 1.5, done + 1), 2);
    assert_false(c.late);
}

static void test_no_progress_yet_is_judged_only_when_it_lasts(void **state)
{
    deadline_control c;

    (void)state;
    start(&c);
    /* nothing read after 2 s of a 90 s target: reads in flight, not yet a verdict */
    assert_int_equal(deadline_step(&c, 2, 0), 0);
    /* nothing read after 10 s (more than a tenth of the time): behind */
    assert_int_equal(deadline_step(&c, 10, 0), 1);
}

static void test_past_the_target_every_thread_goes(void **state)
{
    deadline_control c;

    (void)state;
    deadline_init(&c, 0, 6, 0, GB, 3); /* reading must end by 5 s */
    assert_int_equal(deadline_step(&c, 6, GB / 2), 3);
    assert_false(c.late);
    assert_int_equal(deadline_step(&c, 7, GB / 2 + 1), 3);
    assert_true(c.late);
    /* all read: nothing more to decide */
    assert_int_equal(deadline_step(&c, 10, GB), 3);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_the_target_keeps_time_for_the_end),
        cmocka_unit_test(test_reading_on_time_releases_nothing),
        cmocka_unit_test(test_reading_behind_releases_one_at_a_time),
        cmocka_unit_test(test_reading_that_stays_behind_is_late),
        cmocka_unit_test(test_reading_far_behind_releases_all_at_once),
        cmocka_unit_test(test_no_progress_yet_is_judged_only_when_it_lasts),
        cmocka_unit_test(test_past_the_target_every_thread_goes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
