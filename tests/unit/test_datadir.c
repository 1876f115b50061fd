/* test_datadir.c - covers src/pg/datadir.c: the pg_basebackup exclusions and the walk. */
#include "helpers.h"

#include <fcntl.h>

#include "pg/datadir.h"

static void test_exclusion_rules(void **state)
{
    bool dir_only;

    (void)state;
    assert_true(datadir_excluded("", "postmaster.pid", false, &dir_only));
    assert_true(datadir_excluded("", "postmaster.opts", false, &dir_only));
    assert_true(datadir_excluded("", "backup_label", false, &dir_only));
    assert_true(datadir_excluded("", "standby.signal", false, &dir_only));
    assert_false(datadir_excluded("", "postgresql.conf", false, &dir_only));
    assert_false(datadir_excluded("", "PG_VERSION", false, &dir_only));
    /* only at the top */
    assert_false(datadir_excluded("base/1", "postmaster.pid", false, &dir_only));
    assert_true(datadir_excluded("base/1", "pg_internal.init", false, &dir_only));
    assert_true(datadir_excluded("base", "pgsql_tmp", true, &dir_only));
    assert_true(datadir_excluded("base/1", "t3_16384", false, &dir_only));
    assert_true(datadir_excluded("base/1", "t3_16384_fsm", false, &dir_only));
    assert_false(datadir_excluded("base/1", "16384", false, &dir_only));
    assert_false(datadir_excluded("", "pg_wal", true, &dir_only));
    assert_true(dir_only);
    assert_false(datadir_excluded("", "pg_subtrans", true, &dir_only));
    assert_true(dir_only);
    assert_false(datadir_excluded("", "base", true, &dir_only));
    assert_false(dir_only);
    assert_false(datadir_is_temp_relation("t_1"));
    assert_false(datadir_is_temp_relation("t1"));
    assert_true(datadir_is_temp_relation("t12_345.1"));
}

static void touch(const char *dir, const char *rel, size_t size)
{
    char path[4096];
    char *buf = calloc(1, size + 1);

    snprintf(path, sizeof(path), "%s/%s", dir, rel);
    write_test_file(path, buf, size);
    free(buf);
}

static void mkdirs(const char *dir, const char *rel)
{
    char cmd[4300];
    snprintf(cmd, sizeof(cmd), "mkdir -p '%s/%s'", dir, rel);
    assert_int_equal(system(cmd), 0);
}

static const datadir_entry *find(const datadir *dd, const char *path)
{
    for (size_t i = 0; i < dd->n; i++)
        if (strcmp(dd->entries[i].path, path) == 0)
            return &dd->entries[i];
    return NULL;
}

static void test_walk_applies_exclusions_and_follows_tablespaces(void **state)
{
    char *root = test_tmpdir();
    char pgdata[4200], spc[4200], link[4300];
    datadir dd;
    pgd_error err = {0};

    (void)state;
    snprintf(pgdata, sizeof(pgdata), "%s/data", root);
    snprintf(spc, sizeof(spc), "%s/ts", root);
    mkdirs(pgdata, "base/5");
    mkdirs(pgdata, "pg_wal/archive_status");
    mkdirs(pgdata, "pg_tblspc");
    mkdirs(pgdata, "pg_stat_tmp");
    mkdirs(pgdata, "base/pgsql_tmp");
    mkdirs(spc, "PG_15_202209061/5");
    mkdirs(spc, "PG_14_202107181/5");
    touch(pgdata, "PG_VERSION", 3);
    touch(pgdata, "postmaster.pid", 10);
    touch(pgdata, "pg_wal/000000010000000000000001", 100);
    touch(pgdata, "pg_stat_tmp/global.stat", 10);
    touch(pgdata, "base/pgsql_tmp/pgsql_tmp123.0", 10);
    touch(pgdata, "base/5/1259", 8192);
    touch(pgdata, "base/5/16400", 8192); /* unlogged: has an init fork */
    touch(pgdata, "base/5/16400_fsm", 8192);
    touch(pgdata, "base/5/16400.1", 8192);
    touch(pgdata, "base/5/16400_init", 0);
    touch(pgdata, "base/5/t3_16500", 8192); /* temporary */
    touch(pgdata, "base/5/pg_internal.init", 10);
    touch(spc, "PG_15_202209061/5/16384", 16384);
    touch(spc, "PG_14_202107181/5/16384", 16384);
    snprintf(link, sizeof(link), "%s/pg_tblspc/16384", pgdata);
    assert_int_equal(symlink(spc, link), 0);

    assert_true(datadir_walk(&dd, pgdata, 150004, &err));
    assert_non_null(find(&dd, "PG_VERSION"));
    assert_non_null(find(&dd, "base/5/1259"));
    assert_int_equal(find(&dd, "base/5/1259")->size, 8192);
    assert_non_null(find(&dd, "base/5/16400_init"));
    assert_null(find(&dd, "base/5/16400"));
    assert_null(find(&dd, "base/5/16400_fsm"));
    assert_null(find(&dd, "base/5/16400.1"));
    assert_null(find(&dd, "base/5/t3_16500"));
    assert_null(find(&dd, "base/5/pg_internal.init"));
    assert_null(find(&dd, "postmaster.pid"));
    assert_null(find(&dd, "base/pgsql_tmp"));
    assert_null(find(&dd, "base/pgsql_tmp/pgsql_tmp123.0"));
    assert_non_null(find(&dd, "pg_wal"));
    assert_true(find(&dd, "pg_wal")->is_dir);
    assert_non_null(find(&dd, "pg_wal/archive_status"));
    assert_null(find(&dd, "pg_wal/000000010000000000000001"));
    assert_non_null(find(&dd, "pg_stat_tmp"));
    assert_null(find(&dd, "pg_stat_tmp/global.stat"));
    assert_non_null(find(&dd, "pg_tblspc/16384/PG_15_202209061/5/16384"));
    assert_null(find(&dd, "pg_tblspc/16384/PG_14_202107181/5/16384"));
    assert_null(find(&dd, "pg_tblspc/16384")); /* the link itself is in the tablespace list */
    assert_int_equal(dd.ntablespaces, 1);
    assert_int_equal(dd.tablespaces[0].oid, 16384);
    assert_string_equal(dd.tablespaces[0].location, spc);
    datadir_free(&dd);
    rm_rf(root);
}

