/*
 * test_extract.c - covers src/restore/extract.c: which backup paths are safe
 * and where they land; a tar entry whose header declares more than the
 * manifest's size is refused before it is written (the check itself, more
 * as well as less: test_partition_read.c).
 */
#include "helpers.h"

#include "repo/layout.h"
#include "repo/tar.h"
#include "restore/extract.h"
#include "util/crc32c.h"

#define ID "20261129T000000F"

static void test_safe_paths(void **state)
{
    (void)state;
    assert_true(manifest_path_is_safe("base/1/1259"));
    assert_true(manifest_path_is_safe("PG_VERSION"));
    assert_true(manifest_path_is_safe("a..b/c"));
    assert_false(manifest_path_is_safe(""));
    assert_false(manifest_path_is_safe("/etc/passwd"));
    assert_false(manifest_path_is_safe("../escape"));
    assert_false(manifest_path_is_safe("base/../../escape"));
    assert_false(manifest_path_is_safe("base/.."));
    assert_false(manifest_path_is_safe("./base"));
    assert_false(manifest_path_is_safe("base//1"));
    assert_false(manifest_path_is_safe("base/"));
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
    manifest_add_tablespace(&m, 16384, "ts", "/srv/oldts");
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
    assert_true(manifest_partition_name_is_valid("part_0001.tar.lz4", COMPRESS_LZ4));
    assert_true(manifest_partition_name_is_valid("part_12345.tar.zst", COMPRESS_ZSTD));
    assert_true(manifest_partition_name_is_valid("part_0002.tar", COMPRESS_NONE));
    assert_false(manifest_partition_name_is_valid("part_0001.tar.zst", COMPRESS_LZ4));
    assert_false(manifest_partition_name_is_valid("../../etc/hostname", COMPRESS_NONE));
    assert_false(manifest_partition_name_is_valid("part_0000.tar", COMPRESS_NONE));
    assert_false(manifest_partition_name_is_valid("part_1.tar", COMPRESS_NONE));
    assert_false(manifest_partition_name_is_valid("part_0001.tar/../x", COMPRESS_NONE));
    assert_false(manifest_partition_name_is_valid("part_-001.tar", COMPRESS_NONE));
    assert_false(manifest_partition_name_is_valid("", COMPRESS_NONE));
}

/*
 * Backup ID in a repository under dir: one partition holding PG_VERSION,
 * whose tar header declares `declared` bytes (the data, then zeros up to
 * that size: a well-formed archive); the manifest says 3 bytes, and the
 * partition's own size and CRC-32C are right, so only the entry's size is
 * wrong.
 */
static storage *put_backup(const char *dir, uint64_t declared, manifest *m)
{
    static const char data[] = "15\n";
    storage *repo = repo_in(dir);
    tar_entry e = {.path = "PG_VERSION", .size = declared, .mode = 0600, .type = TAR_FILE};
    manifest_file f = {.path = "PG_VERSION", .size = 3, .mode = 0600, .partition = 1};
    char path[LAYOUT_PATH_MAX];
    pgd_error err = {0};
    mem_out out;

    mem_out_init(&out);
    assert_true(tar_write_header(&out.base, &e, &err));
    assert_true(out_write(&out.base, data, 3, &err));
    assert_true(tar_write_zeros(&out.base, declared - 3 + tar_padding(declared), &err));
    assert_true(tar_write_end(&out.base, &err));
    layout_backup_object(ID, "part_0001.tar", path, sizeof(path));
    assert_true(storage_put(repo, path, out.data, out.len, 0, &err));
    manifest_init(m);
    f.crc = crc32c(data, 3);
    manifest_add_partition(m, "part_0001.tar", out.len, crc32c(out.data, out.len));
    manifest_add_file(m, &f);
    manifest_build_index(m);
    mem_out_free(&out);
    return repo;
}

/* Restore of that backup into dir/target: whether it succeeded, the error in *err. */
static bool restore_backup(const char *dir, storage *repo, manifest *m, pgd_error *err)
{
    char target[4200];
    extract_plan p = {.repo = repo, .backup_id = ID, .m = m, .target = target, .concurrency = 1};
    uint64_t bytes;

    snprintf(target, sizeof(target), "%s/target", dir);
    assert_int_equal(mkdir(target, 0700), 0);
    return extract_partitions(&p, &bytes, err);
}

/*
 * A header that declares 8 KiB where the manifest says 3 bytes: the
 * manifest's bytes and CRC-32C would pass, the rest would be skipped
 * unseen. Refused, naming the file, the partition and the backup, and the
 * file is not created; the same backup with a true header is restored.
 */
static void test_restore_refuses_an_entry_that_declares_more(void **state)
{
    char *dir = test_tmpdir(), *good = test_tmpdir(), file[4200];
    manifest m;
    pgd_error err = {0};
    storage *repo = put_backup(dir, 8192, &m);
    struct stat st;

    (void)state;
    assert_false(restore_backup(dir, repo, &m, &err));
    assert_string_equal(err.msg, "tar header of file \"PG_VERSION\" in partition "
                                 "\"part_0001.tar\" of backup \"" ID "\" declares 8192 bytes; "
                                 "the manifest says 3");
    snprintf(file, sizeof(file), "%s/target/PG_VERSION", dir);
    assert_int_not_equal(stat(file, &st), 0);
    manifest_free(&m);
    storage_free(repo);

    err_clear(&err);
    repo = put_backup(good, 3, &m);
    assert_true(restore_backup(good, repo, &m, &err));
    snprintf(file, sizeof(file), "%s/target/PG_VERSION", good);
    assert_int_equal(stat(file, &st), 0);
    assert_int_equal(st.st_size, 3);
    manifest_free(&m);
    storage_free(repo);
    rm_rf(dir);
    rm_rf(good);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_safe_paths),
        cmocka_unit_test(test_dest_paths),
        cmocka_unit_test(test_modes_are_masked),
        cmocka_unit_test(test_partition_names),
        cmocka_unit_test(test_restore_refuses_an_entry_that_declares_more),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
