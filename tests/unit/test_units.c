/* test_units.c - covers src/util/units.c: sizes and durations, printed and parsed. */
#include "helpers.h"

#include "util/units.h"

static void test_bytes_are_printed_in_binary_units(void **state)
{
    char out[32];

    (void)state;
    units_format_bytes(15, out, sizeof(out));
    assert_string_equal(out, "15 B");
    units_format_bytes(12 * 1024, out, sizeof(out));
    assert_string_equal(out, "12 KiB");
    units_format_bytes(1536ULL * 1024 * 1024, out, sizeof(out));
    assert_string_equal(out, "1.5 GiB");
    units_format_bytes(734ULL * 1024 * 1024, out, sizeof(out));
    assert_string_equal(out, "734 MiB");
    units_format_bytes(UINT64_MAX, out, sizeof(out));
    assert_string_equal(out, "16384 PiB");
}

static void test_durations_are_printed_by_their_size(void **state)
{
    char out[32];

    (void)state;
    units_format_duration(12.44, out, sizeof(out));
    assert_string_equal(out, "12.4s");
    units_format_duration(0.06, out, sizeof(out));
    assert_string_equal(out, "0.06s");
    units_format_duration(0.12, out, sizeof(out));
    assert_string_equal(out, "0.1s");
    units_format_duration(187, out, sizeof(out));
    assert_string_equal(out, "3m07s");
    units_format_duration(3725, out, sizeof(out));
    assert_string_equal(out, "1h02m");
}

static void test_sizes_are_parsed_strictly(void **state)
{
    uint64_t v;

    (void)state;
    assert_true(units_parse_size("4096", &v));
    assert_int_equal(v, 4096);
    assert_true(units_parse_size("64MiB", &v));
    assert_int_equal(v, 64ULL << 20);
    assert_true(units_parse_size("2G", &v));
    assert_int_equal(v, 2ULL << 30);
    assert_true(units_parse_size("1TB", &v));
    assert_int_equal(v, 1ULL << 40);
    assert_false(units_parse_size("", &v));
    assert_false(units_parse_size(NULL, &v));
    assert_false(units_parse_size("-1", &v));
    assert_false(units_parse_size(" 1", &v));
    assert_false(units_parse_size("12XB", &v));
    assert_false(units_parse_size("99999999999999999999", &v));
    assert_false(units_parse_size("17179869184TiB", &v)); /* overflows 64 bits */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_bytes_are_printed_in_binary_units),
        cmocka_unit_test(test_durations_are_printed_by_their_size),
        cmocka_unit_test(test_sizes_are_parsed_strictly),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
