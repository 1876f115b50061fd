/* test_target_dir.c - covers src/restore/target_dir.c: directories taken when absent or empty,
 * left as they were after a failure; paths resolved before they exist.
 */
#include "helpers.h"

#include <limits.h>

#include "restore/target_dir.h"

static void test_created_directories_and_parents_are_removed(void **state)
{
    char *tmp = test_tmpdir(), path[PATH_MAX], file[PATH_MAX + 8];
    target_dir d;
    pgd_error err = {0};
    durable_list *l = durable_list_new();
    struct stat st;

    (void)state;
    snprintf(path, sizeof(path), "%s/a/b/data", tmp);
    assert_true(target_dir_prepare(&d, path, "target directory", &err));
    assert_true(d.created);
    assert_int_equal(stat(path, &st), 0);
    assert_int_equal(st.st_mode & 07777, 0700);
    /* the directory, each directory made, and the parent of the topmost */
    target_dir_add_durable(&d, l);
    assert_int_equal(durable_list_count(l), 4);
    snprintf(file, sizeof(file), "%s/x", path);
    write_test_file(file, "x", 1);
    target_dir_cleanup(&d);
    target_dir_release(&d);
    snprintf(path, sizeof(path), "%s/a", tmp);
    assert_int_equal(access(path, F_OK), -1);
    assert_int_equal(access(tmp, F_OK), 0);
    durable_list_free(l);
    rm_rf(tmp);
}

static void test_existing_directory_and_symlink_are_kept(void **state)
{
    char *tmp = test_tmpdir(), real[PATH_MAX], link[PATH_MAX], file[PATH_MAX + 8];
    target_dir d;
    pgd_error err = {0};
    struct stat st;

    (void)state;
    snprintf(real, sizeof(real), "%s/real", tmp);
    snprintf(link, sizeof(link), "%s/link", tmp);
    assert_int_equal(mkdir(real, 0755), 0);
    assert_int_equal(symlink(real, link), 0);
    assert_true(target_dir_prepare(&d, link, "target directory", &err));
    assert_false(d.created);
    assert_string_equal(d.real, real);
    assert_int_equal(stat(real, &st), 0);
    assert_int_equal(st.st_mode & 07777, 0700); /* PostgreSQL refuses 0755 */
    snprintf(file, sizeof(file), "%s/sub", real);
    assert_int_equal(mkdir(file, 0700), 0);
    target_dir_cleanup(&d);
    target_dir_release(&d);
    assert_int_equal(lstat(link, &st), 0);
    assert_true(S_ISLNK(st.st_mode));
    assert_int_equal(stat(real, &st), 0);
    assert_int_equal(st.st_mode & 07777, 0755);
    assert_int_equal(access(file, F_OK), -1);
    /* not empty: refused, untouched */
    write_test_file(file, "x", 1);
    assert_false(target_dir_prepare(&d, real, "target directory", &err));
    assert_non_null(strstr(err.msg, "is not empty"));
    rm_rf(tmp);
}

static void test_resolve_and_within(void **state)
{
    char *tmp = test_tmpdir(), path[PATH_MAX], out[PATH_MAX], expect[PATH_MAX + 16];
    pgd_error err = {0};

    (void)state;
    snprintf(path, sizeof(path), "%s/missing/../x/./y//", tmp);
    assert_true(target_dir_resolve(path, out, sizeof(out), &err));
    snprintf(expect, sizeof(expect), "%s/x/y", tmp);
    assert_string_equal(out, expect);
    snprintf(path, sizeof(path), "%s/link", tmp);
    assert_int_equal(symlink("/", path), 0);
    snprintf(path, sizeof(path), "%s/link/nowhere", tmp);
    assert_true(target_dir_resolve(path, out, sizeof(out), &err));
    assert_string_equal(out, "/nowhere");
    assert_true(target_dir_is_within("/srv/data/ts", "/srv/data"));
    assert_true(target_dir_is_within("/srv/data", "/srv/data"));
    assert_false(target_dir_is_within("/srv/data2", "/srv/data"));
    assert_true(target_dir_is_within("/srv", "/"));
    rm_rf(tmp);
}

static void test_a_directory_in_use_is_refused(void **state)
{
    char *tmp = test_tmpdir();
    target_dir a, b;
    pgd_error err = {0};

    (void)state;
    assert_true(target_dir_prepare(&a, tmp, "target directory", &err));
    assert_false(target_dir_prepare(&b, tmp, "target directory", &err));
    assert_non_null(strstr(err.msg, "in use by another restore"));
    target_dir_release(&a);
    err_clear(&err);
    assert_true(target_dir_prepare(&b, tmp, "target directory", &err));
    target_dir_release(&b);
    rm_rf(tmp);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_created_directories_and_parents_are_removed),
        cmocka_unit_test(test_existing_directory_and_symlink_are_kept),
        cmocka_unit_test(test_resolve_and_within),
        cmocka_unit_test(test_a_directory_in_use_is_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
