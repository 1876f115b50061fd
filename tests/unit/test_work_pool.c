/*
 * test_work_pool.c - covers src/util/work_pool.c: every task runs once,
 * the first error wins and stops the others, a signal stops the job, and
 * each thread's finish learns whether the job is still whole; a task that
 * claims the next tasks runs them itself, and no other thread does; reserve
 * threads released from the start work, the others wait.
 */
#include "helpers.h"

#include <stdatomic.h>

#include "util/work_pool.h"

#define NTASKS 200

typedef struct counter {
    atomic_int *runs;                     /* per task */
    atomic_int *finished;                 /* threads whose finish ran */
    atomic_int *finish_ok;                /* ... with ok */
    int fail_at;                          /* task that fails, -1: none */
    volatile sig_atomic_t *raise_at_task; /* set *cancel at task 10 */
} counter;

static bool count_task(work_pool *pool, void *worker, size_t task, pgd_error *err)
{
    counter *c = worker;

    atomic_fetch_add(&c->runs[task], 1);
    work_pool_advance(pool, 3);
    if ((int)task == c->fail_at)
        return err_set(err, "task %zu failed", task);
    if (c->raise_at_task != NULL && task == 10)
        *c->raise_at_task = SIGTERM;
    return true;
}

static bool count_finish(work_pool *pool, void *worker, bool ok, pgd_error *err)
{
    counter *c = worker;

    (void)pool;
    (void)err;
    atomic_fetch_add(c->finished, 1);
    if (ok)
        atomic_fetch_add(c->finish_ok, 1);
    return true;
}

static bool run_job(unsigned threads, int fail_at, volatile sig_atomic_t *cancel, atomic_int *runs,
                    int *finished, int *finish_ok, uint64_t *advanced, pgd_error *err)
{
    atomic_int fin = 0, fin_ok = 0;
    counter workers[4];
    work_pool_job job = {.threads = threads,
                         .ntasks = NTASKS,
                         .workers = workers,
                         .worker_size = sizeof(workers[0]),
                         .run = count_task,
                         .finish = count_finish,
                         .thread_name = "test thread",
                         .cancel = cancel};
    bool ok;

    for (unsigned i = 0; i < threads; i++)
        workers[i] = (counter){runs, &fin, &fin_ok, fail_at, cancel};
    ok = work_pool_run(&job, advanced, err);
    *finished = atomic_load(&fin);
    *finish_ok = atomic_load(&fin_ok);
    return ok;
}

static void test_every_task_runs_once(void **state)
{
    atomic_int runs[NTASKS];
    pgd_error err = {0};
    uint64_t advanced;
    int finished, finish_ok;

    (void)state;
    for (int i = 0; i < NTASKS; i++)
        atomic_init(&runs[i], 0);
    assert_true(run_job(4, -1, NULL, runs, &finished, &finish_ok, &advanced, &err));
    for (int i = 0; i < NTASKS; i++)
        assert_int_equal(atomic_load(&runs[i]), 1);
    assert_int_equal(advanced, 3 * NTASKS);
    assert_int_equal(finished, 4);
    assert_int_equal(finish_ok, 4);
}

static void test_the_first_error_wins_and_stops_the_rest(void **state)
{
    atomic_int runs[NTASKS];
    pgd_error err = {0};
    int finished, finish_ok, ran = 0;

    (void)state;
    for (int i = 0; i < NTASKS; i++)
        atomic_init(&runs[i], 0);
    assert_false(run_job(1, 7, NULL, runs, &finished, &finish_ok, NULL, &err));
    assert_string_equal(err.msg, "task 7 failed");
    for (int i = 0; i < NTASKS; i++)
        ran += atomic_load(&runs[i]);
    assert_int_equal(ran, 8); /* one thread: tasks 0..7, none after the failure */
    assert_int_equal(finished, 1);
    assert_int_equal(finish_ok, 0); /* told the job failed: it discards, not commits */
}

static void test_a_signal_stops_the_job(void **state)
{
    atomic_int runs[NTASKS];
    volatile sig_atomic_t cancel = 0;
    pgd_error err = {0};
    int finished, finish_ok, ran = 0;

    (void)state;
    for (int i = 0; i < NTASKS; i++)
        atomic_init(&runs[i], 0);
    assert_false(run_job(2, -1, &cancel, runs, &finished, &finish_ok, NULL, &err));
    assert_string_equal(err.msg, "interrupted by signal 15");
    for (int i = 0; i < NTASKS; i++)
        ran += atomic_load(&runs[i]);
    assert_true(ran < NTASKS);
    assert_int_equal(finish_ok, 0);
}

static bool silent_failure(work_pool *pool, void *worker, size_t task, pgd_error *err)
{
    (void)pool;
    (void)worker;
    (void)task;
    (void)err;
    return false;
}

