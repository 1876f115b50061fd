/*
 * test_backup_read.c - covers src/repo/backup_read.c: a manifest loaded as
 * every reader of a backup loads it, refused when a path would land
 * outside the target, a partition name is not one the backup writes, or a
 * path is listed twice.
 */
#include "helpers.h"

#include "repo/backup_read.h"
#include "repo/layout.h"
#include "util/xmalloc.h"

#define ID "20261206T040420F"

/* manifest.json of backup ID with the file entries `files` (JSON objects, comma-separated). */
static void put_manifest_files(storage *repo, const char *files)
{
    char path[LAYOUT_PATH_MAX], *text;
    pgd_error err = {0};

    text = xasprintf("{\"format\": 1, \"id\": \"" ID "\", \"compression\": \"lz4\", "
                     "\"partitions\": [{\"name\": \"part_0001.tar.lz4\", \"size\": 1, "
                     "\"crc32c\": \"00000000\"}], \"tablespaces\": [], \"files\": [%s]}",
                     files);
    layout_manifest_path(ID, path, sizeof(path));
    assert_true(storage_put(repo, path, text, strlen(text), 0, &err));
    free(text);
}

/* A file entry of `path` in partition 1. */
#define FILE_ENTRY(path)                                                                           \
    "{\"path\": \"" path "\", \"type\": \"file\", \"mode\": 384, \"mtime\": 1, \"size\": 1, "      \
    "\"crc32c\": \"00000000\", \"partition\": 1}"

static void test_a_manifest_loads_indexed(void **state)
{
    char *dir = test_tmpdir();
    storage *repo = repo_in(dir);
    manifest m;
    pgd_error err = {0};

    (void)state;
    put_manifest_files(repo, FILE_ENTRY("global/pg_control") ", " FILE_ENTRY("base/1/1259"));
    assert_true(backup_read_manifest(repo, ID, &m, &err));
    assert_int_equal(manifest_find(&m, "base/1/1259"), 0);
    assert_int_equal(manifest_find(&m, "global/pg_control"), 1);
    manifest_free(&m);
    storage_free(repo);
    rm_rf(dir);
}

static void test_a_path_outside_the_target_is_refused(void **state)
{
    char *dir = test_tmpdir();
    storage *repo = repo_in(dir);
    manifest m;
    pgd_error err = {0};

    (void)state;
    put_manifest_files(repo, FILE_ENTRY("base/../../x"));
    assert_false(backup_read_manifest(repo, ID, &m, &err));
    assert_string_equal(err.msg, "refusing path \"base/../../x\" in the manifest of backup \"" ID
                                 "\": it would land outside the target directory");
    manifest_free(&m);
    storage_free(repo);
    rm_rf(dir);
}

/* Found by fuzz_manifest: the second entry of a path was never found by it. */
static void test_a_path_listed_twice_is_refused(void **state)
{
    char *dir = test_tmpdir();
    storage *repo = repo_in(dir);
    manifest m;
    pgd_error err = {0};

    (void)state;
    put_manifest_files(repo, FILE_ENTRY("base/1/1259") ", " FILE_ENTRY(
                                 "global/pg_control") ", " FILE_ENTRY("base/1/1259"));
    assert_false(backup_read_manifest(repo, ID, &m, &err));
    assert_string_equal(err.msg, "refusing path \"base/1/1259\" in the manifest of backup \"" ID
                                 "\": the manifest lists it twice");
    manifest_free(&m);
    storage_free(repo);
    rm_rf(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_a_manifest_loads_indexed),
        cmocka_unit_test(test_a_path_outside_the_target_is_refused),
        cmocka_unit_test(test_a_path_listed_twice_is_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
