/* test_delta_dir.c - covers src/restore/delta_dir.c: what restore --delta refuses before it
 * writes, pg_control moved aside, and what the backup does not have removed (and what is kept).
 */
#include "helpers.h"

#include <limits.h>
#include <stdint.h>

#include "restore/delta_dir.h"

#define SYSID       UINT64_C(7412345678901234567)
#define SYSID_TEXT  "7412345678901234567"
#define OTHER_TEXT  "1111111111111111111"
#define PID_NO_SUCH "999999999\n"

static void make_datadir(const char *dir)
{
    char path[PATH_MAX];
    uint64_t sysid = SYSID;
    unsigned char control[512] = {0};

    memcpy(control, &sysid, sizeof(sysid));
    snprintf(path, sizeof(path), "%s/global", dir);
    assert_int_equal(mkdir(path, 0700), 0);
    snprintf(path, sizeof(path), "%s/global/pg_control", dir);
    write_test_file(path, control, sizeof(control));
}

static void test_absent_or_empty_directories_pass(void **state)
{
    char *tmp = test_tmpdir(), path[PATH_MAX];
    pgd_error err = {0};

    (void)state;
    snprintf(path, sizeof(path), "%s/absent", tmp);
    assert_true(delta_dir_check(path, SYSID_TEXT, &err));
    assert_true(delta_dir_check(tmp, SYSID_TEXT, &err));
    rm_rf(tmp);
}

static void test_a_directory_without_pg_control_is_refused(void **state)
{
    char *tmp = test_tmpdir(), path[PATH_MAX];
    pgd_error err = {0};

    (void)state;
    snprintf(path, sizeof(path), "%s/file", tmp);
    write_test_file(path, "x", 1);
    assert_false(delta_dir_check(tmp, SYSID_TEXT, &err));
    assert_non_null(strstr(err.msg, "not a data directory of this system"));
    rm_rf(tmp);
}

static void test_another_system_is_refused_and_the_same_accepted(void **state)
{
    char *tmp = test_tmpdir();
    pgd_error err = {0};

    (void)state;
    make_datadir(tmp);
    assert_true(delta_dir_check(tmp, SYSID_TEXT, &err));
    assert_false(delta_dir_check(tmp, OTHER_TEXT, &err));
    assert_non_null(strstr(err.msg, "another system (system identifier " SYSID_TEXT));
    rm_rf(tmp);
}

static void test_a_live_postmaster_is_refused_a_stale_one_not(void **state)
{
    char *tmp = test_tmpdir(), path[PATH_MAX], pid[32];
    pgd_error err = {0};

    (void)state;
    make_datadir(tmp);
    snprintf(path, sizeof(path), "%s/postmaster.pid", tmp);
    snprintf(pid, sizeof(pid), "%d\n", (int)getpid());
    write_test_file(path, pid, strlen(pid));
    assert_false(delta_dir_check(tmp, SYSID_TEXT, &err));
    assert_non_null(strstr(err.msg, "a server is running in it"));
    write_test_file(path, "", 0);
    err = (pgd_error){0}; /* the first error wins: start afresh */
    assert_false(delta_dir_check(tmp, SYSID_TEXT, &err));
    assert_non_null(strstr(err.msg, "names no process"));
    write_test_file(path, PID_NO_SUCH, strlen(PID_NO_SUCH));
    assert_true(delta_dir_check(tmp, SYSID_TEXT, &err));
    rm_rf(tmp);
}

