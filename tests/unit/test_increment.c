/*
 * test_increment.c - covers src/repo/increment.c: a round trip in every
 * chunking, and each way the decoder must refuse an increment (bad magic,
 * page size, unsorted or out-of-range blocks, header and pages CRC, a
 * size that disagrees with the manifest, truncation, trailing bytes).
 */
#include "helpers.h"

#include "repo/increment.h"
#include "util/crc32c.h"

#define TEST_FILE_SIZE (10 * INCREMENT_PAGE_SIZE + 100) /* 11 pages, the last partial */
#define TEST_LSN       0x0000000100002000ull

typedef struct collected {
    uint32_t n;
    uint32_t block[16];
    unsigned char first_byte[16];
} collected;

static bool collect_page(void *arg, uint32_t block, const unsigned char *page, pgd_error *err)
{
    collected *c = arg;

    (void)err;
    c->block[c->n] = block;
    c->first_byte[c->n] = page[0];
    assert_int_equal(page[INCREMENT_PAGE_SIZE - 1], page[0]);
    c->n++;
    return true;
}

/* An increment of the given blocks, page i filled with byte 'a'+i; malloc'd, *len its size. */
static unsigned char *build(const uint32_t *blocks, uint32_t n, size_t *len)
{
    uint64_t size = increment_size(n), hdr = increment_header_size(n);
    unsigned char *buf = malloc(size);
    pgd_error err = {0};
    uint32_t crc = CRC32C_INIT;

    assert_true(increment_encode_header(buf, TEST_FILE_SIZE, TEST_LSN, blocks, n, &err));
    for (uint32_t i = 0; i < n; i++) {
        memset(buf + hdr + (uint64_t)i * INCREMENT_PAGE_SIZE, 'a' + (int)i, INCREMENT_PAGE_SIZE);
        crc =
            crc32c_update(crc, buf + hdr + (uint64_t)i * INCREMENT_PAGE_SIZE, INCREMENT_PAGE_SIZE);
    }
    increment_encode_trailer(buf + size - INCREMENT_CRC_SIZE, crc32c_final(crc));
    *len = size;
    return buf;
}

/* Decode buf in chunks of `chunk` bytes; returns whether it was accepted, err filled. */
static bool decode(const unsigned char *buf, size_t len, size_t chunk, bool check, uint64_t esize,
                   uint64_t efile, uint32_t eblocks, collected *c, pgd_error *err)
{
    increment_reader r;
    bool ok = true;

    memset(c, 0, sizeof(*c));
    increment_reader_init(&r, "base/5/16384", check, esize, efile, eblocks);
    for (size_t off = 0; ok && off < len; off += chunk)
        ok = increment_reader_feed(&r, buf + off, off + chunk < len ? chunk : len - off,
                                   collect_page, c, err);
    if (ok)
        ok = increment_reader_finish(&r, err);
    increment_reader_free(&r);
    return ok;
}

static void test_sizes(void **state)
{
    (void)state;
    assert_int_equal(increment_header_size(0), 36);
    assert_int_equal(increment_size(0), 40);
    assert_int_equal(increment_size(3), 40 + 12 + 3 * 8192);
    assert_int_equal(increment_file_pages(0), 0);
    assert_int_equal(increment_file_pages(1), 1);
    assert_int_equal(increment_file_pages(8192), 1);
    assert_int_equal(increment_file_pages(8193), 2);
}

static void test_round_trip_any_chunking(void **state)
{
    uint32_t blocks[] = {0, 3, 4, 10};
    size_t len, chunks[] = {1, 3, 7, 4096, 8192, 100000};
    unsigned char *buf = build(blocks, 4, &len);
    collected c;
    pgd_error err = {0};

    (void)state;
    assert_memory_equal(buf, "PGDINC1", 8);
    for (size_t k = 0; k < sizeof(chunks) / sizeof(chunks[0]); k++) {
        assert_true(decode(buf, len, chunks[k], true, len, TEST_FILE_SIZE, 4, &c, &err));
        assert_int_equal(c.n, 4);
        for (uint32_t i = 0; i < 4; i++) {
            assert_int_equal(c.block[i], blocks[i]);
            assert_int_equal(c.first_byte[i], 'a' + i);
        }
    }
    free(buf);
}

