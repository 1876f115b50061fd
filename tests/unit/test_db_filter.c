/* test_db_filter.c - covers src/restore/db_filter.c: which databases and files are left out. */
#include "helpers.h"

#include "restore/db_filter.h"

static void test_db_filter_manifest(manifest *m)
{
    static const char *paths[] = {"base/16390/16400",
                                  "base/16390/16400_fsm",
                                  "base/16390/16400.1",
                                  "base/16390/PG_VERSION",
                                  "base/16391/16400",
                                  "base/5/1259",
                                  "base/1/1259",
                                  "global/1262",
                                  "pg_tblspc/16384/PG_15_202209061/16392/16500",
                                  "base/16392"};
    manifest_init(m);
    m->id = strdup("20261129T215959F");
    manifest_add_partition(m, "part_0001.tar.lz4", 1000, 1);
    for (size_t i = 0; i < sizeof(paths) / sizeof(paths[0]); i++) {
        manifest_file f = {.path = (char *)paths[i], .size = 8192 * (i + 1), .partition = 1};
        f.is_dir = strcmp(paths[i], "base/16392") == 0;
        manifest_add_file(m, &f);
    }
    manifest_add_database(m, 1, "template1", true);
    manifest_add_database(m, 4, "template0", true);
    manifest_add_database(m, 5, "postgres", false);
    manifest_add_database(m, 16390, "other", false);
    manifest_add_database(m, 16391, "app", false);
    manifest_add_database(m, 16392, "spc", false);
    manifest_add_database(m, 16393, "tmpl", true);
}

static bool test_db_filter_sparse(const db_filter *f, const manifest *m, const char *path)
{
    for (size_t i = 0; i < m->nfiles; i++)
        if (strcmp(m->files[i].path, path) == 0)
            return f->sparse != NULL && f->sparse[i];
    fail_msg("no file %s", path);
    return false;
}

/* --db-include app: every other user database's relation files, nothing else. */
static void test_include_leaves_out_the_other_user_databases(void **state)
{
    manifest m;
    db_filter f;
    pgd_error err = {0};
    char *inc[] = {"app"};
    char names[64];

    (void)state;
    test_db_filter_manifest(&m);
    assert_true(db_filter_plan(&f, &m, m.id, inc, 1, NULL, 0, &err));
    assert_int_equal(f.nexcluded, 2);
    db_filter_names(&f, names, sizeof(names));
    assert_string_equal(names, "\"other\", \"spc\"");
    assert_true(test_db_filter_sparse(&f, &m, "base/16390/16400"));
    assert_true(test_db_filter_sparse(&f, &m, "base/16390/16400_fsm"));
    assert_true(test_db_filter_sparse(&f, &m, "base/16390/16400.1"));
    assert_false(test_db_filter_sparse(&f, &m, "base/16390/PG_VERSION"));
    assert_false(test_db_filter_sparse(&f, &m, "base/16391/16400"));
    assert_false(test_db_filter_sparse(&f, &m, "base/5/1259"));
    assert_false(test_db_filter_sparse(&f, &m, "base/1/1259"));
    assert_false(test_db_filter_sparse(&f, &m, "global/1262"));
    assert_true(test_db_filter_sparse(&f, &m, "pg_tblspc/16384/PG_15_202209061/16392/16500"));
    assert_false(test_db_filter_sparse(&f, &m, "base/16392"));
    assert_int_equal(f.nsparse, 4);
    assert_int_equal(f.sparse_bytes, 8192 * (1 + 2 + 3 + 9));
    db_filter_free(&f);
    manifest_free(&m);
}

/* --db-exclude other: only it; nothing given: nothing left out. */
static void test_exclude_leaves_out_only_the_named(void **state)
{
    manifest m;
    db_filter f;
    pgd_error err = {0};
    char *exc[] = {"other"};

    (void)state;
    test_db_filter_manifest(&m);
    assert_true(db_filter_plan(&f, &m, m.id, NULL, 0, exc, 1, &err));
    assert_int_equal(f.nexcluded, 1);
    assert_true(test_db_filter_sparse(&f, &m, "base/16390/16400"));
    assert_false(test_db_filter_sparse(&f, &m, "pg_tblspc/16384/PG_15_202209061/16392/16500"));
    db_filter_free(&f);
    assert_true(db_filter_plan(&f, &m, m.id, NULL, 0, NULL, 0, &err));
    assert_int_equal(f.nexcluded, 0);
    assert_null(f.sparse);
    db_filter_free(&f);
    manifest_free(&m);
}

/* Unknown names, system or template databases excluded, both lists, no recorded databases. */
static void test_refusals(void **state)
{
    manifest m;
    db_filter f;
    pgd_error err = {0};
    char *nosuch[] = {"nosuch"}, *pg[] = {"postgres"}, *tmpl[] = {"tmpl"}, *app[] = {"app"};

    (void)state;
    test_db_filter_manifest(&m);
    assert_false(db_filter_plan(&f, &m, m.id, nosuch, 1, NULL, 0, &err));
    assert_non_null(strstr(err.msg, "database \"nosuch\" is not in backup 20261129T215959F"));
    err_clear(&err);
    assert_false(db_filter_plan(&f, &m, m.id, NULL, 0, pg, 1, &err));
    assert_non_null(strstr(err.msg, "always restored"));
    err_clear(&err);
    assert_false(db_filter_plan(&f, &m, m.id, NULL, 0, tmpl, 1, &err));
    assert_non_null(strstr(err.msg, "always restored"));
    err_clear(&err);
    assert_false(db_filter_plan(&f, &m, m.id, app, 1, app, 1, &err));
    assert_non_null(strstr(err.msg, "both --db-include and --db-exclude"));
    err_clear(&err);
    /* including a system database is allowed: it is restored anyway */
    assert_true(db_filter_plan(&f, &m, m.id, pg, 1, NULL, 0, &err));
    assert_int_equal(f.nexcluded, 3); /* other, app, spc; never the template tmpl */
    db_filter_free(&f);
    manifest_free(&m);
    manifest_init(&m);
    m.id = strdup("20261129T215959F");
    assert_false(db_filter_plan(&f, &m, m.id, app, 1, NULL, 0, &err));
    assert_non_null(strstr(err.msg, "recorded no database names"));
    manifest_free(&m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_include_leaves_out_the_other_user_databases),
        cmocka_unit_test(test_exclude_leaves_out_only_the_named),
        cmocka_unit_test(test_refusals),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
