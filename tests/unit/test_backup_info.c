/*
 * test_backup_info.c - covers src/repo/backup_info.c: sentinels written and
 * read back, and damaged sentinels reported one by one instead of failing
 * the whole repository.
 */
#include "helpers.h"

#include "repo/backup_info.h"
#include "repo/layout.h"

#define OLD_ID    "20261129T100000F"
#define NEW_ID    "20261129T110000F"
#define NEWEST_ID "20261129T120000F"

static storage *repo_in(const char *dir)
{
    char path[4200];
    pgd_error err = {0};
    storage *s;

    snprintf(path, sizeof(path), "%s/repo", dir);
    s = storage_open(path, NULL, &err);
    assert_non_null(s);
    return s;
}

static void put_sentinel_text(storage *repo, const char *id, const char *text)
{
    char path[LAYOUT_PATH_MAX];
    pgd_error err = {0};

    layout_sentinel_path(id, path, sizeof(path));
    assert_true(storage_put(repo, path, text, strlen(text), 0, &err));
}

static void put_sentinel(storage *repo, const char *id)
{
    backup_info bi;
    pgd_error err = {0};
    char *json;

    memset(&bi, 0, sizeof(bi));
    snprintf(bi.id, sizeof(bi.id), "%s", id);
    snprintf(bi.type, sizeof(bi.type), "full");
    snprintf(bi.start_lsn, sizeof(bi.start_lsn), "0/2000028");
    snprintf(bi.stop_lsn, sizeof(bi.stop_lsn), "0/2000100");
    snprintf(bi.start_wal, sizeof(bi.start_wal), "000000010000000000000002");
    snprintf(bi.stop_wal, sizeof(bi.stop_wal), "000000010000000000000002");
    bi.timeline = 1;
    assert_true(backup_info_to_json(&bi, &json, &err));
    put_sentinel_text(repo, id, json);
    free(json);
}

static void test_round_trip(void **state)
{
    char *dir = test_tmpdir();
    storage *repo = repo_in(dir);
    backup_info bi;
    pgd_error err = {0};
    bool missing;

    (void)state;
    put_sentinel(repo, OLD_ID);
    assert_true(backup_info_load(repo, OLD_ID, &bi, &missing, &err));
    assert_string_equal(bi.id, OLD_ID);
    assert_int_equal(bi.timeline, 1);
    assert_false(bi.damaged);
    assert_false(backup_info_load(repo, NEW_ID, &bi, &missing, &err));
    assert_true(missing);
    assert_false(err.set);
    storage_free(repo);
    rm_rf(dir);
}

/* Empty, not JSON, the wrong id, a bad timeline: each named with its cause, the others listed. */
static void test_scan_reports_each_damaged_sentinel(void **state)
{
    char *dir = test_tmpdir();
    storage *repo = repo_in(dir);
    backup_info *all;
    pgd_error err = {0};
    size_t n;

    (void)state;
    put_sentinel(repo, OLD_ID);
    put_sentinel_text(repo, NEW_ID, "");
    put_sentinel_text(repo, NEWEST_ID, "{\"id\": \"20261129T1");
    put_sentinel_text(repo, "20261129T130000F", "{}");
    assert_true(backup_info_scan(repo, &all, &n, &err));
    assert_int_equal(n, 4);
    assert_false(all[0].damaged);
    assert_true(all[1].damaged);
    assert_string_equal(all[1].id, NEW_ID);
    assert_string_equal(all[1].damage,
                        "sentinel \"" BACKUPS_DIR "/" NEW_ID SENTINEL_SUFFIX "\" is empty");
    assert_true(all[2].damaged);
    assert_non_null(strstr(all[2].damage, "could not parse sentinel"));
    assert_true(all[3].damaged);
    assert_non_null(strstr(all[3].damage, "invalid sentinel"));
    free(all);

    /* backup_info_list keeps only the usable one */
    assert_true(backup_info_list(repo, &all, &n, &err));
    assert_int_equal(n, 1);
    assert_string_equal(all[0].id, OLD_ID);
    free(all);
    storage_free(repo);
    rm_rf(dir);
}

static void test_sentinel_naming_another_backup_is_damaged(void **state)
{
    char *dir = test_tmpdir();
    storage *repo = repo_in(dir);
    backup_info bi;
    pgd_error err = {0};
    char path[LAYOUT_PATH_MAX], *text;
    size_t len;
    bool missing;

    (void)state;
    put_sentinel(repo, OLD_ID);
    layout_sentinel_path(OLD_ID, path, sizeof(path));
    assert_true(storage_get(repo, path, &text, &len, &missing, &err));
    put_sentinel_text(repo, NEW_ID, text); /* a copy under another name */
    free(text);
    assert_false(backup_info_resolve(repo, NEW_ID, &bi, &err));
    assert_non_null(strstr(err.msg, "backup " NEW_ID " is damaged"));
    assert_non_null(strstr(err.msg, "names backup \"" OLD_ID "\""));
    storage_free(repo);
    rm_rf(dir);
}

static void test_latest_skips_newer_damaged_backups(void **state)
{
    char *dir = test_tmpdir();
    storage *repo = repo_in(dir);
    backup_info bi;
    pgd_error err = {0};

    (void)state;
    put_sentinel(repo, OLD_ID);
    put_sentinel(repo, NEW_ID);
    put_sentinel_text(repo, NEWEST_ID, "not json");
    assert_true(backup_info_resolve(repo, "LATEST", &bi, &err));
    assert_string_equal(bi.id, NEW_ID);
    assert_false(backup_info_resolve(repo, NEWEST_ID, &bi, &err));
    assert_non_null(strstr(err.msg, "backup " NEWEST_ID " is damaged: could not parse sentinel"));
    storage_free(repo);
    rm_rf(dir);
}

static void test_latest_fails_when_every_backup_is_damaged(void **state)
{
    char *dir = test_tmpdir();
    storage *repo = repo_in(dir);
    backup_info bi;
    pgd_error err = {0};

    (void)state;
    put_sentinel_text(repo, OLD_ID, "");
    assert_false(backup_info_resolve(repo, "LATEST", &bi, &err));
    assert_non_null(strstr(err.msg, "no usable backup"));
    assert_non_null(strstr(err.msg, "the 1 there is damaged (the newest, " OLD_ID ": sentinel"));
    storage_free(repo);
    rm_rf(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_round_trip),
        cmocka_unit_test(test_scan_reports_each_damaged_sentinel),
        cmocka_unit_test(test_sentinel_naming_another_backup_is_damaged),
        cmocka_unit_test(test_latest_skips_newer_damaged_backups),
        cmocka_unit_test(test_latest_fails_when_every_backup_is_damaged),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
