/*
 * test_politeness.c - --nice and --io-class idle take effect on the process
 * and on the threads it starts afterwards (the backup's readers and
 * compressors), and need no privilege.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "io/politeness.h"

#define IOPRIO_WHO_PROCESS 1
#define IOPRIO_CLASS_SHIFT 13
#define IOPRIO_CLASS_IDLE  3
#define NICE_STEP          7

static void *test_politeness_thread(void *arg)
{
    int *out = arg;

    errno = 0;
    out[0] = getpriority(PRIO_PROCESS, 0);
    out[1] = (int)syscall(SYS_ioprio_get, IOPRIO_WHO_PROCESS, 0) >> IOPRIO_CLASS_SHIFT;
    return NULL;
}

/* In a child, so the test process keeps its own priorities; as an unprivileged user when root. */
static void test_nice_and_idle_reach_later_threads(void **state)
{
    pid_t pid;
    int status;

    (void)state;
    pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        pgd_error err = {0};
        int before, seen[2];
        pthread_t th;

        if (getuid() == 0 && setuid(65534) != 0)
            _exit(10);
        before = getpriority(PRIO_PROCESS, 0);
        if (!politeness_nice(NICE_STEP, &err) || !politeness_io_class(true, &err))
            _exit(11);
        if (pthread_create(&th, NULL, test_politeness_thread, seen) != 0 ||
            pthread_join(th, NULL) != 0)
            _exit(12);
        /* the kernel stops at 19: under `nice -n 19 make check` there is no step left to take */
        if (seen[0] != (before + NICE_STEP < 19 ? before + NICE_STEP : 19))
            _exit(13);
        _exit(seen[1] == IOPRIO_CLASS_IDLE ? 0 : 14);
    }
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_nice_and_idle_reach_later_threads),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
