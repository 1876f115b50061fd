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
    char path[8400];
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

/*
 * The unlogged-fork rule, name by name: only the relation whose relfilenode has an init fork
 * loses its other forks and segments; a relfilenode that merely shares a prefix or suffix with
 * it keeps everything; the rule holds in tablespace database directories too.
 */
static void test_unlogged_rule_matches_whole_relfilenodes(void **state)
{
    char *root = test_tmpdir();
    char pgdata[4200], spc[4200], link[4300];
    static const char *const kept[] = {"base/5/16400_init",
                                       "base/5/164000",
                                       "base/5/164000_fsm",
                                       "base/5/1640",
                                       "base/5/6400",
                                       "base/5/26400",
                                       "base/5/16401",
                                       "base/5/16401_vm",
                                       "base/5/PG_VERSION",
                                       "pg_tblspc/16384/PG_15_202209061/5/17000_init",
                                       "pg_tblspc/16384/PG_15_202209061/5/17001",
                                       "global/16400",
                                       "global/16400_init"};
    static const char *const dropped[] = {"base/5/16400",
                                          "base/5/16400_fsm",
                                          "base/5/16400_vm",
                                          "base/5/16400.1",
                                          "base/5/16400.12",
                                          "base/5/16400_fsm.1",
                                          "pg_tblspc/16384/PG_15_202209061/5/17000",
                                          "pg_tblspc/16384/PG_15_202209061/5/17000_vm"};
    datadir dd;
    pgd_error err = {0};

    (void)state;
    snprintf(pgdata, sizeof(pgdata), "%s/data", root);
    snprintf(spc, sizeof(spc), "%s/ts", root);
    mkdirs(pgdata, "base/5");
    mkdirs(pgdata, "global");
    mkdirs(pgdata, "pg_tblspc");
    mkdirs(spc, "PG_15_202209061/5");
    for (size_t i = 0; i < sizeof(kept) / sizeof(kept[0]); i++)
        if (strncmp(kept[i], "pg_tblspc/", 10) != 0)
            touch(pgdata, kept[i], 8192);
    for (size_t i = 0; i < sizeof(dropped) / sizeof(dropped[0]); i++)
        if (strncmp(dropped[i], "pg_tblspc/", 10) != 0)
            touch(pgdata, dropped[i], 8192);
    touch(spc, "PG_15_202209061/5/17000_init", 0);
    touch(spc, "PG_15_202209061/5/17001", 8192);
    touch(spc, "PG_15_202209061/5/17000", 8192);
    touch(spc, "PG_15_202209061/5/17000_vm", 8192);
    snprintf(link, sizeof(link), "%s/pg_tblspc/16384", pgdata);
    assert_int_equal(symlink(spc, link), 0);

    assert_true(datadir_walk(&dd, pgdata, 150004, &err));
    for (size_t i = 0; i < sizeof(kept) / sizeof(kept[0]); i++)
        if (find(&dd, kept[i]) == NULL)
            fail_msg("\"%s\" was left out", kept[i]);
    for (size_t i = 0; i < sizeof(dropped) / sizeof(dropped[0]); i++)
        if (find(&dd, dropped[i]) != NULL)
            fail_msg("\"%s\" is in the backup", dropped[i]);
    datadir_free(&dd);
    rm_rf(root);
}

/*
 * A database directory of thousands of relations, every third one unlogged, in an order
 * unrelated to the names: exactly the logged relations and the init forks are kept.
 */
static void test_walk_of_many_relations(void **state)
{
    enum { RELATIONS = 3000, FIRST_NODE = 20000 };
    char *root = test_tmpdir();
    char pgdata[4200], rel[64];
    datadir dd;
    pgd_error err = {0};
    size_t files = 0;

    (void)state;
    snprintf(pgdata, sizeof(pgdata), "%s/data", root);
    mkdirs(pgdata, "base/5");
    for (unsigned i = 0; i < RELATIONS; i++) {
        unsigned node = FIRST_NODE + (i * 7919u) % RELATIONS; /* a permutation */
        snprintf(rel, sizeof(rel), "base/5/%u", node);
        touch(pgdata, rel, 0);
        snprintf(rel, sizeof(rel), "base/5/%u_fsm", node);
        touch(pgdata, rel, 0);
        if (node % 3 == 0) {
            snprintf(rel, sizeof(rel), "base/5/%u_init", node);
            touch(pgdata, rel, 0);
        }
    }
    assert_true(datadir_walk(&dd, pgdata, 150004, &err));
    for (size_t i = 0; i < dd.n; i++) {
        unsigned long node;
        if (strncmp(dd.entries[i].path, "base/5/", 7) != 0)
            continue;
        node = strtoul(dd.entries[i].path + 7, NULL, 10);
        if (strstr(dd.entries[i].path, "_init") != NULL)
            assert_int_equal(node % 3, 0);
        else if (node % 3 == 0)
            fail_msg("\"%s\" of an unlogged relation is in the backup", dd.entries[i].path);
        files++;
    }
    /* logged: main + fsm; unlogged: the init fork alone */
    assert_int_equal(files, 2 * (RELATIONS - RELATIONS / 3) + RELATIONS / 3);
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
        cmocka_unit_test(test_unlogged_rule_matches_whole_relfilenodes),
        cmocka_unit_test(test_walk_of_many_relations),
        cmocka_unit_test(test_walk_of_missing_dir_names_it),
        cmocka_unit_test(test_walk_records_links_as_links),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
