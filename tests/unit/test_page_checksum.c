/*
 * test_page_checksum.c - covers src/pg/page_checksum.c against pages whose
 * checksums PostgreSQL wrote (tests/data/pages/README: how they were made),
 * including pages of a relation's second 1 GiB segment. Under ASan, a page
 * shorter than 8 KiB is caught although the loop itself is not instrumented.
 */
#include "helpers.h"

#include <stdlib.h>

#include "pg/page_checksum.h"

#define PAGES_MAX 4

/* The pages of fixture file `name`; returns how many. */
static size_t load_pages(const char *name, unsigned char pages[PAGES_MAX][PG_PAGE_SIZE])
{
    const char *dir = getenv("PGD_TEST_PAGES");
    char path[512];
    FILE *f;
    size_t n;

    assert_non_null(dir);
    snprintf(path, sizeof(path), "%s/%s", dir, name);
    f = fopen(path, "rb");
    assert_non_null(f);
    n = fread(pages, PG_PAGE_SIZE, PAGES_MAX, f);
    fclose(f);
    assert_true(n > 0);
    return n;
}

static void assert_pages_verify(const char *name, uint32_t segment)
{
    unsigned char pages[PAGES_MAX][PG_PAGE_SIZE];
    size_t n = load_pages(name, pages);

    for (size_t b = 0; b < n; b++) {
        uint32_t blkno = page_checksum_block(segment, b * PG_PAGE_SIZE);
        assert_false(page_checksum_is_zero(pages[b]));
        assert_int_equal(page_checksum_compute(pages[b], blkno), page_checksum_stored(pages[b]));
    }
}

static void test_heap_pages_of_the_first_segment_verify(void **state)
{
    (void)state;
    assert_pages_verify("heap_seg0", 0);
}

static void test_index_pages_verify(void **state)
{
    (void)state;
    assert_pages_verify("index_seg0", 0);
}

static void test_second_segment_uses_the_absolute_block_number(void **state)
{
    unsigned char pages[PAGES_MAX][PG_PAGE_SIZE];

    (void)state;
    assert_pages_verify("heap_seg1", 1);
    load_pages("heap_seg1", pages);
    /* the block number within the file is not the one PostgreSQL used */
    assert_int_not_equal(page_checksum_compute(pages[0], 0), page_checksum_stored(pages[0]));
    assert_int_equal(page_checksum_block(1, 2 * PG_PAGE_SIZE), 131074);
}

static void test_same_page_in_another_block_fails(void **state)
{
    unsigned char seg0[PAGES_MAX][PG_PAGE_SIZE], seg1[PAGES_MAX][PG_PAGE_SIZE];

    (void)state;
    load_pages("heap_seg0", seg0);
    load_pages("heap_seg1", seg1);
    /* identical contents but for the checksum, which differs by block */
    assert_memory_equal(seg0[1] + 10, seg1[1] + 10, PG_PAGE_SIZE - 10);
    assert_int_not_equal(page_checksum_stored(seg0[1]), page_checksum_stored(seg1[1]));
    assert_int_not_equal(page_checksum_compute(seg0[1], 131073), page_checksum_stored(seg0[1]));
}

/* pg_checksums --check on the same page: "calculated checksum 31A but block contains F935". */
static void test_corrupt_page_agrees_with_pg_checksums(void **state)
{
    unsigned char pages[PAGES_MAX][PG_PAGE_SIZE];

    (void)state;
    load_pages("heap_seg1_corrupt", pages);
    assert_int_equal(page_checksum_stored(pages[2]), 0xF935);
    assert_int_equal(page_checksum_compute(pages[2], page_checksum_block(1, 2 * PG_PAGE_SIZE)),
                     0x031A);
}

static void test_computing_leaves_the_page_alone(void **state)
{
    unsigned char pages[PAGES_MAX][PG_PAGE_SIZE], copy[PG_PAGE_SIZE];

    (void)state;
    load_pages("heap_seg0", pages);
    memcpy(copy, pages[0], sizeof(copy));
    (void)page_checksum_compute(pages[0], 0);
    assert_memory_equal(copy, pages[0], sizeof(copy));
}

static void test_zero_page_and_header_fields(void **state)
{
    unsigned char page[PG_PAGE_SIZE] = {0};
    unsigned char pages[PAGES_MAX][PG_PAGE_SIZE];

    (void)state;
    assert_true(page_checksum_is_zero(page));
    page[PG_PAGE_SIZE - 1] = 1; /* pd_upper 0 but not empty: not a new page */
    assert_false(page_checksum_is_zero(page));
    load_pages("heap_seg0", pages);
    assert_true(page_checksum_lsn(pages[0]) > 0);
    /* pd_lsn: high half first, then low half */
    memset(page, 0, sizeof(page));
    page[0] = 0x01; /* xlogid 1 (little-endian machine words) */
    page[4] = 0x28;
    assert_true(page_checksum_lsn(page) == ((uint64_t)1 << 32 | 0x28));
}

#if defined(__SANITIZE_ADDRESS__)
/* The checksum of a heap buffer of `len` bytes taken as a page. */
static void checksum_of_heap_buffer(size_t len)
{
    unsigned char *buf = calloc(1, len);

    assert_non_null(buf);
    (void)page_checksum_compute(buf, 0);
    free(buf);
}

#endif

static void test_a_short_page_is_caught(void **state)
{
    (void)state;
#if defined(__SANITIZE_ADDRESS__)
    assert_true(child_exits_zero(checksum_of_heap_buffer, PG_PAGE_SIZE)); /* the control */
    assert_false(child_exits_zero(checksum_of_heap_buffer, PG_PAGE_SIZE - 1));
#else
    skip(); /* only a sanitizer build can see it */
#endif
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_heap_pages_of_the_first_segment_verify),
        cmocka_unit_test(test_index_pages_verify),
        cmocka_unit_test(test_second_segment_uses_the_absolute_block_number),
        cmocka_unit_test(test_same_page_in_another_block_fails),
        cmocka_unit_test(test_corrupt_page_agrees_with_pg_checksums),
        cmocka_unit_test(test_computing_leaves_the_page_alone),
        cmocka_unit_test(test_zero_page_and_header_fields),
        cmocka_unit_test(test_a_short_page_is_caught),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
