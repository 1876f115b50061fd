/* test_crc32c.c - covers src/util/crc32c.c against the RFC 3720 check values. */
#include "helpers.h"

#include "util/crc32c.h"

uint32_t crc32c_software(const void *data, size_t len);

static void test_rfc3720_vectors(void **state)
{
    unsigned char zeros[32] = {0}, ones[32], inc[32];

    (void)state;
    memset(ones, 0xFF, sizeof(ones));
    for (int i = 0; i < 32; i++)
        inc[i] = (unsigned char)i;
    assert_int_equal(crc32c(zeros, 32), 0x8A9136AA);
    assert_int_equal(crc32c(ones, 32), 0x62A8AB43);
    assert_int_equal(crc32c(inc, 32), 0x46DD794E);
    assert_int_equal(crc32c("123456789", 9), 0xE3069283);
    assert_int_equal(crc32c("", 0), 0);
}

static void test_software_matches_hardware(void **state)
{
    static unsigned char buf[100003];

    (void)state;
    fill_pattern(buf, sizeof(buf), 7);
    for (size_t len = 0; len < 64; len++)
        assert_int_equal(crc32c(buf + 1, len), crc32c_software(buf + 1, len));
    assert_int_equal(crc32c(buf, sizeof(buf)), crc32c_software(buf, sizeof(buf)));
}

static void test_incremental_equals_one_shot(void **state)
{
    static unsigned char buf[65536];
    uint32_t crc = CRC32C_INIT;

    (void)state;
    fill_pattern(buf, sizeof(buf), 3);
    for (size_t off = 0; off < sizeof(buf); off += 1000)
        crc = crc32c_update(crc, buf + off, off + 1000 > sizeof(buf) ? sizeof(buf) - off : 1000);
    assert_int_equal(crc32c_final(crc), crc32c(buf, sizeof(buf)));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rfc3720_vectors),
        cmocka_unit_test(test_software_matches_hardware),
        cmocka_unit_test(test_incremental_equals_one_shot),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
