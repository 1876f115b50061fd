/*
 * test_backup_id.c - covers src/backup/backup_id.c: ids claimed exclusively,
 * the next second taken at once on a conflict, leftovers of runs without a
 * claim respected, and a failed backup's objects removed (or named).
 */
#include "helpers.h"

#include "backup/backup_id.h"

#define START 1795989599 /* 2026-11-29 21:59:59 UTC */

static bool object_exists(storage *repo, const char *path)
{
    pgd_error err = {0};
    bool exists;

    assert_true(storage_exists(repo, path, &exists, &err));
    return exists;
}

static void put(storage *repo, const char *path, const char *text)
{
    pgd_error err = {0};

    assert_true(storage_put(repo, path, text, strlen(text), 0, &err));
}

static void test_claim_takes_the_start_second_and_writes_the_claim(void **state)
{
    char *dir = test_tmpdir();
    storage *repo = repo_in(dir);
    char id[BACKUP_ID_LEN + 1], path[LAYOUT_PATH_MAX], *text;
    pgd_error err = {0};
    size_t len;
    bool missing;

    (void)state;
    assert_true(backup_id_claim(repo, START, id, &err));
    assert_string_equal(id, "20261129T215959F");
    layout_backup_object(id, CLAIM_NAME, path, sizeof(path));
    assert_true(storage_get(repo, path, &text, &len, &missing, &err));
    assert_non_null(strstr(text, "\"id\": \"20261129T215959F\""));
    free(text);
    storage_free(repo);
    rm_rf(dir);
}

static void test_runs_in_the_same_second_get_distinct_ids(void **state)
{
    char *dir = test_tmpdir();
    storage *repo = repo_in(dir);
    char a[BACKUP_ID_LEN + 1], b[BACKUP_ID_LEN + 1], c[BACKUP_ID_LEN + 1];
    pgd_error err = {0};

    (void)state;
    assert_true(backup_id_claim(repo, START, a, &err));
    assert_true(backup_id_claim(repo, START, b, &err));
    assert_true(backup_id_claim(repo, START, c, &err));
    assert_string_equal(a, "20261129T215959F");
    assert_string_equal(b, "20261129T220000F"); /* the next second, not a wait for it */
    assert_string_equal(c, "20261129T220001F");
    storage_free(repo);
    rm_rf(dir);
}

/* A delta never shares a second with a full (D sorts before F): each takes the next free one. */
static void test_a_delta_and_a_full_never_share_a_second(void **state)
{
    char *dir = test_tmpdir();
    storage *repo = repo_in(dir);
    char f[BACKUP_ID_LEN + 1], d[BACKUP_ID_LEN + 1], f2[BACKUP_ID_LEN + 1];
    char path[LAYOUT_PATH_MAX], *text;
    backup_id_parent parent = {.id = "20261129T215959F", .start_lsn = 0x2000028};
    pgd_error err = {0};
    size_t len;
    bool missing;

    (void)state;
    assert_true(backup_id_claim_kind(repo, START, NULL, NULL, f, &err));
    assert_true(backup_id_claim_kind(repo, START, &parent, NULL, d, &err));
    assert_true(backup_id_claim_kind(repo, START, NULL, NULL, f2, &err));
    assert_string_equal(f, "20261129T215959F");
    assert_string_equal(d, "20261129T220000D");
    assert_string_equal(f2, "20261129T220001F");
    /* the delta's claim names its parent (delete keeps it while the delta runs); a full's none */
    layout_backup_object(d, CLAIM_NAME, path, sizeof(path));
    assert_true(storage_get(repo, path, &text, &len, &missing, &err));
    assert_non_null(strstr(text, "\"parent\": \"20261129T215959F\""));
    assert_non_null(strstr(text, "\"parent_start_lsn\": \"0/2000028\""));
    free(text);
    layout_backup_object(f, CLAIM_NAME, path, sizeof(path));
    assert_true(storage_get(repo, path, &text, &len, &missing, &err));
    assert_null(strstr(text, "parent"));
    free(text);
    storage_free(repo);
    rm_rf(dir);
}

/* A backup written without a claim (older version, or its killed run) keeps its second. */
static void test_leftovers_without_a_claim_are_not_taken_over(void **state)
{
    char *dir = test_tmpdir();
    storage *repo = repo_in(dir);
    char id[BACKUP_ID_LEN + 1], path[LAYOUT_PATH_MAX], *text;
    pgd_error err = {0};
    size_t len;
    bool missing;

    (void)state;
    put(repo, BACKUPS_DIR "/20261129T215959F/part_0001.tar.lz4", "theirs");
    put(repo, BACKUPS_DIR "/20261129T220000F.done.json", "{}");
    assert_true(backup_id_claim(repo, START, id, &err));
    assert_string_equal(id, "20261129T220001F");
    /* theirs untouched, and no claim of ours left among them */
    assert_true(storage_get(repo, BACKUPS_DIR "/20261129T215959F/part_0001.tar.lz4", &text, &len,
                            &missing, &err));
    assert_string_equal(text, "theirs");
    free(text);
    layout_backup_object("20261129T215959F", CLAIM_NAME, path, sizeof(path));
    assert_false(object_exists(repo, path));
    layout_backup_object("20261129T220000F", CLAIM_NAME, path, sizeof(path));
    assert_false(object_exists(repo, path));
    storage_free(repo);
    rm_rf(dir);
}

