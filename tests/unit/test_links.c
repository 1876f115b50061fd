/*
 * test_links.c - covers src/restore/links.c: where a backup's links
 * resolve (as the kernel would, through the backup's other links), what
 * the check refuses, and that links are created where they belong.
 */
#include "helpers.h"

#include <limits.h>

#include "restore/links.h"

#define TS_OID 16384

/* A manifest holding base/1 (a directory), tablespace 16384 and the given links. */
static void manifest_with_links(manifest *m, const char *const *links, size_t n)
{
    manifest_file dir = {.path = "base/1", .is_dir = true, .mode = 0700};

    manifest_init(m);
    m->id = strdup("B");
    manifest_add_partition(m, "part_0001.tar", 1, 0);
    manifest_add_tablespace(m, TS_OID, "ts", "/srv/ts");
    manifest_add_file(m, &dir);
    for (size_t i = 0; i < n; i += 2) {
        manifest_link l = {
            .path = (char *)links[i], .target = (char *)links[i + 1], .partition = 1};
        manifest_add_link(m, &l);
    }
    manifest_build_index(m);
}

static links_where where_of(const manifest *m, const char *path)
{
    long i = manifest_find_link(m, path);

    assert_true(i >= 0);
    return links_resolve(m, (size_t)i);
}

static void test_targets_inside_the_directory_they_are_restored_into(void **state)
{
    static const char *const links[] = {
        "loop",
        ".", /* */
        "alias",
        "base/1/../1/2", /* */
        "base/1/up",
        "../../PG_VERSION", /* */
        "base/1/m",
        "..", /* m is base */
        "via",
        "base/1/m/1", /* base/1 */
        "pg_tblspc/16384/PG_15_1/5/l",
        "../../PG_15_1/5/16385", /* within the tablespace */
    };
    manifest m;

    (void)state;
    manifest_with_links(&m, links, sizeof(links) / sizeof(links[0]));
    assert_int_equal(where_of(&m, "loop"), LINKS_INSIDE);
    assert_int_equal(where_of(&m, "alias"), LINKS_INSIDE);
    assert_int_equal(where_of(&m, "base/1/up"), LINKS_INSIDE);
    assert_int_equal(where_of(&m, "base/1/m"), LINKS_INSIDE);
    assert_int_equal(where_of(&m, "via"), LINKS_INSIDE);
    assert_int_equal(where_of(&m, "pg_tblspc/16384/PG_15_1/5/l"), LINKS_INSIDE);
    manifest_free(&m);
}

static void test_targets_outside(void **state)
{
    static const char *const links[] = {
        "conf",
        "/etc/postgresql.conf", /* absolute */
        "up",
        "../outside", /* climbs out */
        "deep",
        "base/../../outside", /* climbs out further down */
        "base/1/m",
        "..", /* base */
        "esc",
        "base/1/m/../..", /* lexically base; really the parent */
        "chain",
        "conf", /* through an absolute link */
        "spc",
        "pg_tblspc/16384/PG_15_1", /* into a tablespace: restored anywhere */
        "pg_tblspc/16384/PG_15_1/l",
        "../..", /* out of its tablespace */
    };
    manifest m;

    (void)state;
    manifest_with_links(&m, links, sizeof(links) / sizeof(links[0]));
    assert_int_equal(where_of(&m, "conf"), LINKS_OUTSIDE);
    assert_int_equal(where_of(&m, "up"), LINKS_OUTSIDE);
    assert_int_equal(where_of(&m, "deep"), LINKS_OUTSIDE);
    assert_int_equal(where_of(&m, "esc"), LINKS_OUTSIDE);
    assert_int_equal(where_of(&m, "chain"), LINKS_OUTSIDE);
    assert_int_equal(where_of(&m, "spc"), LINKS_OUTSIDE);
    assert_int_equal(where_of(&m, "pg_tblspc/16384/PG_15_1/l"), LINKS_OUTSIDE);
    manifest_free(&m);
}

static void test_a_loop_of_links_does_not_resolve(void **state)
{
    static const char *const links[] = {"a", "b", "b", "a", "self", "self/x"};
    manifest m;

    (void)state;
    manifest_with_links(&m, links, sizeof(links) / sizeof(links[0]));
    assert_int_equal(where_of(&m, "a"), LINKS_UNRESOLVABLE);
    assert_int_equal(where_of(&m, "self"), LINKS_UNRESOLVABLE);
    manifest_free(&m);
}

static void expect_refused(const char *const *links, size_t n, const char *file, bool allow,
                           const char *fragment)
{
    manifest m;
    pgd_error err = {0};

    manifest_with_links(&m, links, n);
    if (file != NULL) {
        manifest_file f = {.path = (char *)file, .partition = 1};
        manifest_add_file(&m, &f);
        manifest_build_index(&m);
    }
    assert_false(links_check(&m, "B", allow, &err));
    assert_non_null(strstr(err.msg, fragment));
    manifest_free(&m);
}