static void test_empty_increment(void **state)
{
    size_t len;
    unsigned char *buf = build(NULL, 0, &len);
    collected c;
    pgd_error err = {0};

    (void)state;
    assert_int_equal(len, 40);
    assert_true(decode(buf, len, 5, true, 40, TEST_FILE_SIZE, 0, &c, &err));
    assert_int_equal(c.n, 0);
    free(buf);
}

static void expect_refused(unsigned char *buf, size_t len, const char *needle)
{
    collected c;
    pgd_error err = {0};

    assert_false(decode(buf, len, 1000, false, 0, 0, 0, &c, &err));
    assert_non_null(strstr(err.msg, "base/5/16384"));
    if (strstr(err.msg, needle) == NULL)
        fail_msg("expected \"%s\" in \"%s\"", needle, err.msg);
}

static void test_bad_magic(void **state)
{
    uint32_t blocks[] = {1};
    size_t len;
    unsigned char *buf = build(blocks, 1, &len);

    (void)state;
    buf[2] ^= 1;
    expect_refused(buf, len, "bad magic");
    free(buf);
}

static void test_bad_page_size(void **state)
{
    uint32_t blocks[] = {1};
    size_t len;
    unsigned char *buf = build(blocks, 1, &len);

    (void)state;
    buf[9] = 0x10; /* 4096 + ... */
    expect_refused(buf, len, "page size");
    free(buf);
}

/* Rewrite block entry i and recompute the header CRC, so only the order/range check can catch it.
 */
static void set_block(unsigned char *buf, uint32_t nblocks, uint32_t i, uint32_t v)
{
    unsigned char *p = buf + INCREMENT_FIXED_SIZE + 4 * i;
    uint32_t crc;

    p[0] = (unsigned char)v;
    p[1] = (unsigned char)(v >> 8);
    p[2] = (unsigned char)(v >> 16);
    p[3] = (unsigned char)(v >> 24);
    crc = crc32c(buf, INCREMENT_FIXED_SIZE + 4 * nblocks);
    p = buf + INCREMENT_FIXED_SIZE + 4 * nblocks;
    for (int k = 0; k < 4; k++)
        p[k] = (unsigned char)(crc >> (8 * k));
}

static void test_unsorted_blocks(void **state)
{
    uint32_t blocks[] = {2, 5};
    size_t len;
    unsigned char *buf = build(blocks, 2, &len);

    (void)state;
    set_block(buf, 2, 1, 2); /* a duplicate is as wrong as a descent */
    expect_refused(buf, len, "not ascending");
    free(buf);
}

static void test_block_out_of_range(void **state)
{
    uint32_t blocks[] = {2, 5};
    size_t len;
    unsigned char *buf = build(blocks, 2, &len);

    (void)state;
    set_block(buf, 2, 1, 11); /* 11 pages: 0..10 */
    expect_refused(buf, len, "past the end");
    free(buf);
}

static void test_encoder_refuses_bad_blocks(void **state)
{
    uint32_t unsorted[] = {3, 1}, far[] = {11};
    unsigned char buf[64];
    pgd_error err = {0};

    (void)state;
    assert_false(increment_encode_header(buf, TEST_FILE_SIZE, 0, unsorted, 2, &err));
    err_clear(&err);
    assert_false(increment_encode_header(buf, TEST_FILE_SIZE, 0, far, 1, &err));
}

static void test_header_crc(void **state)
{
    uint32_t blocks[] = {1};
    size_t len;
    unsigned char *buf = build(blocks, 1, &len);

    (void)state;
    buf[24] ^= 0x40; /* the threshold LSN: nothing but the CRC covers it */
    expect_refused(buf, len, "header checksum");
    free(buf);
}

static void test_pages_crc(void **state)
{
    uint32_t blocks[] = {1, 2};
    size_t len;
    unsigned char *buf = build(blocks, 2, &len);

    (void)state;
    buf[increment_header_size(2) + INCREMENT_PAGE_SIZE + 17] ^= 1;
    expect_refused(buf, len, "pages checksum");
    free(buf);
}

