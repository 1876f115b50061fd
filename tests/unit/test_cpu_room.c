/*
 * test_cpu_room.c - covers src/io/cpu_room.c: the vCPUs the other processes leave (this
 * process's own time counted as idle), the streams that makes room for, and a normal-priority
 * thread judging itself on simulated counters: one that rarely waits for a CPU stays, one that
 * waits more than CPU_ROOM_WAIT of the time moves; the decision once the backup has run
 * CPU_ROOM_START_S, given and measured; the kernel's counters read for real.
 */
#include "helpers.h"

#include <time.h>

#include "io/cpu_room.h"
#include "util/progress.h"

/* 2 vCPUs, one second: 200 ticks in all */
static cpu_sample at(double t, uint64_t idle, uint64_t self)
{
    return (cpu_sample){.at = t, .total = (uint64_t)(t * 200), .idle = idle, .self = self};
}

static void test_the_others_left_counts_our_own_time_as_theirs_to_take(void **state)
{
    cpu_sample a = at(0, 0, 0), b;

    (void)state;
    /* half the time idle, a quarter ours: the others used a quarter, 1.5 vCPUs left */
    b = at(1, 100, 50);
    assert_true(cpu_room_others_left(&a, &b, 2) > 1.49 && cpu_room_others_left(&a, &b, 2) < 1.51);
    /* nothing idle, nothing ours: the others took both */
    b = at(1, 0, 0);
    assert_true(cpu_room_others_left(&a, &b, 2) < 0.01);
    /* our time counted at other ticks than the machine's: never more than the busy time */
    b = at(1, 150, 80);
    assert_true(cpu_room_others_left(&a, &b, 2) > 1.99);
    /* no time passed: nothing is known, nothing left */
    assert_true(cpu_room_others_left(&a, &a, 2) == 0);
}

static void test_a_stream_for_each_vcpu_left(void **state)
{
    (void)state;
    assert_int_equal(cpu_room_streams(0, 2), 0);
    assert_int_equal(cpu_room_streams(CPU_ROOM_STREAM - 0.01, 2), 0);
    assert_int_equal(cpu_room_streams(CPU_ROOM_STREAM, 2), 1);
    assert_int_equal(cpu_room_streams(1 + CPU_ROOM_STREAM - 0.01, 2), 1);
    assert_int_equal(cpu_room_streams(1 + CPU_ROOM_STREAM, 2), 2);
    assert_int_equal(cpu_room_streams(16, 2), 2); /* never more than there are */
    assert_int_equal(cpu_room_streams(16, 0), 0);
}

/* A thread's counters at `t` after `run` and `wait` seconds in all. */
static cpu_thread_sample th(double t, double run, double wait)
{
    return (cpu_thread_sample){
        .at = t, .run = (uint64_t)(run * 1e9), .wait = (uint64_t)(wait * 1e9)};
}

static void test_a_thread_that_rarely_waits_stays(void **state)
{
    cpu_contention c = {0};
    cpu_thread_sample s;
    double run = 0, wait = 0;

    (void)state;
    s = th(0, 0, 0);
    assert_false(cpu_room_contention_judge(&c, &s)); /* the first sample starts the window */
    /* 60 s at 0.7 of a vCPU, waiting a tenth of the time it wanted one, then just under the line */
    for (int t = 1; t <= 60; t++) {
        run += 0.63;
        wait += t <= 30 ? 0.07 : 0.63 * CPU_ROOM_WAIT / (1 - CPU_ROOM_WAIT) - 0.01;
        s = th(t, run, wait);
        assert_false(cpu_room_contention_judge(&c, &s));
    }
    assert_int_equal(c.judged, 60);
    assert_true(c.wait_min > 0.099 && c.wait_min < 0.101);
    assert_true(c.wait_max < CPU_ROOM_WAIT && c.wait_max > CPU_ROOM_WAIT - 0.02);
    /* a thread that slept the whole window (reads in flight) waited for nothing */
    s = th(61, run, wait);
    assert_false(cpu_room_contention_judge(&c, &s));
}

static void test_a_thread_that_waits_for_the_cpu_moves(void **state)
{
    cpu_contention c = {0};
    cpu_thread_sample s = th(0, 0, 0);

    (void)state;
    assert_false(cpu_room_contention_judge(&c, &s));
    s = th(1, 0.5, 0.05);
    assert_false(cpu_room_contention_judge(&c, &s));
    /* exactly half: not yet */
    s = th(2, 0.9, 0.45);
    assert_false(cpu_room_contention_judge(&c, &s));
    /* then the queries want twice the vCPUs: it ran 0.3 s and waited 0.6 s */
    s = th(3, 1.2, 1.05);
    assert_true(cpu_room_contention_judge(&c, &s));
    assert_true(c.wait_max > 0.66 && c.wait_max < 0.67);
}

