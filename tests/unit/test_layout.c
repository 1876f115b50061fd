/* test_layout.c - covers src/repo/layout.c: backup ids and WAL names. */
#include "helpers.h"

#include "repo/layout.h"

static void test_backup_ids(void **state)
{
    char id[BACKUP_ID_LEN + 1];

    (void)state;
    layout_backup_id(1795989599, id); /* 2026-11-29 21:59:59 UTC */
    assert_string_equal(id, "20261129T215959F");
    assert_true(layout_is_backup_id(id));
    assert_false(layout_is_backup_id("20261129T215959X"));
    assert_false(layout_is_backup_id("2026112XT215959F"));
    assert_false(layout_is_backup_id("20261129T2159590F"));
    assert_false(layout_is_backup_id("../../etc/passwdF"));
}

static void test_backup_paths(void **state)
{
    char path[LAYOUT_PATH_MAX];

    (void)state;
    layout_backup_dir("20261129T215959F", path, sizeof(path));
    assert_string_equal(path, "backups/20261129T215959F");
    layout_backup_object("20261129T215959F", CLAIM_NAME, path, sizeof(path));
    assert_string_equal(path, "backups/20261129T215959F/claim.json");
    layout_sentinel_path("20261129T215959F", path, sizeof(path));
    assert_string_equal(path, "backups/20261129T215959F.done.json");
}

static void test_wal_names(void **state)
{
    char path[256];

    (void)state;
    layout_wal_path("000000010000000000000002", COMPRESS_LZ4, path, sizeof(path));
    assert_string_equal(path, "wal/00000001/000000010000000000000002.lz4");
    layout_wal_path("00000002.history", COMPRESS_NONE, path, sizeof(path));
    assert_string_equal(path, "wal/00000002/00000002.history");
    layout_partition_name(12, COMPRESS_ZSTD, path, sizeof(path));
    assert_string_equal(path, "part_0012.tar.zst");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_backup_ids),
        cmocka_unit_test(test_backup_paths),
        cmocka_unit_test(test_wal_names),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
