/*
 * test_rate_pace.c - --max-rate auto: /proc/stat read right, other
 * processes' CPU told apart from ours, the pacer's rule, and a real run
 * beside processes that keep every CPU busy.
 */
#define _GNU_SOURCE
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "io/cpu_load.h"
#include "io/rate_limit.h"
#include "util/progress.h"

#define MIB (1024.0 * 1024)

static void test_parse_proc_stat(void **state)
{
    cpu_sample s = {0};

    (void)state;
    assert_true(
        cpu_sample_parse("cpu  100 5 20 1000 30 1 2 3 0 0\ncpu0 50 2 10 500 15 0 1 1 0 0\n", &s));
    assert_int_equal(s.busy, 125);
    assert_int_equal(s.idle, 1030);
    assert_int_equal(s.total, 1161);
    /* an old kernel's four columns; a line that is not first */
    assert_true(cpu_sample_parse("intr 1\ncpu 1 2 3 4\n", &s));
    assert_int_equal(s.busy, 6);
    assert_int_equal(s.idle, 4);
    assert_int_equal(s.total, 10);
    assert_false(cpu_sample_parse("cpu0 1 2 3 4\nintr 5\n", &s));
    assert_false(cpu_sample_parse("cpu 1 2\n", &s));
    assert_false(cpu_sample_parse("", &s));
}

static void test_interval_subtracts_our_own_cpu(void **state)
{
    /* two CPUs, one second, 100 ticks/s: 150 ticks busy of which 0.5 s were ours */
    cpu_sample a = {.busy = 1000, .idle = 5000, .total = 6100, .own_s = 2.0, .at = 10.0};
    cpu_sample b = {.busy = 1150, .idle = 5040, .total = 6300, .own_s = 2.5, .at = 11.0};
    cpu_interval iv;

    (void)state;
    iv = cpu_interval_between(&a, &b, 100);
    assert_true(iv.others_cpus > 0.99 && iv.others_cpus < 1.01);
    assert_true(iv.idle_share > 0.199 && iv.idle_share < 0.201);
    assert_true(iv.seconds > 0.99 && iv.seconds < 1.01);
    /* ticks come whole: one tick per CPU either way, 2 CPUs over 1 s at 100 ticks/s */
    assert_true(iv.others_margin > 0.0199 && iv.others_margin < 0.0201);
    b.at = 10.1; /* the same ticks over a tenth of that time: 20 CPUs, each a tick off: 2 CPUs */
    iv = cpu_interval_between(&a, &b, 100);
    assert_true(iv.others_margin > 1.99 && iv.others_margin < 2.01);
    b.at = 11.0;
    /* more of our time than ticks counted (sampling): others did nothing, never negative */
    b.own_s = 4.0;
    iv = cpu_interval_between(&a, &b, 100);
    assert_true(iv.others_cpus == 0);
    /* a counter that steps back (the kernel's iowait may): nothing known, taken as idle */
    b = (cpu_sample){.busy = 1150, .idle = 4990, .total = 6300, .own_s = 2.0, .at = 11.0};
    iv = cpu_interval_between(&a, &b, 100);
    assert_true(iv.others_cpus == 0 && iv.idle_share == 1);
    b = (cpu_sample){.busy = 990, .idle = 5040, .total = 6300, .own_s = 2.0, .at = 11.0};
    iv = cpu_interval_between(&a, &b, 100);
    assert_true(iv.others_cpus == 0 && iv.idle_share == 1);
    /* no tick elapsed: nothing known, taken as idle */
    b = a;
    b.at = 10.1;
    iv = cpu_interval_between(&a, &b, 100);
    assert_true(iv.others_cpus == 0 && iv.idle_share == 1);
}

