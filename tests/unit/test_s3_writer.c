/*
 * test_s3_writer.c - covers the pure part of src/storage/s3/writer.c: part
 * sizes, doubled every 1,000 parts so an object fits in S3's 10,000, and
 * never above S3's largest part.
 */
#include "helpers.h"

#include "storage/s3/internal.h"

#define MIB (1024ULL * 1024)

static void test_part_sizes(void **state)
{
    (void)state;
    assert_int_equal(s3_writer_part_size(5 * MIB, 1), 5 * MIB);
    assert_int_equal(s3_writer_part_size(5 * MIB, 1000), 5 * MIB);
    assert_int_equal(s3_writer_part_size(5 * MIB, 1001), 10 * MIB);
    assert_int_equal(s3_writer_part_size(5 * MIB, 2001), 20 * MIB);
    assert_int_equal(s3_writer_part_size(64 * MIB, 10000), S3_PART_MAX);
    assert_int_equal(s3_writer_part_size(S3_PART_MAX, 1), S3_PART_MAX);
    assert_int_equal(s3_writer_part_size(S3_PART_MAX, 5000), S3_PART_MAX);
}

/* With the smallest parts, 10,000 of them hold more than a 1 GiB partition many times over. */
static void test_capacity(void **state)
{
    uint64_t total = 0;

    (void)state;
    for (unsigned n = 1; n <= S3_PARTS_MAX; n++) {
        uint64_t size = s3_writer_part_size(S3_PART_MIN, n);
        assert_true(size >= S3_PART_MIN && size <= S3_PART_MAX);
        total += size;
    }
    assert_true(total > 1024 * 1024 * MIB); /* more than 1 TiB */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_part_sizes),
        cmocka_unit_test(test_capacity),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
