/* test_dio_reader.c - covers src/io/dio_reader.c: aligned reads, tails, empty files, EOF. */
#include "helpers.h"

#include <errno.h>
#include <fcntl.h>

#include "io/dio_reader.h"

/* Read the whole file with reads of `chunk` bytes; compare with what was written. */
static void read_back(const char *dir, size_t size, size_t chunk, bool direct)
{
    char path[4096];
    unsigned char *expect = malloc(size + 1), *got = malloc(size + chunk);
    unsigned char *buf;
    pgd_error err = {0};
    dio_file f;
    bool missing;
    size_t total = 0, n;
    int reads = 0;

    snprintf(path, sizeof(path), "%s/f_%zu", dir, size);
    fill_pattern(expect, size, (uint32_t)size);
    write_test_file(path, expect, size);
    buf = dio_buffer_alloc(chunk);
    assert_non_null(buf);
    assert_int_equal((uintptr_t)buf % DIO_ALIGN, 0);
    assert_true(
        dio_file_open(&f, path, direct ? READ_MODE_DIRECT : READ_MODE_BUFFERED, &missing, &err));
    assert_int_equal(f.mode, direct ? READ_MODE_DIRECT : READ_MODE_BUFFERED);
    do {
        assert_true(dio_file_read(&f, buf, chunk, &n, &err));
        memcpy(got + total, buf, n);
        total += n;
        reads++;
        assert_true(reads < 10000);
    } while (n == chunk);
    assert_int_equal(total, size);
    assert_memory_equal(got, expect, size);
    /* after EOF, reads return 0 */
    assert_true(dio_file_read(&f, buf, chunk, &n, &err));
    assert_int_equal(n, 0);
    dio_file_close(&f);
    free(buf);
    free(expect);
    free(got);
}

static void test_sizes_direct(void **state)
{
    static const size_t sizes[] = {0, 1, 511, 4095, 4096, 4097, 8192, 12345, 1048576 + 123};
    char *dir = test_tmpdir();

    (void)state;
    for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
        read_back(dir, sizes[i], 8192, true);
        read_back(dir, sizes[i], 4096, true);
        read_back(dir, sizes[i], 1048576, true);
    }
    rm_rf(dir);
}

static void test_sizes_buffered(void **state)
{
    char *dir = test_tmpdir();

    (void)state;
    read_back(dir, 0, 8192, false);
    read_back(dir, 10000, 8192, false);
    rm_rf(dir);
}

static void test_missing_file_is_reported_without_error(void **state)
{
    pgd_error err = {0};
    dio_file f;
    bool missing;

    (void)state;
    assert_false(
        dio_file_open(&f, "/tmp/pgd-unit-does-not-exist/x", READ_MODE_DIRECT, &missing, &err));
    assert_true(missing);
    assert_false(err.set);
}

static void test_unreadable_is_an_error_naming_the_file(void **state)
{
    pgd_error err = {0};
    dio_file f;
    bool missing;
    char *dir = test_tmpdir();
    char path[4096];

    (void)state;
    snprintf(path, sizeof(path), "%s/sub", dir);
    assert_int_equal(mkdir(path, 0700), 0);
    /* a directory opens, but reading it fails */
    assert_true(dio_file_open(&f, path, READ_MODE_BUFFERED, &missing, &err));
    {
        void *buf = dio_buffer_alloc(4096);
        size_t n;
        assert_false(dio_file_read(&f, buf, 4096, &n, &err));
        assert_non_null(strstr(err.msg, path));
        free(buf);
    }
    dio_file_close(&f);
    rm_rf(dir);
}

static void test_tmpfs_falls_back_to_buffered(void **state)
{
    char path[] = "/dev/shm/pgd-unit-XXXXXX";
    read_mode expect;
    pgd_error err = {0};
    dio_file f;
    bool missing;
    int fd;

    (void)state;
    fd = mkstemp(path);
    if (fd < 0)
        skip(); /* no tmpfs here */
    assert_int_equal(write(fd, "hello", 5), 5);
    close(fd);
    /* tmpfs accepts O_DIRECT since Linux 6.6; expect the fallback only where it refuses */
    fd = open(path, O_RDONLY | O_DIRECT);
    expect = fd < 0 && errno == EINVAL ? READ_MODE_FALLBACK : READ_MODE_DIRECT;
    if (fd >= 0)
        close(fd);
    assert_true(dio_file_open(&f, path, READ_MODE_DIRECT, &missing, &err));
    assert_int_equal(f.mode, expect);
    {
        void *buf = dio_buffer_alloc(4096);
        size_t n;
        assert_true(dio_file_read(&f, buf, 4096, &n, &err));
        assert_int_equal(n, 5);
        assert_memory_equal(buf, "hello", 5);
        free(buf);
    }
    dio_file_close(&f);
    unlink(path);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sizes_direct),
        cmocka_unit_test(test_sizes_buffered),
        cmocka_unit_test(test_missing_file_is_reported_without_error),
        cmocka_unit_test(test_unreadable_is_an_error_naming_the_file),
        cmocka_unit_test(test_tmpfs_falls_back_to_buffered),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