/*
 * Links other than pg_tblspc/<oid> are recorded, not followed (a loop would
 * never end; a linked file would be backed up as if it lived here); pg_wal
 * as a link is recorded as the directory it stands for.
 */
static void test_walk_records_links_as_links(void **state)
{
    char *root = test_tmpdir();
    char pgdata[4200], wal[4200], conf[4200], path[4300];
    datadir dd;
    pgd_error err = {0};

    (void)state;
    snprintf(pgdata, sizeof(pgdata), "%s/data", root);
    snprintf(wal, sizeof(wal), "%s/wal", root);
    snprintf(conf, sizeof(conf), "%s/etc.conf", root);
    mkdirs(pgdata, "base/5");
    mkdirs(root, "wal/archive_status");
    touch(root, "etc.conf", 42);
    touch(root, "wal/000000010000000000000001", 100);
    touch(pgdata, "base/5/1259", 8192);
    snprintf(path, sizeof(path), "%s/loop", pgdata);
    assert_int_equal(symlink(".", path), 0);
    snprintf(path, sizeof(path), "%s/postgresql.conf", pgdata);
    assert_int_equal(symlink(conf, path), 0);
    snprintf(path, sizeof(path), "%s/pg_wal", pgdata);
    assert_int_equal(symlink(wal, path), 0);
    snprintf(path, sizeof(path), "%s/base/5/dangling", pgdata);
    assert_int_equal(symlink("nowhere", path), 0);
    snprintf(path, sizeof(path), "%s/postmaster.pid", pgdata);
    assert_int_equal(symlink(conf, path), 0); /* excluded by name, link or not */
    /* pg_tblspc itself moved elsewhere: followed, its tablespace links with it */
    mkdirs(root, "tblspc");
    mkdirs(root, "ts/PG_15_202209061/5");
    touch(root, "ts/PG_15_202209061/5/16385", 8192);
    snprintf(path, sizeof(path), "%s/pg_tblspc", pgdata);
    snprintf(conf + strlen(root), sizeof(conf) - strlen(root), "/tblspc");
    assert_int_equal(symlink(conf, path), 0);
    snprintf(path, sizeof(path), "%s/tblspc/16384", root);
    snprintf(conf + strlen(root), sizeof(conf) - strlen(root), "/ts");
    assert_int_equal(symlink(conf, path), 0);
    snprintf(conf + strlen(root), sizeof(conf) - strlen(root), "/etc.conf");

    assert_true(datadir_walk(&dd, pgdata, 150004, &err));
    assert_non_null(find(&dd, "loop"));
    assert_string_equal(find(&dd, "loop")->link, ".");
    assert_false(find(&dd, "loop")->is_dir);
    assert_int_equal(find(&dd, "loop")->size, 0);
    assert_null(find(&dd, "loop/base"));
    assert_string_equal(find(&dd, "postgresql.conf")->link, conf);
    assert_int_equal(find(&dd, "postgresql.conf")->size, 0);
    assert_string_equal(find(&dd, "base/5/dangling")->link, "nowhere");
    assert_null(find(&dd, "base/5/1259")->link);
    assert_null(find(&dd, "postmaster.pid"));
    assert_true(find(&dd, "pg_wal")->is_dir);
    assert_null(find(&dd, "pg_wal")->link);
    assert_non_null(find(&dd, "pg_wal/archive_status"));
    assert_null(find(&dd, "pg_wal/000000010000000000000001"));
    assert_true(find(&dd, "pg_tblspc")->is_dir);
    assert_non_null(find(&dd, "pg_tblspc/16384/PG_15_202209061/5/16385"));
    assert_int_equal(dd.ntablespaces, 1);
    datadir_free(&dd);
    rm_rf(root);
}

static void test_walk_of_missing_dir_names_it(void **state)
{
    datadir dd;
    pgd_error err = {0};

    (void)state;
    assert_false(datadir_walk(&dd, "/tmp/pgd-unit-missing-pgdata", 150004, &err));
    assert_non_null(strstr(err.msg, "/tmp/pgd-unit-missing-pgdata"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_exclusion_rules),
        cmocka_unit_test(test_walk_applies_exclusions_and_follows_tablespaces),
        cmocka_unit_test(test_walk_of_missing_dir_names_it),
        cmocka_unit_test(test_walk_records_links_as_links),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
