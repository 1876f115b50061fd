/*
 * test_common.c - covers src/cmd/common.c: the one mapping of a command and
 * an error's kind to the exit status (command_exit_status), every kind for
 * every command whose statuses differ; a repository's own settings after '?'
 * (command_repo_options); the outcome fields of --json (command_json_outcome).
 */
#include "helpers.h"

#include <jansson.h>

#include "cmd/cmd.h"
#include "cmd/common.h"

#define KINDS 6

static const pgd_error_kind kinds[KINDS] = {PGD_ERR_FAILED,    PGD_ERR_USAGE,  PGD_ERR_NOT_FOUND,
                                            PGD_ERR_TRANSIENT, PGD_ERR_EXISTS, PGD_ERR_DAMAGED};

/* The status of `command` for an error of `kind`. */
static int status_of(unsigned command, pgd_error_kind kind)
{
    pgd_error err = {0};

    err_set(&err, "some failure");
    err_mark(&err, kind);
    return command_exit_status(command, &err);
}

/* One row of the table: the statuses of `command`, in the order of `kinds`. */
static void assert_row(unsigned command, const int want[KINDS])
{
    for (size_t i = 0; i < KINDS; i++) {
        if (status_of(command, kinds[i]) != want[i])
            fail_msg("command %#x, kind %d: status %d, expected %d", command, (int)kinds[i],
                     status_of(command, kinds[i]), want[i]);
    }
}

/* In a directory of its own, with or without standby.signal (wal-fetch reads the current one). */
static char *enter_tmpdir(bool standby, int *old)
{
    char *dir = test_tmpdir();

    *old = open(".", O_RDONLY | O_DIRECTORY);
    assert_true(*old >= 0);
    assert_int_equal(chdir(dir), 0);
    if (standby)
        write_test_file("standby.signal", "", 0);
    return dir;
}

static void leave_tmpdir(char *dir, int old)
{
    assert_int_equal(fchdir(old), 0);
    close(old);
    rm_rf(dir);
}

static void test_backup_says_3_for_checksum_errors_and_2_for_usage(void **state)
{
    /*                    FAILED      USAGE       NOT_FOUND   TRANSIENT   EXISTS      DAMAGED */
    const int want[KINDS] = {EXIT_ERROR, EXIT_USAGE, EXIT_ERROR,
                             EXIT_ERROR, EXIT_ERROR, EXIT_CHECKSUM_ERRORS};

    (void)state;
    assert_row(CMD_BACKUP, want);
    assert_int_equal(status_of(CMD_BACKUP, PGD_ERR_DAMAGED), 3);
}

static void test_verify_says_3_for_damage_and_2_for_usage(void **state)
{
    const int want[KINDS] = {EXIT_ERROR, EXIT_USAGE, EXIT_ERROR,
                             EXIT_ERROR, EXIT_ERROR, EXIT_DAMAGED};

    (void)state;
    assert_row(CMD_VERIFY, want);
    assert_int_equal(status_of(CMD_VERIFY, PGD_ERR_DAMAGED), 3);
}

static void test_other_commands_say_1_whatever_the_kind_but_usage(void **state)
{
    const unsigned others[] = {CMD_RESTORE, CMD_LIST,  CMD_WAL_PUSH, CMD_CACHE,
                               CMD_TUNE,    CMD_CHECK, CMD_DELETE};
    const int want[KINDS] = {EXIT_ERROR, EXIT_USAGE, EXIT_ERROR,
                             EXIT_ERROR, EXIT_ERROR, EXIT_ERROR};

    (void)state;
    for (size_t i = 0; i < sizeof(others) / sizeof(others[0]); i++)
        assert_row(others[i], want);
}

static void test_wal_fetch_says_1_only_for_a_file_not_there(void **state)
{
    /* usage too is fatal: PostgreSQL must not end recovery on a typo in restore_command */
    const int want[KINDS] = {EXIT_WAL_FATAL, EXIT_WAL_FATAL, EXIT_WAL_NOT_ARCHIVED,
                             EXIT_WAL_FATAL, EXIT_WAL_FATAL, EXIT_WAL_FATAL};
    int old;
    char *dir = enter_tmpdir(false, &old);

    (void)state;
    assert_row(CMD_WAL_FETCH, want);
    assert_int_equal(status_of(CMD_WAL_FETCH, PGD_ERR_NOT_FOUND), 1);
    assert_int_equal(status_of(CMD_WAL_FETCH, PGD_ERR_TRANSIENT), 254);
    leave_tmpdir(dir, old);
}