static void test_retired_pg_control_still_tells_the_system(void **state)
{
    char *tmp = test_tmpdir(), path[PATH_MAX];
    const char *dests[1] = {NULL};
    manifest m;
    pgd_error err = {0};
    extract_plan p = {.backup_id = "B", .m = &m, .target = tmp, .spc_dest = dests};

    (void)state;
    manifest_init(&m);
    make_datadir(tmp);
    assert_true(delta_dir_retire_control(&p, &err));
    snprintf(path, sizeof(path), "%s/global/pg_control", tmp);
    assert_int_equal(access(path, F_OK), -1);
    assert_true(delta_dir_check(tmp, SYSID_TEXT, &err));
    assert_false(delta_dir_check(tmp, OTHER_TEXT, &err));
    /* a second time (an interrupted run): nothing to move, no error */
    assert_true(delta_dir_retire_control(&p, &err));
    manifest_free(&m);
    rm_rf(tmp);
}

static void add(manifest *m, const char *path, bool is_dir)
{
    manifest_file f = {
        .path = (char *)path, .is_dir = is_dir, .mode = is_dir ? 0700 : 0600, .partition = 1};

    manifest_add_file(m, &f);
}

static void test_what_the_backup_does_not_have_is_removed(void **state)
{
    char *tmp = test_tmpdir(), path[PATH_MAX], outside[PATH_MAX];
    const char *dests[1] = {NULL};
    manifest m;
    pgd_error err = {0};
    target_dir dirs[1];
    size_t removed = 0;
    extract_plan p = {.backup_id = "B", .m = &m, .target = tmp, .spc_dest = dests};

    (void)state;
    manifest_init(&m);
    add(&m, "base", true);
    add(&m, "base/1", true);
    add(&m, "base/1/kept", false);
    add(&m, "base/1/linked", false);
    add(&m, "base/1/hard", false);
    add(&m, "base/1/dir_is_file", false);
    manifest_build_index(&m);
    memset(dirs, 0, sizeof(dirs));
    snprintf(dirs[0].real, sizeof(dirs[0].real), "%s", tmp);
    snprintf(path, sizeof(path), "%s/base", tmp);
    assert_int_equal(mkdir(path, 0700), 0);
    snprintf(path, sizeof(path), "%s/base/1", tmp);
    assert_int_equal(mkdir(path, 0700), 0);
    snprintf(path, sizeof(path), "%s/base/1/extra", tmp);
    write_test_file(path, "x", 1);
    snprintf(path, sizeof(path), "%s/base/1/kept", tmp);
    write_test_file(path, "x", 1);
    snprintf(outside, sizeof(outside), "%s/outside", tmp);
    write_test_file(outside, "o", 1);
    snprintf(path, sizeof(path), "%s/base/1/linked", tmp);
    assert_int_equal(symlink(outside, path), 0);
    snprintf(path, sizeof(path), "%s/base/1/hard", tmp);
    assert_int_equal(link(outside, path), 0);
    snprintf(path, sizeof(path), "%s/base/1/dir_is_file", tmp);
    assert_int_equal(mkdir(path, 0700), 0);
    assert_true(delta_dir_remove_extra(&p, dirs, &removed, &err));
    /* extra, linked, hard, dir_is_file, and "outside" itself (not in the backup) */
    assert_int_equal(removed, 5);
    snprintf(path, sizeof(path), "%s/base/1/kept", tmp);
    assert_int_equal(access(path, F_OK), 0);
    snprintf(path, sizeof(path), "%s/base/1/extra", tmp);
    assert_int_equal(access(path, F_OK), -1);
    /* nothing was followed out: the file the links pointed at is gone only as an extra */
    snprintf(path, sizeof(path), "%s/base/1/linked", tmp);
    assert_int_equal(access(path, F_OK), -1);
    manifest_free(&m);
    rm_rf(tmp);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_absent_or_empty_directories_pass),
        cmocka_unit_test(test_a_directory_without_pg_control_is_refused),
        cmocka_unit_test(test_another_system_is_refused_and_the_same_accepted),
        cmocka_unit_test(test_a_live_postmaster_is_refused_a_stale_one_not),
        cmocka_unit_test(test_retired_pg_control_still_tells_the_system),
        cmocka_unit_test(test_what_the_backup_does_not_have_is_removed),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
