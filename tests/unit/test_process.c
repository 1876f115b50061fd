/*
 * test_process.c - covers src/util/process.c: this process's identity, and how the state of the
 * process a claim names is decided (alive, gone, or not decidable from here).
 */
#include "helpers.h"

#include <signal.h>
#include <sys/wait.h>

#include "util/process.h"

static void test_self_names_this_process(void **state)
{
    process_identity me;
    char why[256];

    (void)state;
    process_self(&me);
    assert_int_equal(me.pid, (int64_t)getpid());
    assert_true(me.host[0] != '\0');
    assert_int_equal(strlen(me.boot_id), 36); /* a UUID, where /proc says it (Linux) */
    assert_true(me.start_ticks > 0);
    assert_true(me.pid_ns > 0);
    assert_int_equal(process_check(&me, why, sizeof(why)), PROCESS_ALIVE);
    assert_non_null(strstr(why, "still running"));
}

static void test_an_ended_process_is_gone(void **state)
{
    process_identity child;
    char why[256];
    pid_t pid = fork();

    (void)state;
    assert_true(pid >= 0);
    if (pid == 0)
        _exit(0);
    process_self(&child);
    child.pid = pid;
    child.start_ticks = 0;
    assert_int_equal(waitpid(pid, NULL, 0), pid);
    assert_int_equal(process_check(&child, why, sizeof(why)), PROCESS_GONE);
    assert_non_null(strstr(why, "which has ended"));
}

static void test_a_reused_pid_or_an_earlier_boot_is_gone(void **state)
{
    process_identity id;
    char why[256];

    (void)state;
    process_self(&id);
    id.start_ticks += 1; /* this pid, but a process that started at another time */
    assert_int_equal(process_check(&id, why, sizeof(why)), PROCESS_GONE);
    assert_non_null(strstr(why, "another's now"));
    process_self(&id);
    snprintf(id.boot_id, sizeof(id.boot_id), "00000000-0000-0000-0000-000000000000");
    assert_int_equal(process_check(&id, why, sizeof(why)), PROCESS_GONE);
    assert_non_null(strstr(why, "before its last boot"));
}

static void test_what_cannot_be_seen_from_here_is_unknown(void **state)
{
    process_identity id;
    char why[256];

    (void)state;
    process_self(&id);
    snprintf(id.host, sizeof(id.host), "elsewhere.example");
    assert_int_equal(process_check(&id, why, sizeof(why)), PROCESS_UNKNOWN);
    assert_non_null(strstr(why, "of host elsewhere.example"));
    process_self(&id);
    id.pid_ns += 1; /* a container that shares the host's name */
    assert_int_equal(process_check(&id, why, sizeof(why)), PROCESS_UNKNOWN);
    /* an older claim (no boot id) whose pid is not running: it may be of an earlier boot */
    process_self(&id);
    id.boot_id[0] = '\0';
    id.pid = 0x7ffffff0;
    assert_int_equal(process_check(&id, why, sizeof(why)), PROCESS_UNKNOWN);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_self_names_this_process),
        cmocka_unit_test(test_an_ended_process_is_gone),
        cmocka_unit_test(test_a_reused_pid_or_an_earlier_boot_is_gone),
        cmocka_unit_test(test_what_cannot_be_seen_from_here_is_unknown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
