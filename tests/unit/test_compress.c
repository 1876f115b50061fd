/* test_compress.c - covers src/compress/: round trips, corruption and truncation. */
#include "helpers.h"

#include "compress/compress.h"

#define DATA_LEN (3 * 1024 * 1024 + 77)

static unsigned char *make_data(void)
{
    unsigned char *d = malloc(DATA_LEN);
    /* half random, half compressible */
    fill_pattern(d, DATA_LEN / 2, 9);
    for (size_t i = DATA_LEN / 2; i < DATA_LEN; i++)
        d[i] = (unsigned char)(i % 7);
    return d;
}

static void compress_all(compress_kind kind, const unsigned char *data, size_t len, mem_out *m)
{
    pgd_error err = {0};
    out_stream *out;

    mem_out_init(m);
    out = compress_out_new(kind, COMPRESS_LEVEL_DEFAULT, &m->base, "obj", &err);
    assert_non_null(out);
    /* odd write sizes */
    for (size_t off = 0; off < len;) {
        size_t n = off % 3 == 0 ? 100000 : 777;
        if (n > len - off)
            n = len - off;
        assert_true(out_write(out, data + off, n, &err));
        off += n;
    }
    assert_true(out_close(out, &err));
    assert_true(m->closed);
}

/* Decompress with a small read buffer; returns false and fills err on failure. */
static bool decompress_all(compress_kind kind, const char *src, size_t len, unsigned char *out,
                           size_t *outlen, pgd_error *err)
{
    in_stream *in = decompress_in_new(kind, mem_in_new(src, len, err), "obj.lz4", err);
    size_t total = 0, n;
    bool ok = true;

    assert_non_null(in);
    for (;;) {
        if (!in_read(in, out + total, 4000, &n, err)) {
            ok = false;
            break;
        }
        if (n == 0)
            break;
        total += n;
        assert_true(total <= DATA_LEN);
    }
    in_close(in);
    *outlen = total;
    return ok;
}

static void round_trip(compress_kind kind)
{
    unsigned char *data = make_data(), *back = malloc(DATA_LEN + 4000);
    pgd_error err = {0};
    mem_out m;
    size_t n;

    compress_all(kind, data, DATA_LEN, &m);
    if (kind != COMPRESS_NONE)
        assert_true(m.len < DATA_LEN);
    assert_true(decompress_all(kind, m.data, m.len, back, &n, &err));
    assert_int_equal(n, DATA_LEN);
    assert_memory_equal(back, data, DATA_LEN);
    mem_out_free(&m);
    free(data);
    free(back);
}

static void test_round_trips(void **state)
{
    (void)state;
    round_trip(COMPRESS_NONE);
    round_trip(COMPRESS_LZ4);
    round_trip(COMPRESS_ZSTD);
}

static void test_empty_stream_round_trips(void **state)
{
    compress_kind kinds[] = {COMPRESS_LZ4, COMPRESS_ZSTD};
    (void)state;
    for (int k = 0; k < 2; k++) {
        pgd_error err = {0};
        unsigned char back[16];
        mem_out m;
        size_t n;
        compress_all(kinds[k], (const unsigned char *)"", 0, &m);
        assert_true(m.len > 0); /* a frame header at least */
        assert_true(decompress_all(kinds[k], m.data, m.len, back, &n, &err));
        assert_int_equal(n, 0);
        mem_out_free(&m);
    }
}

static void corrupt_and_truncate(compress_kind kind)
{
    unsigned char *data = make_data(), *back = malloc(DATA_LEN + 4000);
    pgd_error err = {0};
    mem_out m;
    size_t n;

    compress_all(kind, data, DATA_LEN, &m);
    m.data[m.len / 2] ^= 0x01;
    assert_false(decompress_all(kind, m.data, m.len, back, &n, &err));
    assert_non_null(strstr(err.msg, "obj.lz4"));
    m.data[m.len / 2] ^= 0x01;
    err_clear(&err);
    assert_false(decompress_all(kind, m.data, m.len - 10, back, &n, &err));
    assert_non_null(strstr(err.msg, "obj.lz4"));
    err_clear(&err);
    assert_false(decompress_all(kind, m.data, 0, back, &n, &err));
    mem_out_free(&m);
    free(data);
    free(back);
}

static void test_corruption_and_truncation_are_detected(void **state)
{
    (void)state;
    corrupt_and_truncate(COMPRESS_LZ4);
    corrupt_and_truncate(COMPRESS_ZSTD);
}

static void test_names_suffixes_levels(void **state)
{
    compress_kind k;
    pgd_error err = {0};

    (void)state;
    assert_true(compress_parse("zstd", &k));
    assert_int_equal(k, COMPRESS_ZSTD);
    assert_false(compress_parse("gzip", &k));
    assert_int_equal(compress_from_suffix("part_0001.tar.lz4"), COMPRESS_LZ4);
    assert_int_equal(compress_from_suffix("part_0001.tar.zst"), COMPRESS_ZSTD);
    assert_int_equal(compress_from_suffix("part_0001.tar"), COMPRESS_NONE);
    assert_true(compress_level_valid(COMPRESS_ZSTD, 19, &err));
    assert_false(compress_level_valid(COMPRESS_LZ4, 13, &err));
    assert_non_null(strstr(err.msg, "--compression-level"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_round_trips),
        cmocka_unit_test(test_empty_stream_round_trips),
        cmocka_unit_test(test_corruption_and_truncation_are_detected),
        cmocka_unit_test(test_names_suffixes_levels),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
