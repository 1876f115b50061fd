/*
 * test_pipeline.c - covers src/backup/pipeline.c: files that vanish, grow or
 * shrink between the walk and the read; partitions; CRCs.
 */
#include "helpers.h"

#include "backup/pipeline.h"
#include "repo/layout.h"
#include "repo/tar.h"
#include "util/crc32c.h"

#define ID "20261129T000000F"

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

/* Read partition `name` back and return the size and data of entry `path` (malloc'd). */
static unsigned char *entry_data(storage *repo, const char *part, const char *path, uint64_t *size)
{
    char obj[LAYOUT_PATH_MAX];
    pgd_error err = {0};
    bool missing, end = false;
    in_stream *in;
    tar_reader r;
    unsigned char *data = NULL;

    layout_backup_object(ID, part, obj, sizeof(obj));
    in = storage_read_open(repo, obj, &missing, &err);
    assert_non_null(in);
    in = decompress_in_new(compress_from_suffix(part), in, obj, &err);
    tar_reader_init(&r, in, obj);
    while (!end) {
        tar_entry e;
        assert_true(tar_reader_next(&r, &e, &end, &err));
        if (!end && strcmp(e.path, path) == 0) {
            size_t n;
            data = malloc(e.size + 1);
            assert_true(tar_reader_data(&r, data, e.size + 1, &n, &err));
            assert_int_equal(n, e.size);
            *size = e.size;
        }
        tar_entry_free(&e);
    }
    in_close(in);
    return data;
}

static void test_vanished_grown_shrunk(void **state)
{
    char *dir = test_tmpdir();
    char grown[4200], shrunk[4200], steady[4200], gone[4200];
    unsigned char content[20000];
    pgd_error err = {0};
    storage *repo = repo_in(dir);
    pipeline_result res;
    uint64_t size;
    unsigned char *got;

    (void)state;
    fill_pattern(content, sizeof(content), 5);
    snprintf(grown, sizeof(grown), "%s/grown", dir);
    snprintf(shrunk, sizeof(shrunk), "%s/shrunk", dir);
    snprintf(steady, sizeof(steady), "%s/steady", dir);
    snprintf(gone, sizeof(gone), "%s/gone", dir);
    write_test_file(grown, content, 20000); /* walk saw 10000 bytes */
    write_test_file(shrunk, content, 3000); /* walk saw 9000 bytes */
    write_test_file(steady, content, 12345);

    pipeline_file files[] = {
        {.path = "base/1/grown", .source = grown, .size = 10000, .mode = 0600},
        {.path = "base/1/shrunk", .source = shrunk, .size = 9000, .mode = 0600},
        {.path = "base/1/steady", .source = steady, .size = 12345, .mode = 0600},
        {.path = "base/1/gone", .source = gone, .size = 8192, .mode = 0600},
        {.path = "base/1", .source = dir, .is_dir = true, .mode = 0700},
    };
    pipeline_config cfg = {.repo = repo,
                           .backup_id = ID,
                           .compression = COMPRESS_LZ4,
                           .compression_level = COMPRESS_LEVEL_DEFAULT,
                           .read_size = 8192,
                           .workers = 2,
                           .depth = 3,
                           .engine = IO_ENGINE_THREADS,
                           .partition_size = 1, /* one file per partition */
                           .mode = READ_MODE_DIRECT};

    assert_true(pipeline_run(&cfg, files, 5, &res, &err));
    assert_int_equal(res.npartitions, 4); /* the vanished file opens none */
    assert_true(res.read_modes & (1u << READ_MODE_DIRECT));

    assert_true(files[0].done);
    assert_int_equal(files[0].stored_size, 10000); /* read to its size at walk time */
    assert_int_equal(files[0].crc, crc32c(content, 10000));
    assert_true(files[1].done);
    assert_int_equal(files[1].stored_size, 3000); /* recorded at its new size */
    assert_int_equal(files[1].crc, crc32c(content, 3000));
    assert_true(files[2].done);
    assert_int_equal(files[2].crc, crc32c(content, 12345));
    assert_false(files[3].done); /* skipped */
    assert_true(files[4].done);
    assert_int_equal(res.bytes_read, 10000 + 3000 + 12345);

    /* the partitions hold the bytes */
    for (size_t i = 0; i < res.npartitions; i++) {
        got = entry_data(repo, res.partitions[i].name, "base/1/steady", &size);
        if (got != NULL) {
            assert_int_equal(size, 12345);
            assert_memory_equal(got, content, 12345);
            free(got);
        }
        got = entry_data(repo, res.partitions[i].name, "base/1/shrunk", &size);
        if (got != NULL) {
            unsigned char zeros[6000] = {0};
            assert_int_equal(size, 3000); /* the file was already short when opened */
            assert_memory_equal(got, content, 3000);
            (void)zeros;
            free(got);
        }
    }
    pipeline_result_free(&res);
    storage_free(repo);
    rm_rf(dir);
}

