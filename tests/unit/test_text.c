/* test_text.c - covers src/util/text.c: bounded formatting and the growable text buffer. */
#include "helpers.h"

#include "util/text.h"

static void test_str_format_reports_a_cut(void **state)
{
    char out[8];

    (void)state;
    assert_true(str_format(out, sizeof(out), "%s", "1234567"));
    assert_false(str_format(out, sizeof(out), "%s", "12345678"));
    assert_string_equal(out, "1234567");
}

static void test_text_buf_grows_and_hands_over_its_text(void **state)
{
    text_buf b = {0};
    char *text;

    (void)state;
    for (int i = 0; i < 1000; i++)
        text_buf_printf(&b, "%d,", i);
    text_buf_append(&b, "end");
    text = text_buf_take(&b);
    assert_non_null(text);
    assert_int_equal(strncmp(text, "0,1,2,", 6), 0);
    assert_non_null(strstr(text, ",999,end"));
    assert_null(b.data); /* taken: the buffer is empty again */
    free(text);
}

static void test_an_empty_text_buf_gives_an_empty_string(void **state)
{
    text_buf b = {0};
    char *text;

    (void)state;
    text = text_buf_take(&b);
    assert_non_null(text);
    assert_string_equal(text, "");
    free(text);
}

static void test_a_failed_text_buf_gives_nothing(void **state)
{
    text_buf b = {0};

    (void)state;
    text_buf_append(&b, "kept");
    b.failed = true; /* as after a format that failed */
    text_buf_append(&b, "ignored");
    assert_null(text_buf_take(&b));
    assert_null(b.data);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_str_format_reports_a_cut),
        cmocka_unit_test(test_text_buf_grows_and_hands_over_its_text),
        cmocka_unit_test(test_an_empty_text_buf_gives_an_empty_string),
        cmocka_unit_test(test_a_failed_text_buf_gives_nothing),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
