/* test_extract.c - covers src/restore/extract.c: which backup paths are safe and where they land.
 */
#include "helpers.h"

#include "restore/extract.h"

static void test_safe_paths(void **state)
{
    (void)state;
    assert_true(restore_path_is_safe("base/1/1259"));
    assert_true(restore_path_is_safe("PG_VERSION"));
    assert_true(restore_path_is_safe("a..b/c"));
    assert_false(restore_path_is_safe(""));
    assert_false(restore_path_is_safe("/etc/passwd"));
    assert_false(restore_path_is_safe("../escape"));
    assert_false(restore_path_is_safe("base/../../escape"));
    assert_false(restore_path_is_safe("base/.."));
    assert_false(restore_path_is_safe("./base"));
    assert_false(restore_path_is_safe("base//1"));
    assert_false(restore_path_is_safe("base/"));
}

static void test_dest_paths(void **state)
{
    manifest m;
    pgd_error err = {0};
    const char *dests[] = {"/srv/newts"};
    char out[4096];
    extract_plan p = {.backup_id = "B", .m = &m, .target = "/srv/data", .spc_dest = dests};

    (void)state;
    manifest_init(&m);
    assert_true(manifest_add_tablespace(&m, 16384, "ts", "/srv/oldts", &err));
    assert_true(extract_dest_path(&p, "base/1/2", out, sizeof(out), &err));
    assert_string_equal(out, "/srv/data/base/1/2");
    assert_true(extract_dest_path(&p, "pg_tblspc/16384/PG_15_1/5/16385", out, sizeof(out), &err));
    assert_string_equal(out, "/srv/newts/PG_15_1/5/16385");
    /* an unknown tablespace oid stays inside the data directory */
    assert_true(extract_dest_path(&p, "pg_tblspc/99/x", out, sizeof(out), &err));
    assert_string_equal(out, "/srv/data/pg_tblspc/99/x");
    assert_false(extract_dest_path(&p, "pg_tblspc/16384", out, sizeof(out), &err));
    assert_non_null(strstr(err.msg, "tablespace link"));
    err_clear(&err);
    assert_false(extract_dest_path(&p, "../escape", out, sizeof(out), &err));
    assert_string_equal(err.msg, "refusing path \"../escape\" in backup \"B\": it would land "
                                 "outside the target directory");
    manifest_free(&m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_safe_paths),
        cmocka_unit_test(test_dest_paths),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
