/*
 * test_crc32c.c - covers src/util/crc32c.c: the RFC 3720 check values, and the
 * CPU's three-stream path against a bitwise reference at every length up to
 * 4 KiB, every alignment, the block boundaries of the three-stream loops and
 * large random buffers; joining CRCs of parts. Under ASan, a read past the
 * buffer is still caught although the loop itself is not instrumented.
 *
 * Built for another CPU (tests/crc32c_cross.sh: aarch64 under qemu-user) the
 * same tests prove that CPU's path.
 */
#include "helpers.h"

#include "util/crc32c.h"

#define CRC32C_POLY_REFLECTED 0x82F63B78u
#define MAX_SHORT_LEN         4096
#define MAX_ALIGN             64
#define LARGE_LEN             (3 * 1024 * 1024 + 12345)

uint32_t crc32c_software(const void *data, size_t len);

/* One bit at a time, straight from the definition: the reference nothing else shares code with. */
static uint32_t crc32c_bitwise(const unsigned char *p, size_t len)
{
    uint32_t crc = 0xFFFFFFFFu;

    while (len-- > 0) {
        crc ^= *p++;
        for (int k = 0; k < 8; k++)
            crc = (crc & 1) ? (crc >> 1) ^ CRC32C_POLY_REFLECTED : crc >> 1;
    }
    return crc ^ 0xFFFFFFFFu;
}

/* xorshift: reproducible "random" bytes, no correlation with the block sizes */
static void fill_random(unsigned char *p, size_t len, uint64_t seed)
{
    uint64_t x = seed * 0x9E3779B97F4A7C15ull + 1;

    for (size_t i = 0; i < len; i++) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        p[i] = (unsigned char)(x >> 24);
    }
}

static void test_rfc3720_vectors(void **state)
{
    unsigned char zeros[32] = {0}, ones[32], inc[32], dec[32];

    (void)state;
    memset(ones, 0xFF, sizeof(ones));
    for (int i = 0; i < 32; i++) {
        inc[i] = (unsigned char)i;
        dec[i] = (unsigned char)(31 - i);
    }
    assert_int_equal(crc32c(zeros, 32), 0x8A9136AA);
    assert_int_equal(crc32c(ones, 32), 0x62A8AB43);
    assert_int_equal(crc32c(inc, 32), 0x46DD794E);
    assert_int_equal(crc32c(dec, 32), 0x113FDB5C);
    assert_int_equal(crc32c("123456789", 9), 0xE3069283);
    assert_int_equal(crc32c("", 0), 0);
    assert_int_equal(crc32c_bitwise((const unsigned char *)"123456789", 9), 0xE3069283);
}

static void test_implementation_is_named(void **state)
{
    const char *impl = crc32c_implementation();

    (void)state;
    assert_true(strcmp(impl, "sse4.2") == 0 || strcmp(impl, "armv8-crc") == 0 ||
                strcmp(impl, "software") == 0);
#if defined(__x86_64__)
    __builtin_cpu_init();
    if (__builtin_cpu_supports("sse4.2"))
        assert_string_equal(impl, "sse4.2");
#endif
    print_message("crc32c implementation: %s\n", impl);
}

/* Every length 0..4096 at every alignment 0..63: the CPU's path and the table path agree with bits.
 */
static void test_every_short_length_and_alignment(void **state)
{
    unsigned char *buf = malloc(MAX_SHORT_LEN + MAX_ALIGN);

    (void)state;
    fill_random(buf, MAX_SHORT_LEN + MAX_ALIGN, 1);
    for (size_t align = 0; align < MAX_ALIGN; align++) {
        /* the bitwise reference of every prefix, built up one byte at a time */
        uint32_t raw = 0xFFFFFFFFu;
        for (size_t len = 0; len <= MAX_SHORT_LEN; len++) {
            uint32_t want = raw ^ 0xFFFFFFFFu;
            if (crc32c(buf + align, len) != want || crc32c_software(buf + align, len) != want)
                fail_msg("length %zu at alignment %zu: %08x / %08x, want %08x", len, align,
                         crc32c(buf + align, len), crc32c_software(buf + align, len), want);
            raw ^= buf[align + len];
            for (int k = 0; k < 8; k++)
                raw = (raw & 1) ? (raw >> 1) ^ CRC32C_POLY_REFLECTED : raw >> 1;
        }
    }
    free(buf);
}

/* Lengths on each side of the three-stream block sizes (3 x 256, 3 x 8192) and their multiples. */
static void test_block_boundaries(void **state)
{
    static const size_t centres[] = {768, 1536, 24576, 49152, 73728, 24576 + 768, 98304 + 1536};
    size_t maxlen = 98304 + 1536 + 70 + 16;
    unsigned char *buf = malloc(maxlen);

    (void)state;
    fill_random(buf, maxlen, 2);
    for (size_t c = 0; c < sizeof(centres) / sizeof(centres[0]); c++)
        for (size_t len = centres[c] - 9; len <= centres[c] + 9; len++)
            for (size_t align = 0; align < 16; align += 3)
                assert_int_equal(crc32c(buf + align, len), crc32c_bitwise(buf + align, len));
    free(buf);
}