static void test_check_refuses_what_a_crafted_backup_would_need(void **state)
{
    static const char *const external[] = {"conf", "/etc/x"};
    static const char *const internal[] = {"evil", "base"};
    static const char *const nested[] = {"evil", "base", "evil/inner", "."};
    static const char *const spc[] = {"pg_tblspc/16384", "/tmp"};
    static const char *const twice[] = {"l", ".", "l", "base"};
    static const char *const unsafe[] = {"../l", "."};
    static const char *const looping[] = {"a", "a"};

    (void)state;
    expect_refused(external, 2, NULL, false,
                   "refusing link \"conf\" -> \"/etc/x\" in backup \"B\": it points outside the "
                   "target directory (restore it as it is with --allow-external-links)");
    /* allowing external links never allows writing through one */
    expect_refused(external, 2, "conf/x", true,
                   "refusing \"conf/x\" in backup \"B\": it lies below the link \"conf\"");
    expect_refused(internal, 2, "evil/x", false, "it lies below the link \"evil\"");
    expect_refused(nested, 4, NULL, false,
                   "refusing \"evil/inner\" in backup \"B\": it lies below the link \"evil\"");
    expect_refused(spc, 2, NULL, true, "it would replace the tablespace link");
    expect_refused(twice, 4, NULL, false, "the manifest lists it twice");
    expect_refused(internal, 2, "evil", false, "the manifest lists it twice");
    expect_refused(unsafe, 2, NULL, false, "refusing path \"../l\"");
    expect_refused(looping, 2, NULL, false, "cannot be resolved");
}

static void test_check_accepts_links_inside_and_external_ones_when_allowed(void **state)
{
    static const char *const links[] = {"loop", ".", "conf", "/etc/x", "base/1/m", ".."};
    manifest m;
    pgd_error err = {0};
    manifest_file f = {.path = "base/1/2", .partition = 1};

    (void)state;
    manifest_with_links(&m, links, 6);
    manifest_add_file(&m, &f);
    manifest_build_index(&m);
    assert_false(links_check(&m, "B", false, &err));
    err_clear(&err);
    assert_true(links_check(&m, "B", true, &err));
    manifest_free(&m);
}

static void test_links_are_created_where_they_are_restored(void **state)
{
    static const char *const links[] = {"loop", ".", "pg_tblspc/16384/PG_15_1/l", "../PG_15_1"};
    char *dir = test_tmpdir();
    char target[4200], spc[4200], path[4300], got[PATH_MAX];
    const char *dests[1];
    manifest m;
    pgd_error err = {0};
    ssize_t n;

    (void)state;
    snprintf(target, sizeof(target), "%s/data", dir);
    snprintf(spc, sizeof(spc), "%s/ts", dir);
    snprintf(path, sizeof(path), "%s/ts/PG_15_1", dir);
    assert_int_equal(mkdir(target, 0700), 0);
    assert_int_equal(mkdir(spc, 0700), 0);
    assert_int_equal(mkdir(path, 0700), 0);
    dests[0] = spc;
    manifest_with_links(&m, links, 4);
    extract_plan p = {.backup_id = "B", .m = &m, .target = target, .spc_dest = dests};
    assert_true(links_create(&p, &err));
    snprintf(path, sizeof(path), "%s/loop", target);
    n = readlink(path, got, sizeof(got) - 1);
    assert_int_equal(n, 1);
    got[n] = '\0';
    assert_string_equal(got, ".");
    snprintf(path, sizeof(path), "%s/PG_15_1/l", spc);
    n = readlink(path, got, sizeof(got) - 1);
    assert_true(n > 0);
    got[n] = '\0';
    assert_string_equal(got, "../PG_15_1");
    /* a second time: the links exist, and nothing is replaced */
    assert_false(links_create(&p, &err));
    assert_non_null(strstr(err.msg, "could not create symbolic link"));
    /* restore --delta keeps links that point where the backup's do */
    p.delta = true;
    assert_true(links_create(&p, &err));
    manifest_free(&m);
    rm_rf(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_targets_inside_the_directory_they_are_restored_into),
        cmocka_unit_test(test_targets_outside),
        cmocka_unit_test(test_a_loop_of_links_does_not_resolve),
        cmocka_unit_test(test_check_refuses_what_a_crafted_backup_would_need),
        cmocka_unit_test(test_check_accepts_links_inside_and_external_ones_when_allowed),
        cmocka_unit_test(test_links_are_created_where_they_are_restored),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