static void test_pace_rule(void **state)
{
    cpu_interval quiet = {.others_cpus = 0.1, .idle_share = 0.9, .seconds = 0.25};
    cpu_interval saturated = {.others_cpus = 1.9, .idle_share = 0.02, .seconds = 0.25};
    cpu_interval room = {.others_cpus = 1.0, .idle_share = 0.4, .seconds = 0.25};
    cpu_interval enough = {.others_cpus = 1.5, .idle_share = 0.15, .seconds = 0.25};
    double ceiling = 0, r;

    (void)state;
    /* others quiet: unlimited, and the pace it reached is remembered */
    assert_true(rate_pace_next(0, &quiet, 800 * MIB, &ceiling) == 0);
    assert_true(ceiling == 800 * MIB);
    assert_true(rate_pace_next(100 * MIB, &quiet, 100 * MIB, &ceiling) == 0);
    assert_true(ceiling == 800 * MIB); /* only unlimited reads raise it */
    /* others busy while unlimited: straight to the floor when they want every CPU; while the
     * CPUs still have time to spare, unlimited stays unlimited (a lightly loaded server) */
    assert_true(rate_pace_next(0, &saturated, 800 * MIB, &ceiling) == RATE_PACE_FLOOR);
    assert_true(rate_pace_next(0, &room, 800 * MIB, &ceiling) == 0);
    assert_true(rate_pace_next(0, &enough, 800 * MIB, &ceiling) == 0);
    /* others seemingly busy, but by less than the ticks can tell over a short look (the first,
     * after 0.1 s: a tick either way on two CPUs is 0.2 CPUs): unlimited; over a longer look the
     * same figure is busy */
    {
        cpu_interval first = {
            .others_cpus = 0.6, .others_margin = 0.2, .idle_share = 0, .seconds = 0.1};
        cpu_interval later = {
            .others_cpus = 0.6, .others_margin = 0.08, .idle_share = 0, .seconds = 0.25};
        assert_true(rate_pace_next(0, &first, 800 * MIB, &ceiling) == 0);
        assert_true(rate_pace_next(0, &later, 800 * MIB, &ceiling) == RATE_PACE_FLOOR);
    }
    /* saturated: halves, down to the floor and no further */
    assert_true(rate_pace_next(200 * MIB, &saturated, 200 * MIB, &ceiling) == 100 * MIB);
    assert_true(rate_pace_next(20 * MIB, &saturated, 20 * MIB, &ceiling) == RATE_PACE_FLOOR);
    assert_true(rate_pace_next(0, &saturated, 1 * MIB, &ceiling) == RATE_PACE_FLOOR);
    /* idle time left: grows by a quarter; in between: stays */
    assert_true(rate_pace_next(100 * MIB, &room, 100 * MIB, &ceiling) == 125 * MIB);
    assert_true(rate_pace_next(100 * MIB, &enough, 100 * MIB, &ceiling) == 100 * MIB);
    /* growth stops at the fastest unlimited pace, or twice what it reads when that is more */
    assert_true(rate_pace_next(790 * MIB, &room, 300 * MIB, &ceiling) == 800 * MIB);
    ceiling = 0;
    assert_true(rate_pace_next(100 * MIB, &room, 30 * MIB, &ceiling) == 60 * MIB);
    for (r = 16 * MIB; r < 1000 * MIB;) /* from the floor, all the way up, in steps of a quarter */
        r = rate_pace_next(r, &room, r, &ceiling);
    assert_true(r >= 1000 * MIB);
}

/* A paced limiter beside one spinning process per CPU: it slows down, and says so. */
static void test_paced_beside_busy_cpus(void **state)
{
    long nhogs = sysconf(_SC_NPROCESSORS_ONLN);
    pid_t *hogs = calloc((size_t)nhogs, sizeof(*hogs));
    rate_limit rl;
    pgd_error err = {0};
    rate_pace_report rep;
    double t0;
    uint64_t bytes = 0;

    (void)state;
    assert_non_null(hogs);
    for (long i = 0; i < nhogs; i++) {
        hogs[i] = fork();
        assert_true(hogs[i] >= 0);
        if (hogs[i] == 0)
            for (volatile unsigned long n = 0;; n++) /* until killed */
                ;
    }
    assert_true(rate_limit_init_paced(&rl, 1 << 20, &err));
    t0 = clock_seconds();
    while (clock_seconds() - t0 < 2.0) {
        rate_limit_acquire(&rl, 1 << 20);
        if (clock_seconds() - t0 >= 1.0) /* the second second: paced by then */
            bytes += 1 << 20;
    }
    rep = rate_limit_report(&rl);
    rate_limit_destroy(&rl);
    for (long i = 0; i < nhogs; i++) {
        kill(hogs[i], SIGKILL);
        waitpid(hogs[i], NULL, 0);
    }
    free(hogs);
    assert_true(rep.paced);
    assert_true(rep.others >= 0.5);
    assert_true(rep.slowed_s >= 1.0 && rep.slowed_s <= rep.seconds);
    assert_true(rep.seconds >= 1.9);
    assert_string_equal(rep.lost, "");
    assert_true(rep.lowest == RATE_PACE_FLOOR); /* every CPU busy: straight to the floor */
    /* unlimited until the first look (0.1 s), then at the floor: about one second's worth in the
     * second second (an unlimited loop acquires without end: it reads nothing) */
    assert_true((double)bytes <= 2 * RATE_PACE_FLOOR);
}

static void test_fixed_rate_reports_nothing(void **state)
{
    rate_limit rl;
    rate_pace_report rep;

    (void)state;
    rate_limit_init(&rl, 0, 1 << 20);
    rate_limit_acquire(&rl, 1 << 20);
    rep = rate_limit_report(&rl);
    rate_limit_destroy(&rl);
    assert_false(rep.paced);
    assert_true(rep.slowed_s == 0 && rep.lowest == 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse_proc_stat),
        cmocka_unit_test(test_interval_subtracts_our_own_cpu),
        cmocka_unit_test(test_pace_rule),
        cmocka_unit_test(test_paced_beside_busy_cpus),
        cmocka_unit_test(test_fixed_rate_reports_nothing),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