static void test_large_random_buffers(void **state)
{
    unsigned char *buf = malloc(LARGE_LEN);

    (void)state;
    for (uint64_t seed = 3; seed < 6; seed++) {
        fill_random(buf, LARGE_LEN, seed);
        size_t off = (size_t)seed; /* unaligned, too */
        uint32_t want = crc32c_bitwise(buf + off, LARGE_LEN - off);
        assert_int_equal(crc32c(buf + off, LARGE_LEN - off), want);
        assert_int_equal(crc32c_software(buf + off, LARGE_LEN - off), want);
    }
    /* all zeros and all ones: no stream may cancel another out */
    memset(buf, 0, LARGE_LEN);
    assert_int_equal(crc32c(buf, LARGE_LEN), crc32c_bitwise(buf, LARGE_LEN));
    memset(buf, 0xFF, LARGE_LEN);
    assert_int_equal(crc32c(buf, LARGE_LEN), crc32c_bitwise(buf, LARGE_LEN));
    free(buf);
}

/* Running CRCs fed in pieces of every awkward size equal the one-shot CRC. */
static void test_incremental_equals_one_shot(void **state)
{
    static const size_t pieces[] = {1, 7, 255, 769, 8191, 24577, 100000};
    unsigned char *buf = malloc(LARGE_LEN);
    uint32_t want;

    (void)state;
    fill_random(buf, LARGE_LEN, 7);
    want = crc32c(buf, LARGE_LEN);
    for (size_t k = 0; k < sizeof(pieces) / sizeof(pieces[0]); k++) {
        uint32_t crc = CRC32C_INIT;
        for (size_t off = 0; off < LARGE_LEN; off += pieces[k])
            crc = crc32c_update(crc, buf + off,
                                off + pieces[k] > LARGE_LEN ? LARGE_LEN - off : pieces[k]);
        assert_int_equal(crc32c_final(crc), want);
    }
    free(buf);
}

/* crc32c(A || B) from crc32c(A), crc32c(B) and |B|, for lengths from 0 to megabytes. */
static void test_combination_of_streams(void **state)
{
    static const size_t cuts[] = {0, 1, 3, 8, 255, 256, 4096, 8192, 24576, 1000003, LARGE_LEN};
    unsigned char *buf = malloc(LARGE_LEN);
    uint32_t whole;

    (void)state;
    fill_random(buf, LARGE_LEN, 11);
    whole = crc32c(buf, LARGE_LEN);
    for (size_t k = 0; k < sizeof(cuts) / sizeof(cuts[0]); k++) {
        size_t a = cuts[k], b = LARGE_LEN - a;
        assert_int_equal(crc32c_combine(crc32c(buf, a), crc32c(buf + a, b), b), whole);
    }
    /* three parts joined left to right */
    assert_int_equal(crc32c_combine(crc32c_combine(crc32c(buf, 100), crc32c(buf + 100, 5000), 5000),
                                    crc32c(buf + 5100, LARGE_LEN - 5100), LARGE_LEN - 5100),
                     whole);
    /* an empty B leaves A's CRC as it is */
    assert_int_equal(crc32c_combine(0x12345678u, crc32c("", 0), 0), 0x12345678u);
    free(buf);
}

#if defined(__SANITIZE_ADDRESS__)
/* A heap buffer of 100 bytes whose CRC is taken over `len` of them. */
static void crc_of_heap_buffer(size_t len)
{
    unsigned char *buf = malloc(100);

    assert_non_null(buf);
    memset(buf, 7, 100);
    (void)crc32c(buf, len);
    free(buf);
}

#endif

static void test_a_read_past_the_buffer_is_caught(void **state)
{
    (void)state;
#if defined(__SANITIZE_ADDRESS__)
    assert_true(child_exits_zero(crc_of_heap_buffer, 100));   /* the control */
    assert_false(child_exits_zero(crc_of_heap_buffer, 101));  /* one byte past */
    assert_false(child_exits_zero(crc_of_heap_buffer, 4096)); /* far past */
#else
    skip(); /* only a sanitizer build can see it */
#endif
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rfc3720_vectors),
        cmocka_unit_test(test_implementation_is_named),
        cmocka_unit_test(test_every_short_length_and_alignment),
        cmocka_unit_test(test_block_boundaries),
        cmocka_unit_test(test_large_random_buffers),
        cmocka_unit_test(test_incremental_equals_one_shot),
        cmocka_unit_test(test_combination_of_streams),
        cmocka_unit_test(test_a_read_past_the_buffer_is_caught),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