static void test_the_window_is_read_once_a_second(void **state)
{
    cpu_contention c = {0};
    double t0;

    (void)state;
    /* the first step reads the kernel's counters and starts the window */
    assert_false(cpu_room_contention_step(&c, clock_seconds()));
    assert_true(c.started);
    t0 = c.since.at;
    /* within the window nothing is read again */
    assert_false(cpu_room_contention_step(&c, t0 + CPU_ROOM_WINDOW_S / 2));
    assert_true(c.since.at == t0);
    assert_int_equal(c.judged, 0);
    /* after it, the window is judged (whatever it says: a loaded test machine may keep this
     * thread waiting for a share of the little it ran) */
    (void)cpu_room_contention_step(&c, t0 + CPU_ROOM_WINDOW_S);
    assert_int_equal(c.judged, 1);
    assert_true(c.since.at > t0);
}

static void test_the_room_is_decided_once_after_the_first_second(void **state)
{
    cpu_room_start r;

    (void)state;
    /* the others left one vCPU of two: one of two reserve threads joins, and only once */
    cpu_room_start_init(&r, 1.0, 2);
    assert_false(cpu_room_start_step(&r, r.since + CPU_ROOM_START_S / 2, 2));
    assert_false(r.decided);
    assert_true(cpu_room_start_step(&r, r.since + CPU_ROOM_START_S, 2));
    assert_true(r.decided && r.known);
    assert_int_equal(r.normal, 1);
    assert_false(cpu_room_start_step(&r, r.since + 5, 2));
    assert_int_equal(r.normal, 1);
    /* a busy host: none; an idle one: as many as wait, no more */
    cpu_room_start_init(&r, 0.2, 2);
    assert_true(cpu_room_start_step(&r, r.since + 2, 2));
    assert_int_equal(r.normal, 0);
    cpu_room_start_init(&r, 64, 2);
    assert_true(cpu_room_start_step(&r, r.since + 2, 2));
    assert_int_equal(r.normal, 2);
    /* measured for real: known, and no more than the vCPUs */
    cpu_room_start_init(&r, -1, 2);
    assert_true(r.t0_taken);
    assert_true(cpu_room_start_step(&r, r.since + CPU_ROOM_START_S, 2));
    assert_true(r.known && r.left >= 0 && r.left <= 2.001 && r.normal <= 2);
}

/* Burn this thread's CPU for `seconds` of its own time, however fast the
 * machine: a fixed loop count can finish inside one scheduler tick. */
static void spin_thread_cpu(double seconds)
{
    struct timespec t0, t;
    volatile unsigned long spin = 0;

    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t0);
    do {
        for (unsigned long i = 0; i < 100000UL; i++)
            spin += i;
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    } while ((double)(t.tv_sec - t0.tv_sec) + (double)(t.tv_nsec - t0.tv_nsec) / 1e9 < seconds);
}

static void test_the_kernel_counters_are_read(void **state)
{
    cpu_sample a, b;
    pgd_error err = {0};

    (void)state;
    assert_true(cpu_room_sample(&a, &err));
    spin_thread_cpu(0.1); /* ten of the kernel's 10 ms CPU-time units */
    assert_true(cpu_room_sample(&b, &err));
    assert_true(a.total > 0 && a.idle <= a.total);
    assert_true(b.total >= a.total && b.idle >= a.idle && b.self >= a.self);
    assert_true(b.at > a.at);
    /* the loop above took this process's time: it shows in our own counter */
    assert_true(b.self > a.self);
    {
        cpu_thread_sample ta, tb;
        assert_true(cpu_room_thread_sample(&ta));
        spin_thread_cpu(0.05);
        /* the kernel adds a thread's run time up at a tick or when it stops
         * running: sleeping a moment makes the counter current */
        nanosleep(&(struct timespec){.tv_nsec = 1000000}, NULL);
        assert_true(cpu_room_thread_sample(&tb));
        assert_true(tb.run > ta.run && tb.wait >= ta.wait);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_the_others_left_counts_our_own_time_as_theirs_to_take),
        cmocka_unit_test(test_a_stream_for_each_vcpu_left),
        cmocka_unit_test(test_a_thread_that_rarely_waits_stays),
        cmocka_unit_test(test_a_thread_that_waits_for_the_cpu_moves),
        cmocka_unit_test(test_the_window_is_read_once_a_second),
        cmocka_unit_test(test_the_room_is_decided_once_after_the_first_second),
        cmocka_unit_test(test_the_kernel_counters_are_read),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