static void test_a_task_that_fails_without_a_word_is_reported(void **state)
{
    int worker = 0;
    pgd_error err = {0};
    work_pool_job job = {.threads = 1,
                         .ntasks = 3,
                         .workers = &worker,
                         .worker_size = sizeof(worker),
                         .run = silent_failure,
                         .thread_name = "test thread"};

    (void)state;
    assert_false(work_pool_run(&job, NULL, &err));
    assert_string_equal(err.msg, "a test thread stopped without saying why");
}

/* Each task claims the next two and runs them itself (a reader reading ahead). */
static bool claiming_task(work_pool *pool, void *worker, size_t task, pgd_error *err)
{
    counter *c = worker;
    size_t next;

    (void)err;
    atomic_fetch_add(&c->runs[task], 1);
    for (int k = 0; k < 2 && work_pool_claim(pool, &next); k++)
        atomic_fetch_add(&c->runs[next], 1);
    return true;
}

static void test_claimed_tasks_run_once_by_the_claimer(void **state)
{
    atomic_int runs[NTASKS], fin = 0, fin_ok = 0;
    counter workers[3];
    pgd_error err = {0};
    work_pool_job job = {.threads = 3,
                         .ntasks = NTASKS,
                         .workers = workers,
                         .worker_size = sizeof(workers[0]),
                         .run = claiming_task,
                         .thread_name = "test thread"};

    (void)state;
    for (int i = 0; i < NTASKS; i++)
        atomic_init(&runs[i], 0);
    for (int i = 0; i < 3; i++)
        workers[i] = (counter){runs, &fin, &fin_ok, -1, NULL};
    assert_true(work_pool_run(&job, NULL, &err));
    for (int i = 0; i < NTASKS; i++)
        assert_int_equal(atomic_load(&runs[i]), 1);
}

/* Once the job is stopping, a claim gets nothing. */
static bool claim_after_cancel(work_pool *pool, void *worker, size_t task, pgd_error *err)
{
    counter *c = worker;
    size_t next;

    (void)err;
    atomic_fetch_add(&c->runs[task], 1);
    *c->raise_at_task = SIGINT;
    return !work_pool_claim(pool, &next) || err_set(err, "claimed task %zu while stopping", next);
}

static void test_nothing_is_claimed_once_stopping(void **state)
{
    atomic_int runs[NTASKS], fin = 0, fin_ok = 0;
    volatile sig_atomic_t cancel = 0;
    counter worker = {runs, &fin, &fin_ok, -1, &cancel};
    pgd_error err = {0};
    work_pool_job job = {.threads = 1,
                         .ntasks = NTASKS,
                         .workers = &worker,
                         .worker_size = sizeof(worker),
                         .run = claim_after_cancel,
                         .thread_name = "test thread",
                         .cancel = &cancel};

    (void)state;
    for (int i = 0; i < NTASKS; i++)
        atomic_init(&runs[i], 0);
    assert_false(work_pool_run(&job, NULL, &err));
    assert_string_equal(err.msg, "interrupted by signal 2");
    assert_int_equal(atomic_load(&runs[0]), 1);
    assert_int_equal(atomic_load(&runs[1]), 0);
}

/* A task that takes a moment, counted per thread: which threads worked. */
static bool slow_task(work_pool *pool, void *worker, size_t task, pgd_error *err)
{
    (void)pool;
    (void)task;
    (void)err;
    (*(atomic_int *)worker)++;
    usleep(300);
    return true;
}

static void test_reserve_threads_released_from_the_start_work(void **state)
{
    atomic_int done[3] = {0};
    uint64_t advanced = 0;
    pgd_error err = {0};
    work_pool_job job = {.threads = 3,
                         .ntasks = NTASKS,
                         .workers = done,
                         .worker_size = sizeof(done[0]),
                         .run = slow_task,
                         .thread_name = "test thread",
                         .reserve = 2,
                         .released = 1};

    (void)state;
    /* the first thread, and the first reserve one: the second waits until the tasks are gone */
    assert_true(work_pool_run(&job, &advanced, &err));
    assert_int_equal(done[0] + done[1] + done[2], NTASKS);
    assert_true(done[0] > 0 && done[1] > 0);
    assert_int_equal(done[2], 0);
    /* only reserve threads, one released: it does it all; more released than held: all work */
    memset(done, 0, sizeof(done));
    job.threads = 2;
    assert_true(work_pool_run(&job, &advanced, &err));
    assert_int_equal(done[0], NTASKS);
    assert_int_equal(done[1], 0);
    memset(done, 0, sizeof(done));
    job.released = 5;
    assert_true(work_pool_run(&job, &advanced, &err));
    assert_int_equal(done[0] + done[1], NTASKS);
    assert_true(done[0] > 0 && done[1] > 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_task_runs_once),
        cmocka_unit_test(test_the_first_error_wins_and_stops_the_rest),
        cmocka_unit_test(test_a_signal_stops_the_job),
        cmocka_unit_test(test_a_task_that_fails_without_a_word_is_reported),
        cmocka_unit_test(test_claimed_tasks_run_once_by_the_claimer),
        cmocka_unit_test(test_nothing_is_claimed_once_stopping),
        cmocka_unit_test(test_reserve_threads_released_from_the_start_work),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