static void test_truncated_and_trailing(void **state)
{
    uint32_t blocks[] = {1};
    size_t len;
    unsigned char *buf = build(blocks, 1, &len), *longer;

    (void)state;
    expect_refused(buf, len - 1, "truncated");
    expect_refused(buf, 20, "truncated");
    longer = malloc(len + 1);
    memcpy(longer, buf, len);
    longer[len] = 0;
    expect_refused(longer, len + 1, "after its end");
    free(longer);
    free(buf);
}

/*
 * A header may claim 2^32 - 1 blocks (found by fuzz_increment): room for the
 * block numbers grows as they arrive, so a truncated one costs what was read.
 */
static void test_huge_block_count_truncated(void **state)
{
    unsigned char buf[INCREMENT_FIXED_SIZE + 8] = INCREMENT_MAGIC;
    uint64_t file_size = (uint64_t)UINT32_MAX * INCREMENT_PAGE_SIZE;
    increment_reader r;
    pgd_error err = {0};

    (void)state;
    buf[9] = INCREMENT_PAGE_SIZE >> 8;
    buf[12] = buf[13] = buf[14] = buf[15] = 0xff;
    for (int i = 0; i < 8; i++)
        buf[16 + i] = (unsigned char)(file_size >> (8 * i));
    buf[INCREMENT_FIXED_SIZE + 4] = 1; /* blocks 0 and 1 */
    increment_reader_init(&r, "base/5/16384", false, 0, 0, 0);
    assert_true(increment_reader_feed(&r, buf, sizeof(buf), NULL, NULL, &err));
    assert_int_equal(r.nblocks, UINT32_MAX);
    assert_true(r.block_cap <= 2);
    assert_false(increment_reader_finish(&r, &err));
    assert_non_null(strstr(err.msg, "truncated at 40 bytes"));
    increment_reader_free(&r);
}

static void test_disagrees_with_manifest(void **state)
{
    uint32_t blocks[] = {1, 2};
    size_t len;
    unsigned char *buf = build(blocks, 2, &len);
    collected c;
    pgd_error err = {0};

    (void)state;
    assert_false(decode(buf, len, 4096, true, len, TEST_FILE_SIZE, 3, &c, &err));
    assert_non_null(strstr(err.msg, "manifest says"));
    err_clear(&err);
    assert_false(decode(buf, len, 4096, true, len, TEST_FILE_SIZE + 1, 2, &c, &err));
    assert_non_null(strstr(err.msg, "manifest says"));
    err_clear(&err);
    assert_false(decode(buf, len, 4096, true, len + 8192, TEST_FILE_SIZE, 2, &c, &err));
    assert_non_null(strstr(err.msg, "manifest says"));
    free(buf);
}

/* The file an increment's tar entry belongs to; other entries are not increments. */
static void test_file_path(void **state)
{
    char out[64];

    (void)state;
    assert_true(increment_file_path("base/5/INCREMENTAL.16384.1", out, sizeof(out)));
    assert_string_equal(out, "base/5/16384.1");
    assert_true(increment_file_path("INCREMENTAL.x", out, sizeof(out)));
    assert_string_equal(out, "x");
    assert_false(increment_file_path("base/5/16384", out, sizeof(out)));
    assert_false(increment_file_path("base/5/INCREMENTAL.", out, sizeof(out)));
    assert_false(increment_file_path("INCREMENTAL.dir/16384", out, sizeof(out)));
    /* no increment of "." or ".." (found by fuzz_names) */
    assert_false(increment_file_path("base/INCREMENTAL..", out, sizeof(out)));
    assert_false(increment_file_path("INCREMENTAL...", out, sizeof(out)));
    assert_false(increment_file_path("base/5/INCREMENTAL.16384", out, 10)); /* would not fit */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sizes),
        cmocka_unit_test(test_round_trip_any_chunking),
        cmocka_unit_test(test_empty_increment),
        cmocka_unit_test(test_bad_magic),
        cmocka_unit_test(test_bad_page_size),
        cmocka_unit_test(test_unsorted_blocks),
        cmocka_unit_test(test_block_out_of_range),
        cmocka_unit_test(test_encoder_refuses_bad_blocks),
        cmocka_unit_test(test_header_crc),
        cmocka_unit_test(test_pages_crc),
        cmocka_unit_test(test_truncated_and_trailing),
        cmocka_unit_test(test_huge_block_count_truncated),
        cmocka_unit_test(test_disagrees_with_manifest),
        cmocka_unit_test(test_file_path),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