static void test_read_error_fails_and_removes_partitions(void **state)
{
    char *dir = test_tmpdir();
    char sub[4200], obj[4300];
    pgd_error err = {0};
    storage *repo = repo_in(dir);
    pipeline_result res;
    bool exists;

    (void)state;
    snprintf(sub, sizeof(sub), "%s/adir", dir);
    assert_int_equal(mkdir(sub, 0700), 0);
    /* a directory queued as a file: opening works, reading fails */
    pipeline_file files[] = {{.path = "x", .source = sub, .size = 4096, .mode = 0600}};
    pipeline_config cfg = {.repo = repo,
                           .backup_id = ID,
                           .compression = COMPRESS_NONE,
                           .read_size = 4096,
                           .workers = 1,
                           .depth = 2,
                           .engine = IO_ENGINE_THREADS,
                           .partition_size = 1 << 20,
                           .mode = READ_MODE_BUFFERED};
    assert_false(pipeline_run(&cfg, files, 1, &res, &err));
    assert_non_null(strstr(err.msg, sub));
    snprintf(obj, sizeof(obj), BACKUPS_DIR "/" ID "/part_0001.tar");
    assert_true(storage_exists(repo, obj, &exists, &err));
    assert_false(exists);
    storage_free(repo);
    rm_rf(dir);
}

/*
 * One large file read with many reads in flight (depth 8, small reads so
 * completions interleave) by each engine: the bytes come out in order.
 */
static void big_file_with(io_engine_kind engine, read_mode mode)
{
    char *dir = test_tmpdir();
    char path[4200];
    size_t len = 3 * 1024 * 1024 + 12345;
    unsigned char *content = malloc(len), *got;
    pgd_error err = {0};
    storage *repo = repo_in(dir);
    pipeline_result res;
    uint64_t size;

    fill_pattern(content, len, 11);
    snprintf(path, sizeof(path), "%s/big", dir);
    write_test_file(path, content, len);
    pipeline_file files[] = {
        {.path = "base/1/big", .source = path, .size = len, .mode = 0600, .read_size = 64 * 1024}};
    pipeline_config cfg = {.repo = repo,
                           .backup_id = ID,
                           .compression = COMPRESS_NONE,
                           .read_size = 8192,
                           .workers = 1,
                           .depth = 8,
                           .engine = engine,
                           .partition_size = 1 << 30,
                           .mode = mode};
    assert_true(pipeline_run(&cfg, files, 1, &res, &err));
    assert_int_equal(files[0].stored_size, len);
    assert_int_equal(files[0].crc, crc32c(content, len));
    got = entry_data(repo, res.partitions[0].name, "base/1/big", &size);
    assert_non_null(got);
    assert_int_equal(size, len);
    assert_memory_equal(got, content, len);
    free(got);
    free(content);
    pipeline_result_free(&res);
    storage_free(repo);
    rm_rf(dir);
}

static void test_big_file_threads(void **state)
{
    (void)state;
    big_file_with(IO_ENGINE_THREADS, READ_MODE_DIRECT);
}

static void test_big_file_io_uring(void **state)
{
    char why[128];

    (void)state;
    if (!io_uring_available(why, sizeof(why)))
        skip();
    big_file_with(IO_ENGINE_URING, READ_MODE_DIRECT);
}

static void test_big_file_cache_neutral(void **state)
{
    (void)state;
    big_file_with(IO_ENGINE_THREADS, READ_MODE_CACHE_NEUTRAL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_vanished_grown_shrunk),
        cmocka_unit_test(test_read_error_fails_and_removes_partitions),
        cmocka_unit_test(test_big_file_threads),
        cmocka_unit_test(test_big_file_io_uring),
        cmocka_unit_test(test_big_file_cache_neutral),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