static void test_wal_fetch_on_a_standby_says_1_for_a_repository_that_did_not_answer(void **state)
{
    /* a standby asks again on 1; corruption, usage and the rest stay fatal there too */
    const int want[KINDS] = {EXIT_WAL_FATAL,        EXIT_WAL_FATAL, EXIT_WAL_NOT_ARCHIVED,
                             EXIT_WAL_NOT_ARCHIVED, EXIT_WAL_FATAL, EXIT_WAL_FATAL};
    int old;
    char *dir = enter_tmpdir(true, &old);

    (void)state;
    assert_row(CMD_WAL_FETCH, want);
    leave_tmpdir(dir, old);
}

static void test_an_unset_error_is_never_success(void **state)
{
    const unsigned commands[] = {CMD_BACKUP, CMD_RESTORE, CMD_LIST,  CMD_WAL_PUSH, CMD_WAL_FETCH,
                                 CMD_CACHE,  CMD_TUNE,    CMD_CHECK, CMD_DELETE,   CMD_VERIFY};
    pgd_error unset = {0};

    (void)state;
    for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++) {
        int want = status_of(commands[i], PGD_ERR_FAILED);
        assert_int_not_equal(want, EXIT_OK);
        assert_int_equal(command_exit_status(commands[i], NULL), want);
        assert_int_equal(command_exit_status(commands[i], &unset), want);
    }
}

/* delete's retention is a repository's own setting: given there it wins, else the command's. */
static void test_a_repository_setting_replaces_the_commands_retention(void **state)
{
    char *argv[] = {
        "--config=/dev/null", "--repo", "/a?retain-full=2&retain-since=7d", "--repo", "/b",
        "--retain-full",      "5"};
    pgd_options opts, *a, *b;
    pgd_error err = {0};

    (void)state;
    assert_true(options_parse(&opts, CMD_DELETE, 7, argv, &err));
    assert_int_equal(command_repo_count(&opts), 2);
    a = command_repo_options(&opts, 0, &err);
    b = command_repo_options(&opts, 1, &err);
    assert_non_null(a);
    assert_non_null(b);
    assert_string_equal(opt_str(a, OPT_REPO), "/a");
    assert_string_equal(opt_str(a, OPT_RETAIN_FULL), "2");
    assert_string_equal(opt_str(a, OPT_RETAIN_SINCE), "7d");
    assert_string_equal(opt_str(b, OPT_REPO), "/b");
    assert_string_equal(opt_str(b, OPT_RETAIN_FULL), "5");
    assert_null(opt_str(b, OPT_RETAIN_SINCE));
    command_repo_options_free(a);
    command_repo_options_free(b);
    options_free(&opts);
}

/* A setting no repository has is refused, naming it; the control is the one above. */
static void test_a_setting_that_is_not_a_repositorys_is_refused(void **state)
{
    char *argv[] = {"--config=/dev/null", "--repo", "/a?garbage-age=1d"};
    pgd_options opts;
    pgd_error err = {0};

    (void)state;
    assert_true(options_parse(&opts, CMD_DELETE, 3, argv, &err));
    assert_null(command_repo_options(&opts, 0, &err));
    assert_non_null(strstr(err.msg, "\"garbage-age\" is not a repository setting"));
    options_free(&opts);
}

/* --json's outcome: "ok" true on success; on failure false, the message, its kind, the status. */
static void test_json_outcome_says_ok_or_the_error_kind_and_status(void **state)
{
    pgd_error err = {0};
    json_t *o;

    (void)state;
    o = command_json_outcome(json_object(), EXIT_OK, NULL);
    assert_true(json_is_true(json_object_get(o, "ok")));
    assert_null(json_object_get(o, "error"));
    json_decref(o);
    err_set(&err, "repository \"/x\" does not exist");
    err_mark(&err, PGD_ERR_TRANSIENT);
    o = command_json_outcome(NULL, EXIT_ERROR, &err);
    assert_true(json_is_false(json_object_get(o, "ok")));
    assert_string_equal(json_string_value(json_object_get(o, "error")), err.msg);
    assert_string_equal(json_string_value(json_object_get(o, "error_kind")), "transient");
    assert_int_equal(json_integer_value(json_object_get(o, "exit_code")), EXIT_ERROR);
    json_decref(o);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_backup_says_3_for_checksum_errors_and_2_for_usage),
        cmocka_unit_test(test_verify_says_3_for_damage_and_2_for_usage),
        cmocka_unit_test(test_other_commands_say_1_whatever_the_kind_but_usage),
        cmocka_unit_test(test_wal_fetch_says_1_only_for_a_file_not_there),
        cmocka_unit_test(test_wal_fetch_on_a_standby_says_1_for_a_repository_that_did_not_answer),
        cmocka_unit_test(test_an_unset_error_is_never_success),
        cmocka_unit_test(test_a_repository_setting_replaces_the_commands_retention),
        cmocka_unit_test(test_a_setting_that_is_not_a_repositorys_is_refused),
        cmocka_unit_test(test_json_outcome_says_ok_or_the_error_kind_and_status),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
