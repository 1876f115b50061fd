/* test_extract.c - covers src/restore/extract.c: which backup paths are safe and where they land.
 */
#include "helpers.h"

#include "restore/extract.h"

static void test_safe_paths(void **state)
{
    (void)state;
    assert_true(extract_path_is_safe("base/1/1259"));
    assert_true(extract_path_is_safe("PG_VERSION"));
    assert_true(extract_path_is_safe("a..b/c"));
    assert_false(extract_path_is_safe(""));
    assert_false(extract_path_is_safe("/etc/passwd"));
    assert_false(extract_path_is_safe("../escape"));
    assert_false(extract_path_is_safe("base/../../escape"));
    assert_false(extract_path_is_safe("base/.."));
    assert_false(extract_path_is_safe("./base"));
    assert_false(extract_path_is_safe("base//1"));
    assert_false(extract_path_is_safe("base/"));
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

static void test_modes_are_masked(void **state)
{
    (void)state;
    assert_int_equal(extract_mode(06777, false), 0640);
    assert_int_equal(extract_mode(0600, false), 0600);
    assert_int_equal(extract_mode(0, false), 0600);
    assert_int_equal(extract_mode(0644, false), 0640);
    assert_int_equal(extract_mode(01777, true), 0750);
    assert_int_equal(extract_mode(0700, true), 0700);
    assert_int_equal(extract_mode(0, true), 0700);
}

static void test_partition_names(void **state)
{
    (void)state;
    assert_true(extract_partition_name_is_valid("part_0001.tar.lz4", COMPRESS_LZ4));
    assert_true(extract_partition_name_is_valid("part_12345.tar.zst", COMPRESS_ZSTD));
    assert_true(extract_partition_name_is_valid("part_0002.tar", COMPRESS_NONE));
    assert_false(extract_partition_name_is_valid("part_0001.tar.zst", COMPRESS_LZ4));
    assert_false(extract_partition_name_is_valid("../../etc/hostname", COMPRESS_NONE));
    assert_false(extract_partition_name_is_valid("part_0000.tar", COMPRESS_NONE));
    assert_false(extract_partition_name_is_valid("part_1.tar", COMPRESS_NONE));
    assert_false(extract_partition_name_is_valid("part_0001.tar/../x", COMPRESS_NONE));
    assert_false(extract_partition_name_is_valid("part_-001.tar", COMPRESS_NONE));
    assert_false(extract_partition_name_is_valid("", COMPRESS_NONE));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_safe_paths),
        cmocka_unit_test(test_dest_paths),
        cmocka_unit_test(test_modes_are_masked),
        cmocka_unit_test(test_partition_names),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