static void test_a_repository_that_refuses_writes_is_an_error_not_a_conflict(void **state)
{
    char *dir = test_tmpdir();
    storage *repo = repo_in(dir);
    char id[BACKUP_ID_LEN + 1], path[4300];
    pgd_error err = {0};

    (void)state;
    /* a file where the backups directory should be: every claim fails the same way */
    snprintf(path, sizeof(path), "%s/repo", dir);
    assert_int_equal(mkdir(path, 0700), 0);
    snprintf(path, sizeof(path), "%s/repo/" BACKUPS_DIR, dir);
    write_test_file(path, "x", 1);
    assert_false(backup_id_claim(repo, START, id, &err));
    assert_non_null(strstr(err.msg, "could not claim backup id 20261129T215959F"));
    storage_free(repo);
    rm_rf(dir);
}

static void test_discard_removes_everything_of_the_backup_only(void **state)
{
    char *dir = test_tmpdir();
    storage *repo = repo_in(dir);
    char id[BACKUP_ID_LEN + 1], other[BACKUP_ID_LEN + 1], path[4300], objpath[LAYOUT_PATH_MAX];
    pgd_error err = {0};
    struct stat st;

    (void)state;
    assert_true(backup_id_claim(repo, START, id, &err));
    assert_true(backup_id_claim(repo, START, other, &err));
    layout_backup_object(id, "part_0001.tar.lz4", objpath, sizeof(objpath));
    put(repo, objpath, "part");
    layout_backup_object(id, MANIFEST_NAME, objpath, sizeof(objpath));
    put(repo, objpath, "{}");
    layout_sentinel_path(id, objpath, sizeof(objpath));
    put(repo, objpath, "{}");
    layout_backup_object(other, "part_0001.tar.lz4", objpath, sizeof(objpath));
    put(repo, objpath, "other");

    assert_true(backup_id_discard(repo, id, &err));
    layout_sentinel_path(id, objpath, sizeof(objpath));
    assert_false(object_exists(repo, objpath));
    snprintf(path, sizeof(path), "%s/repo/" BACKUPS_DIR "/%s", dir, id);
    assert_int_not_equal(stat(path, &st), 0); /* the directory too */
    layout_backup_object(other, "part_0001.tar.lz4", objpath, sizeof(objpath));
    assert_true(object_exists(repo, objpath));
    layout_backup_object(other, CLAIM_NAME, objpath, sizeof(objpath));
    assert_true(object_exists(repo, objpath));
    storage_free(repo);
    rm_rf(dir);
}

/* What cannot be removed is named, with the cause. */
static void test_discard_names_what_is_left(void **state)
{
    char *dir = test_tmpdir();
    storage *repo = repo_in(dir);
    char id[BACKUP_ID_LEN + 1], objpath[LAYOUT_PATH_MAX];
    pgd_error err = {0};

    (void)state;
    assert_true(backup_id_claim(repo, START, id, &err));
    /* a non-empty directory among the objects: removing it fails, even as root */
    layout_backup_object(id, "stuck/inside", objpath, sizeof(objpath));
    put(repo, objpath, "x");
    layout_backup_object(id, "part_0001.tar.lz4", objpath, sizeof(objpath));
    put(repo, objpath, "part");

    assert_false(backup_id_discard(repo, id, &err));
    assert_non_null(strstr(err.msg, "could not remove backup 20261129T215959F"));
    assert_non_null(strstr(err.msg, "stuck"));
    assert_non_null(strstr(err.msg, "left behind: " BACKUPS_DIR "/20261129T215959F/"));
    storage_free(repo);
    rm_rf(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_claim_takes_the_start_second_and_writes_the_claim),
        cmocka_unit_test(test_runs_in_the_same_second_get_distinct_ids),
        cmocka_unit_test(test_a_delta_and_a_full_never_share_a_second),
        cmocka_unit_test(test_leftovers_without_a_claim_are_not_taken_over),
        cmocka_unit_test(test_a_repository_that_refuses_writes_is_an_error_not_a_conflict),
        cmocka_unit_test(test_discard_removes_everything_of_the_backup_only),
        cmocka_unit_test(test_discard_names_what_is_left),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
